package agent

import (
	"slices"
	"time"
)

// Timing of the heartbeats that report a change of the lanes' states (a
// lane taken or freed, a LaneWatcher's browser restarting).
const (
	// laneReportDelay is how long a change waits before it is reported, so
	// that a burst — lanes starting for a burst of jobs, a restart's exit
	// and start — goes out as one heartbeat.
	laneReportDelay = 250 * time.Millisecond
	// laneReportGap is the least time between two such heartbeats, so that
	// a lane that crashes over and over cannot flood the hub; a change
	// inside the gap waits for its end (or rides on a regular heartbeat).
	laneReportGap = 2 * time.Second
)

// laneReport is what one link's hub was last told about the lanes'
// states, and the timer of the next report of a change. It belongs to
// the link's session goroutine (connect.go), like the heartbeat ticker, and
// needs no lock.
type laneReport struct {
	sent  []string    // hello's lane_states, then the last ones a heartbeat carried
	timer *time.Timer // armed while a change waits to be reported
	last  time.Time   // when a change was last reported
}

func newLaneReport(sent []string) *laneReport { return &laneReport{sent: sent} }

// changed arms the report of a change unless one is armed already (it will
// read the newest states when it fires).
func (r *laneReport) changed(now time.Time) {
	if r.timer != nil {
		return
	}
	wait := laneReportDelay
	if !r.last.IsZero() {
		wait = max(wait, r.last.Add(laneReportGap).Sub(now))
	}
	r.timer = time.NewTimer(wait)
}

// due delivers when an armed report is to be made; nil (never) otherwise.
func (r *laneReport) due() <-chan time.Time {
	if r.timer == nil {
		return nil
	}
	return r.timer.C
}

// fired disarms the report after due delivered.
func (r *laneReport) fired() { r.timer = nil }

// differs reports whether states is news to the hub.
func (r *laneReport) differs(states []string) bool { return !slices.Equal(states, r.sent) }

// reported records that the hub got states in a heartbeat at now.
func (r *laneReport) reported(states []string, now time.Time) {
	r.sent, r.last = states, now
}

// stop disarms the timer when the link ends.
func (r *laneReport) stop() {
	if r.timer != nil {
		r.timer.Stop()
		r.timer = nil
	}
}
