package api

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPressureRule: busy from 80 % of limits.max_queued, with no worker,
// or with a queue and no free lane; ok otherwise, retry_after_s 0.
func TestPressureRule(t *testing.T) {
	for _, c := range []struct {
		name      string
		l         Load
		maxQueued int
		since     int
		reason    string
	}{
		{"idle", Load{WorkersAlive: 1, LanesFree: 4}, 100, 0, ""},
		{"queue with a free lane", Load{Queued: 10, WorkersAlive: 1, LanesFree: 1}, 100, 0, ""},
		{"no cap", Load{Queued: 1e6, WorkersAlive: 1, LanesFree: 1}, 0, 0, ""},
		{"near full", Load{Queued: 79, WorkersAlive: 1, LanesFree: 1}, 100, 1, "queue_near_full"},
		{"no workers", Load{}, 100, 0, "no_workers"},
		{"queue, no free lane", Load{Queued: 1, WorkersAlive: 2, LanesBusy: 8}, 100, 0, "no_free_lane"},
		{"no queue, no free lane", Load{WorkersAlive: 2, LanesBusy: 8}, 100, 0, ""},
	} {
		p := pressure(c.l, c.maxQueued, c.since)
		require.Equal(t, c.reason == "", p.OK, c.name)
		require.Equal(t, c.reason, p.Reason, c.name)
		require.Equal(t, c.l.Queued+c.since, p.Queued, c.name)
		if p.OK {
			require.Zero(t, p.RetryAfterS, c.name)
		} else {
			require.Equal(t, queueRetryAfter, p.RetryAfterS, c.name)
		}
	}
}
