//go:build !race

// Multi-member tests build without -race: see redis_multi_test.go. The
// etcd provider also writes its shutdown flag unsynchronised from several
// goroutines (upstream).

package membership

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/paprika-hub/paprika/persistence/storetest"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// freePort asks the kernel for a port nobody uses right now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port
}

// testEtcd starts a private one-node etcd on random loopback ports and
// returns its client endpoint and a function that kills it. A missing etcd
// binary skips locally and fails under CI=true (scripts/services.sh
// installs Debian's etcd-server).
func testEtcd(t *testing.T) (endpoint string, kill func()) {
	t.Helper()
	bin, err := exec.LookPath("etcd")
	if err != nil {
		storetest.Unavailable(t, "etcd (Debian etcd-server)", err)
	}
	client := "http://127.0.0.1:" + strconv.Itoa(freePort(t))
	peer := "http://127.0.0.1:" + strconv.Itoa(freePort(t))
	dir := t.TempDir()
	logf, err := os.Create(filepath.Join(dir, "etcd.log"))
	require.NoError(t, err)
	cmd := exec.Command(bin,
		"--name", "t", "--data-dir", filepath.Join(dir, "data"),
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", "t="+peer, "--initial-cluster-state", "new")
	cmd.Stdout, cmd.Stderr = logf, logf
	require.NoError(t, cmd.Start())
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	kill = func() {
		_ = cmd.Process.Kill()
		<-exited
	}
	t.Cleanup(func() {
		kill()
		_ = logf.Close()
		if t.Failed() {
			if b, err := os.ReadFile(logf.Name()); err == nil {
				t.Logf("etcd log:\n%s", b)
			}
		}
	})

	c, err := clientv3.New(clientv3.Config{Endpoints: []string{client}, Logger: zap.NewNop()})
	require.NoError(t, err)
	defer func() { _ = c.Close() }()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		_, err := c.Get(ctx, "ready")
		cancel()
		if err == nil {
			return client, kill
		}
		select {
		case <-exited:
			t.Fatalf("etcd exited before it served (see its log below): %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("etcd at %s did not serve within 20s: %v", client, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func startEtcdMember(t *testing.T, endpoint string) *Member {
	t.Helper()
	m, err, _ := startTimed(t, Options{
		Provider: ProviderEtcd, EtcdEndpoints: []string{endpoint},
		RequestTimeout: 2 * time.Second, MemberTimeout: 2 * time.Second, JoinTimeout: 3 * time.Second,
	})
	require.NoError(t, err)
	return m
}

// TestMultiMemberEtcdProvider: two members meet through a real etcd, see a
// topology of two, and grain calls from either member reach grains placed
// on both. Then etcd dies, and each member still stops within
// cluster.join_timeout: protoactor's provider alone would wait for etcd for
// ever.
func TestMultiMemberEtcdProvider(t *testing.T) {
	endpoint, killEtcd := testEtcd(t)
	a := startEtcdMember(t, endpoint)
	b := startEtcdMember(t, endpoint)
	require.Eventually(t, func() bool { return a.Cluster.MemberList.Length() == 2 && b.Cluster.MemberList.Length() == 2 },
		10*time.Second, 50*time.Millisecond, "both members list each other")
	for _, m := range []*Member{a, b} {
		var placed map[string]int
		require.Eventually(t, func() bool {
			var err error
			placed, err = owners(m, 40)
			return err == nil && len(placed) == 2
		}, 10*time.Second, 100*time.Millisecond, "grains on both members, called from %s: %v", m.Address(), placed)
		require.Equal(t, 40, placed[a.Address()]+placed[b.Address()], "placed %v", placed)
	}

	killEtcd()
	for _, m := range []*Member{a, b} {
		began := time.Now()
		m.Stop(false)
		took := time.Since(began)
		require.Less(t, took, 3*time.Second+2*time.Second, "stop with etcd gone took %s", took)
		t.Logf("member %s stopped in %s with etcd gone", m.Address(), took.Round(time.Millisecond))
	}
}

// TestMultiMemberEtcdLeaveAndJoin: a member that left gracefully is
// gone from the survivor's list, and a new member joins the same etcd
// prefix afterwards.
func TestMultiMemberEtcdLeaveAndJoin(t *testing.T) {
	endpoint, _ := testEtcd(t)
	a := startEtcdMember(t, endpoint)
	b := startEtcdMember(t, endpoint)
	require.Eventually(t, func() bool { return a.Cluster.MemberList.Length() == 2 },
		10*time.Second, 50*time.Millisecond)
	b.Stop(false)
	require.Eventually(t, func() bool { return a.Cluster.MemberList.Length() == 1 },
		10*time.Second, 50*time.Millisecond, "the stopped member deregistered")
	c := startEtcdMember(t, endpoint)
	require.Eventually(t, func() bool { return a.Cluster.MemberList.Length() == 2 && c.Cluster.MemberList.Length() == 2 },
		10*time.Second, 50*time.Millisecond)
	got, err := owners(c, 20)
	require.NoError(t, err)
	require.Equal(t, 20, got[a.Address()]+got[c.Address()], "placed %v", got)
}

// TestMultiMemberAutomanagedProvider: two members poll each other's health
// endpoint, list each other, and grain calls reach both.
func TestMultiMemberAutomanagedProvider(t *testing.T) {
	ports := []int{freePort(t), freePort(t)}
	peers := []string{fmt.Sprintf("127.0.0.1:%d", ports[0]), fmt.Sprintf("127.0.0.1:%d", ports[1])}
	var members []*Member
	for _, port := range ports {
		m, err, _ := startTimed(t, Options{Provider: ProviderAutomanaged, Peers: peers, AutomanagedPort: port,
			RequestTimeout: 2 * time.Second, JoinTimeout: 10 * time.Second})
		require.NoError(t, err)
		members = append(members, m)
	}
	a, b := members[0], members[1]
	require.Eventually(t, func() bool { return a.Cluster.MemberList.Length() == 2 && b.Cluster.MemberList.Length() == 2 },
		10*time.Second, 50*time.Millisecond, "both members list each other")
	require.Eventually(t, func() bool {
		placed, err := owners(b, 40)
		return err == nil && len(placed) == 2 && placed[a.Address()]+placed[b.Address()] == 40
	}, 10*time.Second, 100*time.Millisecond, "grains on both members")
}
