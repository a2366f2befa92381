package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	pcluster "github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/cluster/clusterproviders/automanaged"
	"github.com/asynkron/protoactor-go/cluster/clusterproviders/test"
	"github.com/asynkron/protoactor-go/cluster/identitylookup/disthash"
	"github.com/asynkron/protoactor-go/remote"
	"github.com/redis/go-redis/v9"
)

// Providers accepted by cluster.provider.
const (
	ProviderLocal       = "local"       // one process; what "redis" means without a Redis URL
	ProviderRedis       = "redis"       // hub heartbeats in Redis (the multi-hub issue)
	ProviderAutomanaged = "automanaged" // protoactor's static host list
	ProviderTest        = "test"        // protoactor's in-memory agent, several members in one process
)

// Options configure a member.
type Options struct {
	Name           string // cluster name; members with another name never meet
	Provider       string
	Host           string
	Port           int // 0 picks a free port
	Peers          []string
	Kinds          []*pcluster.Kind
	RequestTimeout time.Duration
	Logger         *slog.Logger
	// Agent shares one in-memory membership between members of one process
	// (provider "test"); nil makes a private one.
	Agent *test.InMemAgent
	// MinLevel is the least level of protoactor's own logs that is kept
	// (never below WARN).
	MinLevel slog.Level
	// Redis, RedisPrefix, HubTTL, MemberTimeout and OnLost configure
	// provider "redis".
	Redis         redis.UniversalClient
	RedisPrefix   string
	HubTTL        time.Duration
	MemberTimeout time.Duration
	OnLost        func(error)
}

// Member is a started cluster member and its actor system.
type Member struct {
	System   *actor.ActorSystem
	Cluster  *pcluster.Cluster
	provider pcluster.ClusterProvider
	stop     sync.Once
	log      *slog.Logger
}

// ErrUnsupportedProvider is returned for a provider this build cannot start.
var ErrUnsupportedProvider = errors.New("unsupported cluster provider")

// Start creates the actor system and joins the cluster.
func Start(o Options) (*Member, error) {
	return startWith(o, nil)
}

// startWith is Start with an optional provider factory (tests).
func startWith(o Options, newProvider func() pcluster.ClusterProvider) (m *Member, err error) {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Name == "" {
		o.Name = "paprika"
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = 10 * time.Second
	}
	var provider pcluster.ClusterProvider
	switch {
	case newProvider != nil:
		provider = newProvider()
	case o.Provider == ProviderLocal || o.Provider == ProviderTest || o.Provider == "":
		agent := o.Agent
		if agent == nil {
			agent = test.NewInMemAgent()
		}
		provider = test.NewTestProvider(agent)
	case o.Provider == ProviderRedis:
		if o.Redis == nil {
			return nil, fmt.Errorf("%w: %q needs redis.url", ErrUnsupportedProvider, o.Provider)
		}
		rp := NewRedisProvider(o.Redis, o.RedisPrefix, o.HubTTL, o.MemberTimeout, o.Logger)
		rp.OnLost = o.OnLost
		provider = rp
	case o.Provider == ProviderAutomanaged:
		provider = automanaged.NewWithConfig(2*time.Second, 6330, o.Peers...)
	default:
		return nil, fmt.Errorf("%w: %q", ErrUnsupportedProvider, o.Provider)
	}
	if o.Port != 0 {
		// protoactor panics on a taken port: check first for a clear error.
		l, lerr := net.Listen("tcp", net.JoinHostPort(o.Host, strconv.Itoa(o.Port)))
		if lerr != nil {
			return nil, fmt.Errorf("cluster port: %w", lerr)
		}
		_ = l.Close()
	}
	// protoactor narrates every topology change at INFO; keep its warnings.
	logger := slog.New(minLevel{o.Logger.Handler(), max(slog.LevelWarn, o.MinLevel)}).With(slog.String("component", "protoactor"))
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return logger }))
	cfg := pcluster.Configure(o.Name, provider, disthash.New(), remote.Configure(o.Host, o.Port),
		pcluster.WithKinds(o.Kinds...), pcluster.WithRequestTimeout(o.RequestTimeout))
	c := pcluster.New(system, cfg)
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("start cluster member: %v", r)
			system.Shutdown()
		}
	}()
	// A topology change moves grains: the old activation is stopped, and a
	// PID cached on another member for it would swallow messages sent
	// without a reply (protoactor only purges the entries of members that
	// left). Forget every cached PID on each change; lookups refill it.
	system.EventStream.Subscribe(func(evt interface{}) {
		if t, ok := evt.(*pcluster.ClusterTopology); ok {
			for _, m := range t.Members {
				c.PidCache.RemoveByMember(m)
			}
			for _, m := range t.Left {
				c.PidCache.RemoveByMember(m)
			}
		}
	})
	c.StartMember()
	return &Member{System: system, Cluster: c, provider: provider, log: o.Logger}, nil
}

// Address is the member's remote address (host:port).
func (m *Member) Address() string { return m.System.Address() }

// Stop leaves the cluster; safe to call twice. graceful hands grains over.
func (m *Member) Stop(graceful bool) {
	m.stop.Do(func() {
		defer func() {
			if r := recover(); r != nil {
				m.log.Warn("cluster shutdown panicked", slog.Any("panic", r))
			}
		}()
		m.Cluster.Shutdown(graceful)
		if !graceful {
			// protoactor leaves the provider running on a quick shutdown;
			// ours own goroutines and keys that must go with the member.
			if err := m.provider.Shutdown(false); err != nil {
				m.log.Warn("cluster provider shutdown", slog.Any("err", err))
			}
		}
	})
}

// minLevel drops records below a level.
type minLevel struct {
	slog.Handler
	level slog.Level
}

func (m minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= m.level && m.Handler.Enabled(ctx, l)
}

func (m minLevel) WithAttrs(as []slog.Attr) slog.Handler {
	return minLevel{m.Handler.WithAttrs(as), m.level}
}

func (m minLevel) WithGroup(name string) slog.Handler {
	return minLevel{m.Handler.WithGroup(name), m.level}
}
