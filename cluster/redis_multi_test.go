//go:build !race

// Several members in one process race in protoactor itself: remote.Start
// swaps gRPC's global logger (grpclog.SetLoggerV2) while another member's
// gRPC server reads it. The race is upstream and harmless (both loggers
// discard), but the detector rightly reports it, so multi-member tests in
// one process build without -race; `make test` runs them in a second pass.

package cluster

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestMultiMemberRedisProviderMovesGrains: two members meet through Redis,
// grains spread over both; when one stops refreshing (dies), its key
// expires, it leaves the survivor's member list and its grains re-activate
// on the survivor.
func TestMultiMemberRedisProviderMovesGrains(t *testing.T) {
	rdb, prefix := testRedis(t)
	const ttl = time.Second
	a, _ := startRedisMember(t, rdb, prefix, ttl)
	b, bp := startRedisMember(t, rdb, prefix, ttl)
	require.Eventually(t, func() bool { return a.Cluster.MemberList.Length() == 2 && b.Cluster.MemberList.Length() == 2 },
		5*time.Second, 20*time.Millisecond)
	placed, err := owners(a, 40)
	require.NoError(t, err)
	require.Len(t, placed, 2, "grains on both members: %v", placed)

	// b dies without a goodbye: its loop stops, its key is left to expire.
	bp.mu.Lock()
	stop, done := bp.stop, bp.done
	bp.stop = nil
	bp.mu.Unlock()
	close(stop)
	<-done
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
