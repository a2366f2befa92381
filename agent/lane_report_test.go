package agent

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/messages"
)

// watchedLanes is a simulated driver whose lanes the test marks as
// restarting, as a chromium lane is while its browser (re)starts.
type watchedLanes struct {
	SimulatedDriver
	changes chan struct{}

	mu         sync.Mutex
	restarting map[int]bool
}

var (
	_ LaneWatcher = (*watchedLanes)(nil)
	_ LaneStater  = (*watchedLanes)(nil)
)

func newWatchedLanes() *watchedLanes {
	return &watchedLanes{changes: make(chan struct{}, 1), restarting: map[int]bool{}}
}

func (d *watchedLanes) LaneState(lane int) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.restarting[lane] {
		return messages.LaneRestarting
	}
	return ""
}

func (d *watchedLanes) LaneChanges() <-chan struct{} { return d.changes }

// set marks a lane restarting (or not) and signals it, as a LaneWatcher does.
func (d *watchedLanes) set(lane int, restarting bool) {
	d.mu.Lock()
	d.restarting[lane] = restarting
	d.mu.Unlock()
	select {
	case d.changes <- struct{}{}:
	default:
	}
}

// laneHeartbeats returns the heartbeats carrying lane_states that arrived
// at or after mark.
func laneHeartbeats(h *fakeHub, mark int) []messages.Frame {
	var out []messages.Frame
	for _, rf := range h.all() {
		if rf.n >= mark && rf.f.Type == messages.TypeHeartbeat && rf.f.LaneStates != nil {
			out = append(out, rf.f)
		}
	}
	return out
}

// TestLaneChangeIsReportedSoon: hello carries the lanes' states as they
// are; a change — the driver restarting a lane, a job taking one — reaches
// the hub in a heartbeat within moments, not at the next regular heartbeat
// (a minute away here); a burst of changes is one heartbeat, sent no sooner
// than laneReportGap after the previous report; no heartbeat carries lane
// addresses.
func TestLaneChangeIsReportedSoon(t *testing.T) {
	t.Parallel()
	hub := newFakeHub(t)
	hub.heartbeatMS = 60_000 // before any link: no regular heartbeat in this test
	drv := newWatchedLanes()
	drv.set(0, true)
	<-drv.changes // a change before Run is in hello, not a reason for a heartbeat
	setup(t, Config{Lanes: 2, DriverImpl: drv}, hub)

	hello := hub.waitType(messages.TypeHello).f
	require.Equal(t, []string{messages.LaneRestarting, messages.LaneIdle}, hello.LaneStates)

	mark := hub.mark()
	changed := time.Now()
	drv.set(0, false)
	hub.assign("j-slow", `{"sleep_ms":60000}`)
	hub.waitFor(isJob("j-slow", messages.TypeJobStarted), "j-slow started")
	hb := hub.heartbeatAfter(mark)
	first := time.Now()
	require.Equal(t, []string{messages.LaneJob, messages.LaneIdle}, hb.LaneStates, "lane 0 back up and taken by the job (hint-less: never used, so free the longest)")
	require.Nil(t, hb.LaneURLs)
	require.Less(t, first.Sub(changed), 5*time.Second, "reported at once, not at the 60 s heartbeat")

	// A burst, like a lane restarting over and over.
	mark = hub.mark()
	for i := range 21 {
		drv.set(1, i%2 == 0)
	}
	want := []string{messages.LaneJob, messages.LaneRestarting}
	hb = hub.heartbeatAfter(mark)
	second := time.Now()
	require.Equal(t, want, hb.LaneStates, "the burst is reported with its final states")
	require.GreaterOrEqual(t, second.Sub(first), laneReportGap/2, "a second report came too soon after the first")
	// A report per change would have sent the earlier states first, on the
	// same socket, so they would be here already.
	require.Len(t, laneHeartbeats(hub, mark), 1, "one heartbeat for the whole burst")
}
