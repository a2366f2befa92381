//go:build !race

// Tests that start protoactor remoting in this process build without -race,
// like the multi-member tests (see redis_multi_test.go): remote.Start swaps
// gRPC's global logger while gRPC goroutines of an earlier start may still
// read it, an upstream race the detector rightly reports. `make test` runs
// them in its second pass. The etcd client's gRPC goroutines read that
// logger too, so the etcd start tests live here as well.

package membership

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/remote"
	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/internal/syncbuf"
)

// TestConsulRefusedRegistrationIsBounded: an agent that answers but
// refuses the registration (an ACL, say) leaves protoactor's provider
// retrying in the background while StartMember reported success; the join
// must still fail within the timeout and stop those retries.
func TestRemotingConsulRefusedRegistrationIsBounded(t *testing.T) {
	// Not parallel: it starts remoting, which races with another
	// member starting (see redis_multi_test.go).
	var registers atomic.Int64
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/status/leader":
			_, _ = io.WriteString(w, `"127.0.0.1:8300"`)
		case "/v1/agent/service/register":
			registers.Add(1)
			http.Error(w, "Permission denied: token lacks service:write", http.StatusForbidden)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(agent.Close)
	addr := strings.TrimPrefix(agent.URL, "http://")
	m, err, took := startTimed(t, Options{Provider: ProviderConsul, ConsulAddress: addr, JoinTimeout: 1500 * time.Millisecond})
	require.Nil(t, m)
	require.ErrorContains(t, err, "cluster.provider consul at "+addr+": this hub was not listed as a member within cluster.join_timeout (the agent answered, but this hub's service never passed its check")
	require.Less(t, took, 5*time.Second)
	require.Positive(t, registers.Load(), "the provider tried to register")
	before := registers.Load()
	time.Sleep(300 * time.Millisecond)
	require.Equal(t, before, registers.Load(), "the provider still retries after the failed start")
}

func TestRemotingProviderStartErrorIsAnError(t *testing.T) {
	// Not parallel: it starts remoting, which races with another
	// member starting (see redis_multi_test.go).
	// Locked: remoting's server goroutine may still log after the failed
	// start returns.
	var logs syncbuf.Buffer
	_, err := startWith(Options{Name: "t", Host: "127.0.0.1", Logger: slog.New(slog.NewTextHandler(&logs, nil))},
		func() cluster.ClusterProvider { return &scriptedProvider{startErr: errors.New("no quorum")} })
	require.EqualError(t, err, "start cluster member: no quorum")
	require.NotContains(t, logs.String(), "teardown", "the failed start was torn down cleanly")
}

// TestJoinBoundsABlockedStart: a provider stuck in StartMember (etcd's,
// with its service gone after the check) is released at the deadline and
// the join fails with the provider and address named.
func TestRemotingJoinBoundsABlockedStart(t *testing.T) {
	// Not parallel: it starts remoting, which races with another
	// member starting (see redis_multi_test.go).
	sp := &scriptedProvider{block: make(chan struct{}), startErr: errors.New("client closed")}
	ext := &external{name: ProviderEtcd, addr: "etcd1:2379", provider: sp, waitSelf: true,
		release: func() { close(sp.block) }}
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return quietLogger() }))
	c := cluster.New(system, cluster.Configure("t", sp, NewLookup(), remote.Configure("127.0.0.1", 0)))
	began := time.Now()
	err := join(c, ext, time.Now().Add(300*time.Millisecond), make(chan struct{}))
	took := time.Since(began)
	abandon(c, sp, quietLogger())
	require.EqualError(t, err, "cluster.provider etcd at etcd1:2379: joining took longer than cluster.join_timeout; gave up")
	require.GreaterOrEqual(t, took, 1300*time.Millisecond, "StartMember's own second of sleep is allowed for")
	require.Less(t, took, 4*time.Second)
}

// TestAutomanagedWithoutSelfIsAnError: a host list that leaves this hub out
// gives it no member at all, so every grain call would fail; the start
// fails instead.
func TestRemotingAutomanagedWithoutSelfIsAnError(t *testing.T) {
	// Not parallel: it starts remoting, which races with another member
	// starting (see redis_multi_test.go).
	peer := closedAddr(t)
	port := closedAddr(t)
	_, p, err := net.SplitHostPort(port)
	require.NoError(t, err)
	n, err := strconv.Atoi(p)
	require.NoError(t, err)
	m, err, took := startTimed(t, Options{Provider: ProviderAutomanaged, Peers: []string{peer}, AutomanagedPort: n, JoinTimeout: time.Second})
	require.Nil(t, m)
	require.ErrorContains(t, err, "cluster.provider automanaged at "+peer+": this hub was not listed as a member within cluster.join_timeout "+
		"(cluster.automanaged_hosts must hold this hub's own host:"+p+", reachable from here)")
	require.Less(t, took, 4*time.Second)
}

func TestRemotingEtcdUnreachableIsBoundedByJoinTimeout(t *testing.T) {
	t.Parallel()
	for name, addr := range map[string]string{"refused": closedAddr(t), "silent": silentAddr(t)} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			m, err, took := startTimed(t, Options{Provider: ProviderEtcd, EtcdEndpoints: []string{addr}, JoinTimeout: time.Second})
			require.Nil(t, m)
			require.ErrorContains(t, err, "cluster.provider etcd at "+addr+": cannot reach etcd: no answer within cluster.join_timeout (1s): ")
			require.Less(t, took, 4*time.Second)
		})
	}
}
