package agent

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/messages"
	"github.com/paprika-hub/paprika/persistence"
)

func TestLanePool(t *testing.T) {
	t.Parallel()
	p := newLanePool([]string{"sim://w/lane/0", "sim://w/lane/1", "sim://w/lane/2"})
	l, _, ok := p.acquire("sim://w/lane/2", messages.LaneJob, nil)
	require.True(t, ok)
	require.Equal(t, 2, l, "a free hinted lane is taken")
	l, _, ok = p.acquire("2", messages.LaneSession, nil)
	require.True(t, ok)
	require.Equal(t, 0, l, "a busy hinted lane falls back to the lane free the longest (never used: the lowest)")
	require.Equal(t, messages.LaneSession, p.state(0))
	require.Equal(t, messages.LaneIdle, p.state(1))
	require.Equal(t, messages.LaneJob, p.state(2))
	l, _, ok = p.acquire("1", messages.LaneJob, nil)
	require.True(t, ok)
	require.Equal(t, 1, l, "hint by index")
	_, _, ok = p.acquire("", messages.LaneJob, nil)
	require.False(t, ok, "all busy")
	require.Equal(t, 3, p.inUse())
	p.release(1)
	p.release(1) // twice is harmless
	require.Equal(t, 2, p.inUse())
	require.Equal(t, messages.LaneIdle, p.state(1))
	l, _, ok = p.acquire("bogus", messages.LaneJob, nil)
	require.True(t, ok)
	require.Equal(t, 1, l)
}

func TestBackoffGrowsWithJitterAndCaps(t *testing.T) {
	t.Parallel()
	// The reconnect loop counts failures and starts over at 0 after a link
	// that worked.
	want := []float64{0.2, 0.4, 0.8, 1.6, 3.2, 5, 5, 5}
	for i, w := range want {
		d := reconnectBackoff.Delay(i).Seconds()
		require.GreaterOrEqual(t, d, w/2-1e-9, "attempt %d", i)
		require.LessOrEqual(t, d, w+1e-9, "attempt %d", i)
	}
	require.LessOrEqual(t, reconnectBackoff.Delay(0), backoffMin)
}

func TestLinkURL(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"http://hub:8080":         "ws://hub:8080/workers/w1/link",
		"https://hub.example/":    "wss://hub.example/workers/w1/link",
		"http://hub:8080/paprika": "ws://hub:8080/paprika/workers/w1/link",
		"ws://10.0.0.1:80":        "ws://10.0.0.1:80/workers/w1/link",
	}
	for in, want := range cases {
		got, err := linkURL(in, "w1")
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	for _, bad := range []string{"hub:8080", "ftp://hub", "http://", "::"} {
		_, err := linkURL(bad, "w1")
		require.Error(t, err, bad)
	}
}

// TestLanePoolTakesTheLaneFreeTheLongest: with no hint, the lane freed
// first is taken first (lanes never used, lowest first, before any), so
// a lane freed while its worker's others are refilled is not passed over
// for lower ones freed after it; a skipped lane still comes last.
func TestLanePoolTakesTheLaneFreeTheLongest(t *testing.T) {
	t.Parallel()
	p := newLanePool([]string{"sim://w/lane/0", "sim://w/lane/1", "sim://w/lane/2", "sim://w/lane/3"})
	for want := range 4 {
		l, _, ok := p.acquire("", messages.LaneJob, nil)
		require.True(t, ok)
		require.Equal(t, want, l, "never-used lanes go lowest first")
	}
	p.release(3)
	p.release(1)
	p.release(0)
	for _, want := range []int{3, 1, 0} {
		l, _, ok := p.acquire("", messages.LaneJob, nil)
		require.True(t, ok)
		require.Equal(t, want, l, "the lane freed first is taken first, not the lowest")
	}
	p.release(2)
	p.release(0)
	l, _, ok := p.acquire("0", messages.LaneSession, nil)
	require.True(t, ok)
	require.Equal(t, 0, l, "a free hinted lane still wins")
	l, _, _ = p.acquire("", messages.LaneJob, nil)
	require.Equal(t, 2, l)

	p.release(1)
	p.release(3)
	_, _ = p.setSkips([]messages.LaneSkip{{Lane: 1, Reason: persistence.HealthSkipRSS}})
	l, why, _ := p.acquire("", messages.LaneJob, nil)
	require.Equal(t, 3, l, "a lane the hub skips loses though it was freed first")
	require.Empty(t, why)
	l, why, _ = p.acquire("", messages.LaneJob, nil)
	require.Equal(t, 1, l)
	require.Equal(t, persistence.HealthSkipRSS, why)
}

// TestLanePoolPassesOverARestartingLane: a lane whose browser is being
// restarted is taken only when no other healthy lane is free, though it
// was free the longest or hinted; it still comes before a skipped one.
func TestLanePoolPassesOverARestartingLane(t *testing.T) {
	t.Parallel()
	p := newLanePool([]string{"sim://w/lane/0", "sim://w/lane/1", "sim://w/lane/2"})
	restartingLane := stater{0: messages.LaneRestarting}
	l, _, ok := p.acquire("", messages.LaneJob, restartingLane)
	require.True(t, ok)
	require.Equal(t, 1, l, "lane 0, never used, is restarting")
	l, _, _ = p.acquire("0", messages.LaneJob, restartingLane)
	require.Equal(t, 2, l, "a hinted lane restarting loses to a free one up")
	_, _ = p.setSkips([]messages.LaneSkip{{Lane: 1, Reason: persistence.HealthSkipRSS}})
	p.release(1)
	l, why, _ := p.acquire("", messages.LaneJob, restartingLane)
	require.Equal(t, 0, l, "restarting, but not skipped: before the skipped lane")
	require.Empty(t, why)
	p.release(0)
	restartingLane[0] = ""
	l, _, _ = p.acquire("", messages.LaneJob, restartingLane)
	require.Equal(t, 0, l, "up again, and free before lane 1 (skipped)")
}

// stater is a LaneStater of fixed states by lane.
type stater map[int]string

func (s stater) LaneState(lane int) string { return s[lane] }
