//go:build !race

// Several members in one process race in protoactor itself: remote.Start
// swaps gRPC's global logger (grpclog.SetLoggerV2) while another member's
// gRPC server reads it. The race is upstream and harmless (both loggers
// discard), but the detector rightly reports it, so multi-member tests in
// one process build without -race; `make test` runs them in a second pass.

package membership

import (
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/remote"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// TestMultiMemberRedisProviderMovesGrains: two members meet through Redis,
// grains spread over both; when one stops refreshing (dies), its key
// expires, it leaves the survivor's member list and its grains re-activate
// on the survivor.
func TestMultiMemberRedisProviderMovesGrains(t *testing.T) {
	rdb, prefix := testRedis(t)
	const ttl = time.Second
	a, b, bp := twoRedisMembers(t, rdb, prefix, ttl)
	placed, err := owners(a, 40)
	require.NoError(t, err)
	require.Len(t, placed, 2, "grains on both members: %v", placed)

	// b dies without a goodbye: its loop stops, its key is left to expire.
	stopBeating(bp)
	died := time.Now()
	require.Eventually(t, func() bool { return a.Cluster.MemberList.Length() == 1 }, 5*time.Second, 20*time.Millisecond)
	require.EqualValues(t, 1, rdb.Exists(t.Context(), bp.droppedKey(bp.self.Cluster, bp.self.ID)).Val(),
		"the survivor marked the dead member dropped")
	t.Logf("dead member left the list after %s (ttl %s)", time.Since(died).Round(time.Millisecond), ttl)
	b.System.Shutdown()
	require.Eventually(t, func() bool {
		got, err := owners(a, 40)
		return err == nil && len(got) == 1 && got[a.Address()] == 40
	}, 10*time.Second, 100*time.Millisecond, "grains re-activated on the survivor")
}

// twoRedisMembers starts two members that meet through Redis (configure
// applies to the second) and waits until each lists both.
func twoRedisMembers(t *testing.T, rdb *redis.Client, prefix string, timeout time.Duration, configure ...func(*RedisProvider)) (a, b *Member, bp *RedisProvider) {
	a, _ = startRedisMember(t, rdb, prefix, timeout)
	b, bp = startRedisMember(t, rdb, prefix, timeout, configure...)
	require.Eventually(t, func() bool { return a.Cluster.MemberList.Length() == 2 && b.Cluster.MemberList.Length() == 2 },
		5*time.Second, 20*time.Millisecond)
	return a, b, bp
}

// stopBeating ends a member's provider loop without a goodbye: its key
// stays until it expires, as after kill -9.
func stopBeating(rp *RedisProvider) {
	rp.mu.Lock()
	stop, done := rp.stop, rp.done
	rp.stop = nil
	rp.mu.Unlock()
	close(stop)
	<-done
}

// TestMultiMemberKilledMemberIsDroppedAtOnce: a member whose process is
// gone (its remoting port refuses connections) leaves the survivor's list
// as soon as the lost connection is noticed, long before the member
// timeout (30 s here), and is marked dropped.
func TestMultiMemberKilledMemberIsDroppedAtOnce(t *testing.T) {
	rdb, prefix := testRedis(t)
	const timeout = 30 * time.Second
	a, b, bp := twoRedisMembers(t, rdb, prefix, timeout)
	placed, err := owners(a, 40)
	require.NoError(t, err)
	require.Len(t, placed, 2, "grains on both members: %v", placed)

	stopBeating(bp)
	killed := time.Now()
	remote.GetRemote(b.System).Shutdown(false) // its port closes, as when the process dies
	require.Eventually(t, func() bool { return a.Cluster.MemberList.Length() == 1 }, 5*time.Second, 10*time.Millisecond,
		"the survivor drops a member that refuses connections without waiting for the timeout")
	t.Logf("killed member left the list after %s (member timeout %s)", time.Since(killed).Round(time.Millisecond), timeout)
	require.EqualValues(t, 1, rdb.Exists(t.Context(), bp.droppedKey(bp.self.Cluster, bp.self.ID)).Val(),
		"the survivor marked it dropped")
	require.Eventually(t, func() bool {
		got, err := owners(a, 40)
		return err == nil && len(got) == 1 && got[a.Address()] == 40
	}, 10*time.Second, 100*time.Millisecond, "grains re-activated on the survivor")
}

// TestMultiMemberLostConnectionToLiveMemberKeepsIt: a lost connection to
// a member that still accepts connections (a blip, not a death) drops
// nobody; only the member timeout judges a peer that does not refuse.
func TestMultiMemberLostConnectionToLiveMemberKeepsIt(t *testing.T) {
	rdb, prefix := testRedis(t)
	const timeout = 30 * time.Second
	a, b, bp := twoRedisMembers(t, rdb, prefix, timeout)
	a.System.EventStream.Publish(&remote.EndpointTerminatedEvent{Address: b.Address()})
	time.Sleep(time.Second) // a refused probe would have re-read the list at once
	require.Equal(t, 2, a.Cluster.MemberList.Length(), "a live member is kept")
	require.EqualValues(t, 0, rdb.Exists(t.Context(), bp.droppedKey(bp.self.Cluster, bp.self.ID)).Val())
	_, err := owners(a, 40)
	require.NoError(t, err)
}

// TestMultiMemberPeersMarkSpreads: a member one peer has dropped (its
// mark) is dropped by every other peer on its next read, whatever its
// beat says; the marked member itself learns it must leave.
func TestMultiMemberPeersMarkSpreads(t *testing.T) {
	rdb, prefix := testRedis(t)
	const timeout = 30 * time.Second
	lost := make(chan error, 1)
	a, _, bp := twoRedisMembers(t, rdb, prefix, timeout, func(rp *RedisProvider) {
		rp.OnLost = func(err error) { lost <- err }
	})
	require.NoError(t, rdb.Set(t.Context(), bp.droppedKey(bp.self.Cluster, bp.self.ID), "1", time.Minute).Err())
	require.Eventually(t, func() bool { return a.Cluster.MemberList.Length() == 1 }, 7*time.Second, 10*time.Millisecond,
		"a marked member leaves every list on the next read (every 5 s here) although it still beats")
	select {
	case err := <-lost:
		require.ErrorContains(t, err, "dropped")
	case <-time.After(timeout / 3 * 2):
		t.Fatal("the marked member did not learn it was dropped")
	}
}
