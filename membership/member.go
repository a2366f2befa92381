package membership

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/cluster/clusterproviders/test"
	"github.com/asynkron/protoactor-go/remote"
	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
)

// Providers accepted by cluster.provider. This package implements them, so
// it owns their spelling; package config refers to these when it checks
// the key.
const (
	ProviderLocal       = "local"       // one process; what "redis" means without a Redis URL
	ProviderRedis       = "redis"       // hub heartbeats in Redis (the multi-hub issue)
	ProviderAutomanaged = "automanaged" // protoactor's static host list
	ProviderTest        = "test"        // protoactor's in-memory agent, several members in one process
)

// Providers lists every value cluster.provider accepts, in the order error
// messages name them. ProviderLocal is not among them: the hub chooses it
// itself, for provider redis without a Redis URL.
var Providers = []string{ProviderRedis, ProviderAutomanaged, ProviderTest, ProviderConsul, ProviderEtcd, ProviderK8s}

// Options configure a member.
type Options struct {
	Name     string // cluster name; members with another name never meet
	Provider string
	Host     string
	Port     int // 0 picks a free port
	// Peers are the health addresses (host:port) provider "automanaged"
	// polls, this member's included.
	Peers []string
	// AutomanagedPort is where provider "automanaged" serves this member's
	// health; 0 means DefaultAutomanagedPort.
	AutomanagedPort int
	Kinds           []*cluster.Kind
	// HandOverKinds are the kinds whose activation is sent Moved before a
	// topology change that gives it to another member stops it.
	HandOverKinds []string
	// Dispatcher runs the placement actor's turns (every activation and
	// every GrainDeliver goes through it); nil: protoactor's default.
	Dispatcher     actor.Dispatcher
	RequestTimeout time.Duration
	Logger         *slog.Logger
	// Agent shares one in-memory membership between members of one process
	// (provider "test"); nil makes a private one.
	Agent *test.InMemAgent
	// MinLevel is the least level of protoactor's own logs that is kept
	// (never below WARN).
	MinLevel slog.Level
	// Redis, RedisPrefix, HubTTL, MemberTimeout and OnLost configure
	// provider "redis"; MemberTimeout is also the registration TTL of
	// providers "consul" and "etcd".
	Redis         redis.UniversalClient
	RedisPrefix   string
	HubTTL        time.Duration
	MemberTimeout time.Duration
	OnLost        func(error)
	// ConsulAddress is the Consul agent of provider "consul".
	ConsulAddress string
	// EtcdEndpoints are the etcd endpoints of provider "etcd".
	EtcdEndpoints []string
	// JoinTimeout bounds reaching the service of provider "automanaged",
	// "consul", "etcd" or "k8s", joining through it, and leaving it; 0
	// means DefaultJoinTimeout.
	JoinTimeout time.Duration
	// ServerTLS and ClientTLS, both set or both nil, make remoting mutual
	// TLS: ServerTLS serves the cluster port (it should demand a client
	// certificate from the cluster CA), ClientTLS dials peers (this hub's
	// certificate, the CA as root). Nil is plain gRPC, which anyone who can
	// reach the port may talk to.
	ServerTLS, ClientTLS *tls.Config
}

// Member is a started cluster member and its actor system.
type Member struct {
	System   *actor.ActorSystem
	Cluster  *cluster.Cluster
	provider cluster.ClusterProvider
	// ownAgent: the in-memory provider's agent is this member's alone (no
	// Options.Agent shared with other members of the process).
	ownAgent bool
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
func startWith(o Options, newProvider func() cluster.ClusterProvider) (*Member, error) {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Name == "" {
		o.Name = "paprika"
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = 10 * time.Second
	}
	if o.JoinTimeout <= 0 {
		o.JoinTimeout = DefaultJoinTimeout
	}
	// protoactor and the clients of its providers narrate every topology
	// change and retry at INFO; keep their warnings (and not the ERROR an
	// orderly close logs, benignEnds).
	quiet := slog.New(benignEnds{minLevel{o.Logger.Handler(), max(slog.LevelWarn, o.MinLevel)}})
	logger := quiet.With(slog.String("component", "protoactor"))
	var provider cluster.ClusterProvider
	ownAgent := false
	var ext *external
	var deadline time.Time
	switch {
	case newProvider != nil:
		provider = newProvider()
	case o.Provider == ProviderLocal || o.Provider == ProviderTest || o.Provider == "":
		agent := o.Agent
		if agent == nil {
			agent, ownAgent = test.NewInMemAgent(), true
		}
		provider = test.NewTestProvider(agent)
	case o.Provider == ProviderRedis:
		if o.Redis == nil {
			return nil, fmt.Errorf("%w: %q needs redis.url", ErrUnsupportedProvider, o.Provider)
		}
		rp := NewRedisProvider(o.Redis, o.RedisPrefix, o.HubTTL, o.MemberTimeout, o.Logger)
		rp.OnLost = o.OnLost
		provider = rp
	case isExternal(o.Provider):
		// One deadline for the whole join: the check below, StartMember and
		// the wait for this member to be listed.
		deadline = time.Now().Add(o.JoinTimeout)
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		var err error
		ext, err = newExternal(ctx, o, quiet)
		cancel()
		if err != nil {
			return nil, err
		}
		provider = &boundedProvider{ClusterProvider: ext.provider, ext: ext, timeout: o.JoinTimeout}
	default:
		return nil, fmt.Errorf("%w: %q", ErrUnsupportedProvider, o.Provider)
	}
	if o.Port != 0 {
		// protoactor panics on a taken port: check first for a clear error.
		l, lerr := net.Listen("tcp", net.JoinHostPort(o.Host, strconv.Itoa(o.Port)))
		if lerr != nil {
			if ext != nil && ext.release != nil {
				ext.release() // nothing started yet: only the client to close
			}
			return nil, fmt.Errorf("cluster port: %w", lerr)
		}
		_ = l.Close()
	}
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return logger }))
	lookup := NewLookup()
	lookup.dispatcher = o.Dispatcher
	lookup.handOver = make(map[string]bool, len(o.HandOverKinds))
	for _, k := range o.HandOverKinds {
		lookup.handOver[k] = true
	}
	cfg := cluster.Configure(o.Name, provider, lookup, remoteConfig(o),
		cluster.WithKinds(append(slices.Clip(o.Kinds), markers()...)...), cluster.WithRequestTimeout(o.RequestTimeout))
	c := cluster.New(system, cfg)
	// A topology change moves grains: the old activation is stopped, and a
	// PID cached on another member for it would swallow messages sent
	// without a reply (protoactor only purges the entries of members that
	// left). Forget every cached PID on each change; lookups refill it.
	listed := make(chan struct{})
	var listedOnce sync.Once
	system.EventStream.Subscribe(func(evt interface{}) {
		if at, ok := evt.(*cluster.ActivationTerminated); ok && at.ClusterIdentity != nil && at.Pid != nil {
			// Every member hears that an activation ended (Lookup.RemovePid): its
			// cached PID goes, or the cache would grow by every job ever
			// run and send to stopped grains. A newer PID stays.
			c.PidCache.RemoveByValue(at.ClusterIdentity.Identity, at.ClusterIdentity.Kind, at.Pid)
			return
		}
		if ended, ok := evt.(*cluster.PackedActivations); ok {
			// The same, for the activations that ended on the member at
			// ended.Address since its last notice (placementActor).
			for _, k := range ended.Actors {
				for _, a := range k.Activations {
					c.PidCache.RemoveByValue(a.Identity, k.Name, actor.NewPID(ended.Address, a.ActivationId))
				}
			}
			return
		}
		if t, ok := evt.(*cluster.ClusterTopology); ok {
			self := system.Address()
			for _, m := range t.Members {
				c.PidCache.RemoveByMember(m)
				if m.Address() == self {
					listedOnce.Do(func() { close(listed) })
				}
			}
			for _, m := range t.Left {
				c.PidCache.RemoveByMember(m)
			}
		}
	})
	if err := join(c, ext, deadline, listed); err != nil {
		abandon(c, provider, o.Logger)
		return nil, err
	}
	return &Member{System: system, Cluster: c, provider: provider, ownAgent: ownAgent, log: o.Logger}, nil
}

// remoteConfig is remoting on o.Host:o.Port, with mutual TLS when o has
// it. WithDialOptions replaces protoactor's default dial options (insecure
// credentials), so the credentials given here are the only ones a dial
// uses.
//
// Both ends fix their HTTP/2 flow-control windows at remoteWindow. gRPC's
// default, a window sized by bandwidth probes, sends a probe (a PING, and
// an ACK back) whenever data arrives and none is out, and on a fast link
// one is back before the next message: a grain message between hubs cost
// its data frame plus a PING, an ACK and a window update, each a write and
// a read on the two hubs (TestRemotingSendsNoPingPerMessage). A fixed
// window sends no probes and updates the window once per quarter of it.
func remoteConfig(o Options) *remote.Config {
	creds := insecure.NewCredentials()
	server := []grpc.ServerOption{grpc.InitialWindowSize(remoteWindow), grpc.InitialConnWindowSize(remoteWindow)}
	if o.ServerTLS != nil && o.ClientTLS != nil {
		creds = credentials.NewTLS(o.ClientTLS)
		server = append(server, grpc.Creds(credentials.NewTLS(o.ServerTLS)))
	}
	return remote.Configure(o.Host, o.Port,
		remote.WithServerOptions(server...),
		remote.WithDialOptions(grpc.WithTransportCredentials(creds),
			grpc.WithInitialWindowSize(remoteWindow), grpc.WithInitialConnWindowSize(remoteWindow)))
}

// remoteWindow is the flow-control window of a link between hubs, each
// stream's and the connection's: half of the most gRPC's probes would
// grow it to, which on a 50 ms path still carries 160 MB/s (a browser
// session's bytes travel between hubs), and what a stalled reader can
// leave buffered per peer.
const remoteWindow = 8 << 20

// join starts the member. protoactor's StartMember panics on a provider
// error and may block on a provider's service; for an external provider it
// is bounded by deadline, and the join completes when the member is listed
// (closed listed) where that is what the provider does asynchronously.
func join(c *cluster.Cluster, ext *external, deadline time.Time, listed <-chan struct{}) error {
	done := make(chan error, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- fmt.Errorf("%v", r)
			}
		}()
		c.StartMember()
		done <- nil
	}()
	if ext == nil {
		if err := <-done; err != nil {
			return fmt.Errorf("start cluster member: %w", err)
		}
		return nil
	}
	// StartMember sleeps a fixed second after the provider started.
	started := time.NewTimer(time.Until(deadline) + time.Second)
	defer started.Stop()
	select {
	case err := <-done:
		if err != nil {
			return ext.errorf("join: %w", err)
		}
	case <-started.C:
		if ext.release != nil {
			ext.release() // ends the provider's calls on the service
			// Let StartMember fail on the closed client before the caller
			// tears the member down under it.
			grace := time.NewTimer(5 * time.Second)
			defer grace.Stop()
			select {
			case <-done:
			case <-grace.C:
			}
		}
		return ext.errorf("joining took longer than cluster.join_timeout; gave up")
	}
	if !ext.waitSelf {
		return nil
	}
	select {
	case <-listed:
		return nil
	default:
	}
	wait := time.NewTimer(max(time.Until(deadline), 0))
	defer wait.Stop()
	select {
	case <-listed:
		return nil
	case <-wait.C:
		return ext.errorf("this hub was not listed as a member within cluster.join_timeout (%s)", ext.unlisted)
	}
}

// abandon tears down a member whose start failed, whatever state the start
// left it in.
func abandon(c *cluster.Cluster, provider cluster.ClusterProvider, log *slog.Logger) {
	defer func() {
		if r := recover(); r != nil {
			log.Warn("cluster teardown after a failed start panicked", slog.Any("panic", r))
		}
	}()
	// Only an external provider may have registered somewhere or hold a
	// client; it stops while the actor system still runs its actors.
	if _, bounded := provider.(*boundedProvider); bounded {
		if err := provider.Shutdown(false); err != nil {
			log.Warn("cluster provider shutdown after a failed start", slog.Any("err", err))
		}
	}
	c.ActorSystem.Shutdown()
	// Remoting that failed to listen has no server to stop; the system
	// address stays protoactor's placeholder until it listens.
	if c.Remote != nil && c.ActorSystem.Address() != "nonhost" {
		c.Remote.Shutdown(false)
	}
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
		if !graceful && !m.ownAgent {
			// protoactor leaves the provider running on a quick shutdown;
			// ours own goroutines and keys that must go with the member.
			// Not an in-memory agent of the member's own: deregistering
			// would only tell this stopped member that it left, and that
			// update writes protoactor's BlockList while the gossip loop,
			// which outlives Shutdown by up to a tick, reads it unlocked
			// (an upstream data race -race reports in in-process hubs).
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
