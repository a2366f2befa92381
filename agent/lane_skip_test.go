package agent

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/internal/syncbuf"
	"github.com/paprika-hub/paprika/messages"
	"github.com/paprika-hub/paprika/persistence"
)

// TestLanePoolPrefersLanesNotSkipped: a free lane the hub does not skip
// wins over a hinted or lower skipped one; a skipped lane is taken only
// when no other is free (and says why); lanes past the pool are ignored.
func TestLanePoolPrefersLanesNotSkipped(t *testing.T) {
	t.Parallel()
	p := newLanePool([]string{"sim://w/lane/0", "sim://w/lane/1", "sim://w/lane/2"})
	changed, ignored := p.setSkips([]messages.LaneSkip{{Lane: 0, Reason: persistence.HealthSkipCrashes}, {Lane: 7, Reason: persistence.HealthSkipRSS}})
	require.True(t, changed)
	require.Equal(t, 1, ignored, "lane 7 is not this worker's")
	require.Equal(t, []string{"0:lane_crashes"}, p.skipped())
	changed, _ = p.setSkips([]messages.LaneSkip{{Lane: 0, Reason: persistence.HealthSkipCrashes}})
	require.False(t, changed, "the same set again")

	l, why, ok := p.acquire("", messages.LaneJob, nil)
	require.True(t, ok)
	require.Equal(t, 1, l, "the lowest lane is skipped: the next one")
	require.Empty(t, why)
	l, why, ok = p.acquire("0", messages.LaneJob, nil)
	require.True(t, ok)
	require.Equal(t, 2, l, "a skipped hinted lane loses to a healthy free one")
	require.Empty(t, why)
	l, why, ok = p.acquire("", messages.LaneSession, nil)
	require.True(t, ok, "the skipped lane is the last free one: taken, not refused")
	require.Equal(t, 0, l)
	require.Equal(t, persistence.HealthSkipCrashes, why)
	_, _, ok = p.acquire("", messages.LaneJob, nil)
	require.False(t, ok, "all busy")

	p.release(1)
	p.release(0)
	l, why, ok = p.acquire("", messages.LaneJob, nil)
	require.True(t, ok)
	require.Equal(t, 1, l, "the healthy lane freed later still comes first")
	require.Empty(t, why)

	// A skipped hinted lane is the fallback of choice.
	p.release(1)
	p.release(2)
	_, _ = p.setSkips([]messages.LaneSkip{{Lane: 1, Reason: persistence.HealthSkipRSS}, {Lane: 2, Reason: persistence.HealthSkipRestarts}})
	_, _, _ = p.acquire("", messages.LaneJob, nil) // lane 0, the one healthy lane
	l, why, ok = p.acquire("2", messages.LaneJob, nil)
	require.True(t, ok)
	require.Equal(t, 2, l)
	require.Equal(t, persistence.HealthSkipRestarts, why)

	changed, _ = p.setSkips(nil)
	require.True(t, changed)
	require.Empty(t, p.skipped())
}

// TestLaneSkipSteersJobs, over a link: after lane_skip names lane 0 the
// agent puts jobs on lanes 1 and 2 and only a third on lane 0 (logged,
// not rejected). A malformed lane_skip is logged and dropped: the link
// stays and the last good set holds. An empty lane_skip clears the set,
// and so does a new link (its hub says which lanes it skips).
func TestLaneSkipSteersJobs(t *testing.T) {
	t.Parallel()
	logs := &syncbuf.Buffer{}
	hub, _ := linked(t, Config{Lanes: 3, Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	lane := func(id string) string {
		t.Helper()
		return hub.waitFor(isJob(id, messages.TypeJobStarted), id+" started").f.Lane
	}
	cancel := func(ids ...string) {
		t.Helper()
		for _, id := range ids {
			hub.send(messages.Frame{Type: messages.TypeCancelJob, JobID: id})
			require.Equal(t, ReasonCanceled, hub.waitFor(isJob(id, messages.TypeJobFailed), id+" canceled").f.Reason)
		}
	}
	hub.send(messages.Frame{Type: messages.TypeLaneSkip, SkipLanes: []messages.LaneSkip{{Lane: 0, Reason: persistence.HealthSkipCrashes}}})
	hub.assign("a", `{"sleep_ms": 60000}`)
	require.Equal(t, "sim://w5150/lane/1", lane("a"))
	hub.assign("b", `{"sleep_ms": 60000}`)
	require.Equal(t, "sim://w5150/lane/2", lane("b"))
	hub.assign("c", `{"sleep_ms": 60000}`)
	require.Equal(t, "sim://w5150/lane/0", lane("c"), "the skipped lane, the only free one, still takes the job")
	require.Eventually(t, func() bool {
		return strings.Contains(logs.String(), "job runs on a lane the hub skips") && strings.Contains(logs.String(), "hub skips lanes for their health")
	}, waitTimeout, 10*time.Millisecond)
	cancel("a", "b", "c")

	hub.sendRaw([]byte(`{"type":"lane_skip","skip_lanes":[{"lane":-1,"reason":"lane_rss"}]}`))
	hub.assign("d", `{"sleep_ms": 60000}`)
	require.Equal(t, "sim://w5150/lane/1", lane("d"), "the bad frame changed nothing")
	require.True(t, strings.Contains(logs.String(), "bad frame from hub"), "a bad lane_skip is logged")
	require.Equal(t, 1, hub.connCount(), "a bad lane_skip keeps the link")
	cancel("d")

	// Lanes were freed in the order 2, 0, 1 (c's cancel freed 0, d's 1):
	// with no skip, a free lane is taken in that order, so the second job
	// shows whether lane 0 is still skipped (it would go to 1).
	hub.send(messages.Frame{Type: messages.TypeLaneSkip})
	hub.assign("e1", `{"sleep_ms": 60000}`)
	require.Equal(t, "sim://w5150/lane/2", lane("e1"), "the lane free the longest")
	hub.assign("e2", `{"sleep_ms": 60000}`)
	require.Equal(t, "sim://w5150/lane/0", lane("e2"), "an empty lane_skip clears the set")
	cancel("e1", "e2") // freed now: 1, 2, 0

	hub.send(messages.Frame{Type: messages.TypeLaneSkip, SkipLanes: []messages.LaneSkip{{Lane: 1, Reason: persistence.HealthSkipRSS}}})
	hub.assign("f", `{"lines": 0}`)
	require.Equal(t, "sim://w5150/lane/2", lane("f"), "lane 1, free the longest, is skipped")
	hub.waitFor(isJob("f", messages.TypeJobDone), "f done") // freed now: 1, 0, 2
	hub.dropAll()
	hub.waitFor(func(rf recvFrame) bool { return rf.conn == 1 && rf.f.Type == messages.TypeHello }, "hello on a new link")
	hub.assign("g", `{"lines": 0}`)
	require.Equal(t, "sim://w5150/lane/1", lane("g"), "a new link starts with no lane skipped")
}
