package chromium

import (
	"sync"
	"time"

	"github.com/paprika-hub/paprika/agent"
	"github.com/paprika-hub/paprika/messages"
)

var _ agent.HealthReporter = (*Driver)(nil)

// healthWindow is how far back a lane's crashes and restarts count
// (crashes_10m, restarts_10m).
const healthWindow = 10 * time.Minute

// maxHealthEvents bounds the events a lane keeps of each kind: a lane
// that crashes more often than this in 10 minutes is past any threshold
// worth setting, and the memory stays fixed.
const maxHealthEvents = 256

// laneEvents are one lane's renderer crashes and browser restarts, as
// times, for the sliding window. Appended from the page's event loop and
// the releasing goroutine, read by Health: hence its own lock.
type laneEvents struct {
	mu                sync.Mutex
	crashes, restarts []time.Time
}

func (e *laneEvents) crash()   { e.add(&e.crashes) }
func (e *laneEvents) restart() { e.add(&e.restarts) }

func (e *laneEvents) add(list *[]time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	*list = append(*list, time.Now())
	if len(*list) > maxHealthEvents {
		*list = append((*list)[:0], (*list)[len(*list)-maxHealthEvents:]...)
	}
}

// counts prunes what is older than the window and counts the rest.
func (e *laneEvents) counts(now time.Time) (crashes, restarts int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	prune := func(list []time.Time) []time.Time {
		i := 0
		for i < len(list) && now.Sub(list[i]) > healthWindow {
			i++
		}
		return append(list[:0], list[i:]...)
	}
	e.crashes, e.restarts = prune(e.crashes), prune(e.restarts)
	return len(e.crashes), len(e.restarts)
}

// Health implements agent.HealthReporter: each lane's browser RSS (its
// process tree, from /proc: one pass for every lane), its renderer crashes
// and restarts in the last 10 minutes, and /dev/shm's free space.
func (d *Driver) Health() agent.DriverHealth {
	now := time.Now()
	roots := make([]int, len(d.lanes))
	out := make([]messages.LaneHealth, len(d.lanes))
	for i, l := range d.lanes {
		if b := l.browser(); b != nil && b.ctx.Err() == nil {
			roots[i] = b.pid
		}
		out[i].Crashes10m, out[i].Restarts10m = l.events.counts(now)
	}
	for i, kb := range treeRSSKB(roots) {
		out[i].RSSMB = min(kb/1024, messages.MaxLaneRSSMB)
	}
	h := agent.DriverHealth{Lanes: out}
	if free, ok := shmFreeMB(); ok {
		free = min(free, messages.MaxShmFreeMB)
		h.ShmFreeMB = &free
	}
	return h
}
