//go:build !race

// Two remotes in one process: without -race, like remoting_test.go. The
// Makefile's second pass selects TestSecurityCluster* as well.

package membership

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/paprika-hub/paprika/internal/certs"
)

// tlsFixture makes a CA with one hub certificate for 127.0.0.1 in a fresh
// directory and loads it.
func tlsFixture(t testing.TB) *certs.Cluster {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, certs.MakeCA(dir, false, time.Now()))
	require.NoError(t, certs.MakeHub(dir, []string{"127.0.0.1"}, false, time.Now()))
	c, err := certs.Load(filepath.Join(dir, certs.CACert), filepath.Join(dir, certs.HubCert), filepath.Join(dir, certs.HubKey))
	require.NoError(t, err)
	return c
}

// startRemote starts remoting on 127.0.0.1 with Start's own configuration
// (remoteConfig), TLS when server and client are set.
func startRemote(t testing.TB, server, client *tls.Config) *actor.ActorSystem {
	t.Helper()
	quiet := quietLogger()
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return quiet }))
	r := remote.NewRemote(system, remoteConfig(Options{Host: "127.0.0.1", ServerTLS: server, ClientTLS: client}))
	r.Start()
	t.Cleanup(func() { r.Shutdown(false); system.Shutdown() })
	return system
}

// TestSecurityClusterRefusesPeerWithoutCert: an actor on a TLS member gets
// nothing from a plain remote, nor from one whose certificate another CA
// signed; a peer holding a certificate from the cluster CA reaches it. A
// bare TLS client without a certificate fails the handshake.
func TestSecurityClusterRefusesPeerWithoutCert(t *testing.T) {
	// Not parallel: it starts remoting (see remoting_test.go).
	ca := tlsFixture(t)
	member := startRemote(t, ca.Server, ca.Client)
	got := make(chan string, 16)
	_, err := member.Root.SpawnNamed(actor.PropsFromFunc(func(c actor.Context) {
		if m, ok := c.Message().(*wrapperspb.StringValue); ok {
			got <- m.Value
		}
	}), "target")
	require.NoError(t, err)
	// A PID caches the process that sends to it, the first sender's
	// endpoint: every sender gets its own.
	target := func() *actor.PID { return actor.NewPID(member.Address(), "target") }

	// A raw TLS dial that trusts the member but brings no certificate: in
	// TLS 1.3 the server's refusal arrives with the first read.
	conn, err := tls.Dial("tcp", member.Address(), &tls.Config{RootCAs: ca.Client.RootCAs, MinVersion: tls.VersionTLS13})
	if err == nil {
		_, err = conn.Read(make([]byte, 1))
		_ = conn.Close()
	}
	require.ErrorContains(t, err, "certificate required")

	plain := startRemote(t, nil, nil)
	plain.Root.Send(target(), wrapperspb.String("plain"))
	other := tlsFixture(t) // a certificate from another CA
	stranger := startRemote(t, other.Server, other.Client)
	stranger.Root.Send(target(), wrapperspb.String("stranger"))

	peer := startRemote(t, ca.Server, ca.Client)
	peer.Root.Send(target(), wrapperspb.String("peer"))
	select {
	case m := <-got:
		require.Equal(t, "peer", m)
	case <-time.After(10 * time.Second):
		t.Fatal("the peer with a certificate from the cluster CA did not reach the actor")
	}
	// The refused senders had as long as the peer and more.
	select {
	case m := <-got:
		t.Fatalf("%q reached the TLS member", m)
	case <-time.After(2 * time.Second):
	}
}

// TestSecurityClusterAutomanagedHealthBindsHost: provider automanaged
// serves its health on cluster.host, not on every interface, and still
// describes this member there (the join waits for that).
func TestSecurityClusterAutomanagedHealthBindsHost(t *testing.T) {
	// Not parallel: it starts remoting (see remoting_test.go).
	port := freePort(t)
	self := fmt.Sprintf("127.0.0.1:%d", port)
	m, err, _ := startTimed(t, Options{Provider: ProviderAutomanaged, Peers: []string{self}, AutomanagedPort: port, JoinTimeout: 10 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { m.Stop(false) })

	res, err := http.Get("http://" + self + "/_health")
	require.NoError(t, err)
	var node struct {
		ID   string `json:"id"`
		Port int    `json:"port"`
	}
	require.NoError(t, json.NewDecoder(res.Body).Decode(&node))
	_ = res.Body.Close()
	require.Equal(t, m.System.ID, node.ID)
	_, mport, _ := m.System.GetHostPort()
	require.Equal(t, mport, node.Port)

	// Another loopback address of this machine is free on that port: a
	// listener on 0.0.0.0 would hold it.
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.2:%d", port))
	require.NoError(t, err, "the health port is bound beyond cluster.host")
	_ = l.Close()
}

// BenchmarkRemotingTLSRoundTrip is the cost of cluster TLS on one
// request/reply between two members (established connection), plain and
// with mutual TLS.
func BenchmarkRemotingTLSRoundTrip(b *testing.B) {
	ca := tlsFixture(b)
	for _, bc := range []struct {
		name           string
		server, client *tls.Config
	}{{"plain", nil, nil}, {"tls", ca.Server, ca.Client}} {
		b.Run(bc.name, func(b *testing.B) {
			member := startRemote(b, bc.server, bc.client)
			_, err := member.Root.SpawnNamed(actor.PropsFromFunc(func(c actor.Context) {
				if m, ok := c.Message().(*wrapperspb.StringValue); ok {
					c.Respond(m)
				}
			}), "echo")
			require.NoError(b, err)
			peer := startRemote(b, bc.server, bc.client)
			pid := actor.NewPID(member.Address(), "echo")
			msg := wrapperspb.String("ping")
			_, err = peer.Root.RequestFuture(pid, msg, 5*time.Second).Result()
			require.NoError(b, err, "warm-up")
			b.ResetTimer()
			for range b.N {
				if _, err := peer.Root.RequestFuture(pid, msg, 5*time.Second).Result(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
