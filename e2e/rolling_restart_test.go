package e2e

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestClusterRollingRestart: SIGTERM each of three hubs in turn and start
// it again, under steady load: zero failed jobs.
func TestClusterRollingRestart(t *testing.T) {
	// The default member timeout: with 2 s, a hub starved of CPU on this
	// 2-core machine can miss a beat, and protoactor blocks a member missing
	// from even one topology update for good (see the closing note).
	f := newFleetWith(t, 3, func(env []string) []string {
		return setEnv(env, "PAPRIKA_CLUSTER_MEMBER_TIMEOUT=6s")
	})
	f.startWorkers(6, 2)
	c := f.client()
	stop := make(chan struct{})
	collect := load(t, c, 50*time.Millisecond, map[string]any{"lines": 10, "interval_ms": 20}, stop)
	time.Sleep(2 * time.Second)
	for i := range f.hubs {
		require.Equal(t, 0, f.hubs[i].stop(30*time.Second), "hub %d exit status", i)
		f.startHub(i)
		time.Sleep(2 * time.Second)
	}
	close(stop)
	ids := collect()
	require.Greater(t, len(ids), 100)
	final := f.checkInvariants(ids, 10, false)
	t.Logf("rolling restart of 3 hubs: %d jobs, all succeeded, none run twice, every log whole", len(final))
}
