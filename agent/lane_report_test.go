package agent

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/messages"
)

// watchedLanes is a simulated driver whose lane addresses the test changes,
// as a chromium lane's change when its browser starts, restarts or exits.
type watchedLanes struct {
	SimulatedDriver
	changes chan struct{}

	mu   sync.Mutex
	urls map[int]string // lanes with a live address; the others have sim://
}

var _ LaneWatcher = (*watchedLanes)(nil)

func newWatchedLanes() *watchedLanes {
	return &watchedLanes{changes: make(chan struct{}, 1), urls: map[int]string{}}
}

func (d *watchedLanes) LaneURL(workerID string, lane int) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if u, ok := d.urls[lane]; ok {
		return u
	}
	return d.SimulatedDriver.LaneURL(workerID, lane)
}

func (d *watchedLanes) LaneChanges() <-chan struct{} { return d.changes }

// set changes a lane's address and signals it, as a LaneWatcher does.
func (d *watchedLanes) set(lane int, url string) {
	d.mu.Lock()
	d.urls[lane] = url
	d.mu.Unlock()
	select {
	case d.changes <- struct{}{}:
	default:
	}
}

// laneHeartbeats returns the heartbeats carrying lane_urls that arrived at
// or after mark.
func laneHeartbeats(h *fakeHub, mark int) []messages.Frame {
	var out []messages.Frame
	for _, rf := range h.all() {
		if rf.n >= mark && rf.f.Type == messages.TypeHeartbeat && rf.f.LaneURLs != nil {
			out = append(out, rf.f)
		}
	}
	return out
}

// TestLaneChangeIsReportedSoon: hello carries the lanes' addresses as they
// are; a change reaches the hub in a heartbeat within moments, not at the
// next regular heartbeat (a minute away here); a burst of changes is one
// heartbeat, sent no sooner than laneReportGap after the previous report.
func TestLaneChangeIsReportedSoon(t *testing.T) {
	t.Parallel()
	hub := newFakeHub(t)
	hub.heartbeatMS = 60_000 // before any link: no regular heartbeat in this test
	drv := newWatchedLanes()
	drv.set(0, "ws://127.0.0.1:1/devtools/browser/a")
	<-drv.changes // a change before Run is in hello, not a reason for a heartbeat
	setup(t, Config{Lanes: 2, DriverImpl: drv}, hub)

	hello := hub.waitType(messages.TypeHello).f
	require.Equal(t, []string{"ws://127.0.0.1:1/devtools/browser/a", "sim://w5150/lane/1"}, hello.Capabilities.LaneURLs)

	mark := hub.mark()
	changed := time.Now()
	drv.set(1, "ws://127.0.0.1:2/devtools/browser/b")
	hb := hub.heartbeatAfter(mark)
	first := time.Now()
	require.Equal(t, []string{"ws://127.0.0.1:1/devtools/browser/a", "ws://127.0.0.1:2/devtools/browser/b"}, hb.LaneURLs)
	require.Less(t, first.Sub(changed), 5*time.Second, "reported at once, not at the 60 s heartbeat")

	// A burst, like a lane restarting over and over.
	mark = hub.mark()
	var last string
	for i := range 20 {
		last = fmt.Sprintf("ws://127.0.0.1:3/devtools/browser/c%d", i)
		drv.set(0, last)
	}
	want := []string{last, "ws://127.0.0.1:2/devtools/browser/b"}
	hb = hub.heartbeatAfter(mark)
	second := time.Now()
	require.Equal(t, want, hb.LaneURLs, "the burst is reported with its final addresses")
	require.GreaterOrEqual(t, second.Sub(first), laneReportGap/2, "a second report came too soon after the first")
	// A report per change would have sent the earlier addresses first, on
	// the same socket, so they would be here already.
	require.Len(t, laneHeartbeats(hub, mark), 1, "one heartbeat for the whole burst")
}
