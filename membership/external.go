package membership

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/cluster/clusterproviders/automanaged"
	"github.com/asynkron/protoactor-go/cluster/clusterproviders/consul"
	"github.com/asynkron/protoactor-go/cluster/clusterproviders/etcd"
	"github.com/asynkron/protoactor-go/cluster/clusterproviders/k8s"
	consulapi "github.com/hashicorp/consul/api"
	"github.com/labstack/echo/v4"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Providers of protoactor's own that join through a service outside the
// process.
const (
	ProviderConsul = "consul" // a Consul agent: service with a TTL check
	ProviderEtcd   = "etcd"   // etcd: a key under a lease
	ProviderK8s    = "k8s"    // the Kubernetes API: labels on this hub's pod
)

// DefaultJoinTimeout bounds joining through an external service when
// Options.JoinTimeout is 0.
const DefaultJoinTimeout = 15 * time.Second

// DefaultAutomanagedPort is provider automanaged's health port when
// Options.AutomanagedPort is 0 (protoactor's own default).
const DefaultAutomanagedPort = 6330

// automanagedRefresh is how often provider automanaged polls the hosts.
const automanagedRefresh = 2 * time.Second

// etcdBaseKey is the etcd prefix of all members; the cluster name (one per
// Redis prefix) separates fleets below it.
const etcdBaseKey = "/paprika"

// serviceAccountDir holds the pod's namespace and token in Kubernetes.
const serviceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// external is a provider that joins through a service outside the process
// (for automanaged: the other hubs' health endpoints).
// protoactor's providers either block without a deadline on an unreachable
// service (etcd uses context.TODO throughout) or retry for ever in the
// background while StartMember reports success (consul, k8s), so the
// service is reached once with a deadline before the member starts, and
// start and stop are bounded by Options.JoinTimeout.
type external struct {
	name     string // provider name, for messages
	addr     string // where the service is, for messages
	provider cluster.ClusterProvider
	// waitSelf: the join counts only once the member lists itself. Consul
	// registers from an actor after StartMember returned; etcd lists itself
	// before. A k8s member is listed only once its pod is ready, and
	// readiness may well wait for the hub's HTTP port, which opens after the
	// join: waiting there would deadlock until the timeout.
	waitSelf bool
	// unlisted says what to look at when the member was not listed in time.
	unlisted string
	// release closes the provider's client so that calls stuck on an
	// unreachable service return; nil when there is nothing to close.
	release func()
}

// errorf prefixes a message with the provider and its address, the two
// things an operator needs to fix a failed join.
func (e *external) errorf(format string, args ...any) error {
	return fmt.Errorf("cluster.provider %s at %s: "+format, append([]any{e.name, e.addr}, args...)...)
}

// newExternal builds the provider named by o.Provider and checks, within
// ctx, that its service answers. log receives the client libraries' own
// records.
func newExternal(ctx context.Context, o Options, log *slog.Logger) (*external, error) {
	switch o.Provider {
	case ProviderAutomanaged:
		return newAutomanaged(o)
	case ProviderConsul:
		return newConsul(ctx, o)
	case ProviderEtcd:
		return newEtcd(ctx, o, log)
	case ProviderK8s:
		return newK8s(ctx, o.JoinTimeout)
	}
	return nil, fmt.Errorf("%w: %q", ErrUnsupportedProvider, o.Provider)
}

func isExternal(provider string) bool {
	switch provider {
	case ProviderAutomanaged, ProviderConsul, ProviderEtcd, ProviderK8s:
		return true
	}
	return false
}

// newAutomanaged: the member list is whatever of o.Peers answers on its
// health endpoint, so a list without this hub leaves it with no member at
// all — every grain call fails. The join therefore waits for this hub to
// list itself, which also catches a health port nobody can reach.
func newAutomanaged(o Options) (*external, error) {
	if len(o.Peers) == 0 {
		return nil, fmt.Errorf("%w: %q needs cluster.automanaged_hosts", ErrUnsupportedProvider, o.Provider)
	}
	port := o.AutomanagedPort
	if port == 0 {
		port = DefaultAutomanagedPort
	}
	e := &external{name: ProviderAutomanaged, addr: strings.Join(o.Peers, ","), waitSelf: true,
		unlisted: "cluster.automanaged_hosts must hold this hub's own host:" + strconv.Itoa(port) + ", reachable from here"}
	// protoactor binds the health endpoint on 0.0.0.0 from a goroutine and
	// only logs a failed bind. Bind it here, on cluster.host like the
	// cluster port (a hub on loopback exposes nothing), for a clear error;
	// protoactor's echo server serves on the listener it is given.
	l, err := net.Listen("tcp", net.JoinHostPort(o.Host, strconv.Itoa(port)))
	if err != nil {
		return nil, e.errorf("health port (cluster.automanaged_port): %w", err)
	}
	hp := &hostAutomanaged{port: port}
	srv := echo.New()
	srv.HideBanner, srv.HidePort = true, true
	srv.Listener = l
	srv.GET("/_health", hp.health)
	// NewWithTesting is the constructor that takes the echo server; the
	// provider is otherwise the one NewWithConfig builds.
	hp.AutoManagedProvider = automanaged.NewWithTesting(automanagedRefresh, port, srv, o.Peers...)
	e.provider = hp
	// The server owns the listener once started; before that (a failed
	// join) nothing else closes it.
	e.release = sync.OnceFunc(func() { _ = l.Close() })
	return e, nil
}

// hostAutomanaged is protoactor's automanaged provider serving its own
// health endpoint (what protoactor serves on its own server: this member's
// node model) from a listener on cluster.host.
type hostAutomanaged struct {
	*automanaged.AutoManagedProvider
	port    int
	cluster atomic.Pointer[cluster.Cluster]
}

// StartMember records the cluster the health endpoint describes.
func (h *hostAutomanaged) StartMember(c *cluster.Cluster) error {
	h.cluster.Store(c)
	return h.AutoManagedProvider.StartMember(c)
}

func (h *hostAutomanaged) health(ctx echo.Context) error {
	c := h.cluster.Load()
	if c == nil {
		return ctx.NoContent(http.StatusServiceUnavailable)
	}
	host, port, err := c.ActorSystem.GetHostPort()
	if err != nil {
		return ctx.NoContent(http.StatusServiceUnavailable)
	}
	return ctx.JSON(http.StatusOK, automanaged.NewNode(c.Config.Name, c.ActorSystem.ID, host, port, h.port, c.GetClusterKinds()))
}

func newConsul(ctx context.Context, o Options) (*external, error) {
	if strings.TrimSpace(o.ConsulAddress) == "" {
		return nil, fmt.Errorf("%w: %q needs cluster.consul_address", ErrUnsupportedProvider, o.Provider)
	}
	e := &external{name: ProviderConsul, addr: o.ConsulAddress, waitSelf: true,
		unlisted: "the agent answered, but this hub's service never passed its check; see the provider's errors in the log"}
	// A client of its own: the API client rewrites the config it is given.
	probe, err := consulapi.NewClient(&consulapi.Config{Address: o.ConsulAddress})
	if err != nil {
		return nil, e.errorf("%w", err)
	}
	leader, err := probe.Status().LeaderWithQueryOptions((&consulapi.QueryOptions{}).WithContext(ctx))
	if err != nil {
		return nil, e.errorf("cannot reach the Consul agent: %w", deadlineHint(ctx, err, o.JoinTimeout))
	}
	if leader == "" {
		return nil, e.errorf("the Consul agent answers but its cluster has no leader")
	}
	var opts []consul.Option
	if o.MemberTimeout > 0 {
		opts = append(opts, consul.WithTTL(o.MemberTimeout), consul.WithRefreshTTL(o.MemberTimeout/3))
	}
	p, err := consul.NewWithConfig(&consulapi.Config{Address: o.ConsulAddress}, opts...)
	if err != nil {
		return nil, e.errorf("%w", err)
	}
	e.provider = p
	return e, nil
}

func newEtcd(ctx context.Context, o Options, log *slog.Logger) (*external, error) {
	if len(o.EtcdEndpoints) == 0 {
		return nil, fmt.Errorf("%w: %q needs cluster.etcd_endpoints", ErrUnsupportedProvider, o.Provider)
	}
	e := &external{name: ProviderEtcd, addr: strings.Join(o.EtcdEndpoints, ","), waitSelf: true,
		unlisted: "etcd answered, but this hub's key never showed up; see the provider's errors in the log"}
	client, err := clientv3.New(clientv3.Config{
		Endpoints: o.EtcdEndpoints,
		Logger:    zap.New(slogCore{log: log.With(slog.String("component", "etcd-client"))}),
	})
	if err != nil {
		return nil, e.errorf("%w", err)
	}
	e.release = sync.OnceFunc(func() { _ = client.Close() })
	// A linearizable read needs a quorum: it fails now rather than in the
	// provider, which would wait for ever.
	if _, err := client.Get(ctx, etcdBaseKey+"/"+o.Name, clientv3.WithCountOnly()); err != nil {
		e.release()
		return nil, e.errorf("cannot reach etcd: %w", deadlineHint(ctx, err, o.JoinTimeout))
	}
	p, err := etcd.NewWithConfig(etcdBaseKey, clientv3.Config{}, etcd.WithEtcdClient(client),
		etcd.WithKeepAliveTTL(o.MemberTimeout))
	if err != nil {
		e.release()
		return nil, e.errorf("%w", err)
	}
	e.provider = p
	return e, nil
}

func newK8s(ctx context.Context, timeout time.Duration) (*external, error) {
	cfg, err := rest.InClusterConfig()
	if err != nil {
		return nil, fmt.Errorf("cluster.provider k8s needs to run in a Kubernetes pod: it uses the in-cluster config "+
			"(KUBERNETES_SERVICE_HOST, KUBERNETES_SERVICE_PORT and the service account under %s): %w", serviceAccountDir, err)
	}
	e := &external{name: ProviderK8s, addr: cfg.Host}
	clients, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, e.errorf("%w", err)
	}
	ns, err := os.ReadFile(serviceAccountDir + "/namespace")
	if err != nil {
		return nil, e.errorf("read this pod's namespace: %w", err)
	}
	// The provider finds its pod by host name, as Kubernetes names it.
	pod, err := os.Hostname()
	if err != nil {
		return nil, e.errorf("host name (the pod name): %w", err)
	}
	if err := checkPod(ctx, clients, strings.TrimSpace(string(ns)), pod, timeout); err != nil {
		return nil, e.errorf("%w", err)
	}
	p, err := k8s.NewWithConfig(cfg)
	if err != nil {
		return nil, e.errorf("%w", err)
	}
	e.provider = p
	return e, nil
}

// checkPod reads this hub's own pod, the first thing the k8s provider does,
// so that a missing permission or an unreachable API server is an error at
// start instead of a retry loop in the log.
func checkPod(ctx context.Context, clients kubernetes.Interface, namespace, name string, timeout time.Duration) error {
	if _, err := clients.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{}); err != nil {
		return fmt.Errorf("cannot read this hub's pod %s in namespace %s (the service account needs get, list, watch "+
			"and patch on pods): %w", name, namespace, deadlineHint(ctx, err, timeout))
	}
	return nil
}

// deadlineHint names the timeout when ctx expired: client libraries report
// that as a bare "context deadline exceeded".
func deadlineHint(ctx context.Context, err error, timeout time.Duration) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("no answer within cluster.join_timeout (%s): %w", timeout, err)
	}
	return err
}

// boundedProvider bounds a provider's Shutdown by a timeout: protoactor's
// etcd provider deregisters and re-reads the member list with
// context.TODO(), so a hub whose etcd went away would never finish
// stopping. Past the timeout the client is closed, which ends the stuck
// calls.
type boundedProvider struct {
	cluster.ClusterProvider
	ext     *external
	timeout time.Duration
	once    sync.Once
	err     error
}

// Shutdown runs the provider's Shutdown once, for at most the timeout.
func (b *boundedProvider) Shutdown(graceful bool) error {
	b.once.Do(func() {
		done := make(chan error, 1)
		go func() {
			defer func() {
				if r := recover(); r != nil {
					done <- fmt.Errorf("panic: %v", r)
				}
			}()
			done <- b.ClusterProvider.Shutdown(graceful)
		}()
		t := time.NewTimer(b.timeout)
		defer t.Stop()
		select {
		case err := <-done:
			if err != nil {
				b.err = b.ext.errorf("leave: %w", err)
			}
		case <-t.C:
			b.err = b.ext.errorf("leaving took longer than cluster.join_timeout (%s); gave up", b.timeout)
		}
		if b.ext.release != nil {
			b.ext.release()
		}
	})
	return b.err
}
