package membership

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// closedAddr is a loopback address nobody listens on: connections to it
// are refused at once.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

// silentAddr accepts connections and never answers, like a host whose
// service hangs: only a deadline gets a client out.
func silentAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				for _, c := range conns {
					_ = c.Close()
				}
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() { _ = l.Close(); <-done })
	return l.Addr().String()
}

func quietLogger() *slog.Logger {
	if os.Getenv("PAPRIKA_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

func echoKind() *cluster.Kind {
	return cluster.NewKind("echo", actor.PropsFromProducer(func() actor.Actor { return &echoGrain{} }))
}

// startTimed starts a member with o and reports how long the attempt took.
func startTimed(t *testing.T, o Options) (*Member, error, time.Duration) {
	t.Helper()
	o.Name = "t"
	o.Host = "127.0.0.1"
	o.Logger = quietLogger()
	o.Kinds = []*cluster.Kind{echoKind()}
	began := time.Now()
	m, err := Start(o)
	took := time.Since(began)
	if m != nil {
		t.Cleanup(func() { m.Stop(false) })
	}
	return m, err, took
}

func TestConsulRefusedIsAClearError(t *testing.T) {
	t.Parallel()
	addr := closedAddr(t)
	m, err, took := startTimed(t, Options{Provider: ProviderConsul, ConsulAddress: addr, JoinTimeout: 5 * time.Second})
	require.Nil(t, m)
	require.ErrorContains(t, err, "cluster.provider consul at "+addr+": cannot reach the Consul agent: ")
	require.ErrorContains(t, err, "connection refused")
	require.Less(t, took, 3*time.Second, "a refused connection needs no timeout")
}

func TestConsulSilentAgentIsBoundedByJoinTimeout(t *testing.T) {
	t.Parallel()
	addr := silentAddr(t)
	m, err, took := startTimed(t, Options{Provider: ProviderConsul, ConsulAddress: addr, JoinTimeout: 500 * time.Millisecond})
	require.Nil(t, m)
	require.ErrorContains(t, err, "cluster.provider consul at "+addr+": cannot reach the Consul agent: no answer within cluster.join_timeout (500ms): ")
	require.GreaterOrEqual(t, took, 500*time.Millisecond)
	require.Less(t, took, 3*time.Second)
}

func TestEtcdAndConsulNeedTheirAddress(t *testing.T) {
	t.Parallel()
	_, err, _ := startTimed(t, Options{Provider: ProviderEtcd})
	require.ErrorIs(t, err, ErrUnsupportedProvider)
	require.ErrorContains(t, err, "needs cluster.etcd_endpoints")
	_, err, _ = startTimed(t, Options{Provider: ProviderConsul})
	require.ErrorIs(t, err, ErrUnsupportedProvider)
	require.ErrorContains(t, err, "needs cluster.consul_address")
}

// TestK8sOutsideAPod: without the in-cluster environment the error says
// that the provider needs a pod, whatever machine the test runs on.
func TestK8sOutsideAPod(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	m, err, took := startTimed(t, Options{Provider: ProviderK8s, JoinTimeout: time.Second})
	require.Nil(t, m)
	require.ErrorIs(t, err, rest.ErrNotInCluster)
	require.ErrorContains(t, err, "cluster.provider k8s needs to run in a Kubernetes pod")
	require.Less(t, took, time.Second)
}

// TestK8sPodCheckNamesThePermission: in a pod whose service account may not
// read pods, the start fails with the missing permission named, instead of
// protoactor's registration retrying for ever.
func TestK8sPodCheckNamesThePermission(t *testing.T) {
	t.Parallel()
	var path atomic.Value
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path.Store(r.URL.Path)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403,`+
			`"message":"pods \"hub-0\" is forbidden: User \"system:serviceaccount:jobs:default\" cannot get resource \"pods\""}`)
	}))
	t.Cleanup(api.Close)
	clients, err := kubernetes.NewForConfig(&rest.Config{Host: api.URL})
	require.NoError(t, err)
	err = checkPod(t.Context(), clients, "jobs", "hub-0", time.Second)
	require.ErrorContains(t, err, "cannot read this hub's pod hub-0 in namespace jobs (the service account needs get, list, watch and patch on pods)")
	require.ErrorContains(t, err, "cannot get resource")
	require.Equal(t, "/api/v1/namespaces/jobs/pods/hub-0", path.Load())
}

// stuckProvider's Shutdown blocks until released, as protoactor's etcd
// provider does while etcd is unreachable.
type stuckProvider struct {
	cluster.ClusterProvider
	released chan struct{}
}

func (s *stuckProvider) Shutdown(bool) error {
	<-s.released
	return errors.New("client closed")
}

func TestBoundedProviderShutdown(t *testing.T) {
	t.Parallel()
	stuck := &stuckProvider{released: make(chan struct{})}
	var releases atomic.Int32
	ext := &external{name: ProviderEtcd, addr: "etcd1:2379", release: func() {
		if releases.Add(1) == 1 {
			close(stuck.released)
		}
	}}
	b := &boundedProvider{ClusterProvider: stuck, ext: ext, timeout: 200 * time.Millisecond}
	began := time.Now()
	err := b.Shutdown(false)
	require.EqualError(t, err, "cluster.provider etcd at etcd1:2379: leaving took longer than cluster.join_timeout (200ms); gave up")
	require.Less(t, time.Since(began), 2*time.Second)
	require.EqualValues(t, 1, releases.Load(), "the client was closed to end the stuck calls")
	require.Equal(t, err, b.Shutdown(true), "a second Shutdown reports the first")
	require.EqualValues(t, 1, releases.Load())
}

func TestSlogCoreForwardsZapRecords(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn}))
	z := zap.New(slogCore{log: log}).With(zap.String("endpoint", "etcd1:2379"))
	z.Info("dropped below the handler's level")
	z.Warn("retrying of unary invoker failed", zap.Int("attempt", 2), zap.Error(fmt.Errorf("connection refused")))
	out := buf.String()
	require.NotContains(t, out, "dropped")
	require.Contains(t, out, `level=WARN msg="retrying of unary invoker failed" attempt=2 endpoint=etcd1:2379 error="connection refused"`)
}

// scriptedProvider stands in for a provider whose StartMember fails or
// blocks until released.
type scriptedProvider struct {
	startErr error
	block    chan struct{} // StartMember waits on it when non-nil
}

func (s *scriptedProvider) StartMember(*cluster.Cluster) error {
	if s.block != nil {
		<-s.block
	}
	return s.startErr
}
func (s *scriptedProvider) StartClient(*cluster.Cluster) error { return nil }
func (s *scriptedProvider) Shutdown(bool) error                { return nil }

func TestAutomanagedHealthPortTaken(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", ":0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	port := l.Addr().(*net.TCPAddr).Port
	peer := fmt.Sprintf("127.0.0.1:%d", port)
	m, err, _ := startTimed(t, Options{Provider: ProviderAutomanaged, Peers: []string{peer}, AutomanagedPort: port})
	require.Nil(t, m)
	require.ErrorContains(t, err, "cluster.provider automanaged at "+peer+": health port (cluster.automanaged_port): ")
	require.ErrorContains(t, err, "address already in use")
}

func TestExternalProviderClusterPortTaken(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	health := closedAddr(t)
	_, p, err := net.SplitHostPort(health)
	require.NoError(t, err)
	n, err := strconv.Atoi(p)
	require.NoError(t, err)
	m, err, _ := startTimed(t, Options{Provider: ProviderAutomanaged, Peers: []string{health}, AutomanagedPort: n,
		Port: l.Addr().(*net.TCPAddr).Port})
	require.Nil(t, m)
	require.ErrorContains(t, err, "cluster port: ")
	require.ErrorContains(t, err, "address already in use")
}
