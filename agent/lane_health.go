package agent

import (
	"time"

	"github.com/paprika-hub/paprika/messages"
)

// HealthReporter is implemented by a Driver that measures its lanes'
// browser health (health-aware placement): the hub counts a lane past a
// threshold as unavailable and skips a worker short of /dev/shm. The
// simulated driver measures nothing and does not implement it.
type HealthReporter interface {
	// Health measures every lane (one entry per lane, indexed by lane) and
	// /dev/shm's free MiB (nil when unknown). It is called from a link's
	// goroutine, at most every messages.HealthReportGap, never under the
	// agent's lock; it may read /proc but must not block on a browser.
	Health() DriverHealth
}

// DriverHealth is one reading of a HealthReporter.
type DriverHealth struct {
	Lanes     []messages.LaneHealth
	ShmFreeMB *int64
}

// Changes smaller than these are not news to the hub: memory moves all the
// time, and a report of every move would be a heartbeat every 2 s.
const (
	healthRSSStepMB = 32
	healthShmStepMB = 16
)

// healthReport is what one link's hub was last told of the driver's
// health, and the newest reading. It belongs to the link's session
// goroutine (connect.go), like laneReport. A nil *healthReport (a driver
// without health) does nothing.
type healthReport struct {
	d      HealthReporter
	tick   *time.Ticker
	latest DriverHealth
	sent   []messages.LaneHealth
	shm    *int64 // the shm figure last sent
}

// newHealthReport takes a first reading, for hello; nil when the driver
// reports no health.
func (a *Agent) newHealthReport() *healthReport {
	d, ok := a.driver.(HealthReporter)
	if !ok {
		return nil
	}
	r := &healthReport{d: d, tick: time.NewTicker(messages.HealthReportGap)}
	r.latest = d.Health()
	return r
}

// hello puts the first reading into hello's frame.
func (r *healthReport) hello(f *messages.Frame) {
	if r == nil {
		return
	}
	f.LaneHealth = r.latest.Lanes
	if f.Stats != nil {
		f.Stats.ShmFreeMB = r.latest.ShmFreeMB
	}
	r.sent, r.shm = r.latest.Lanes, r.latest.ShmFreeMB
}

// due delivers every messages.HealthReportGap; nil (never) without health.
func (r *healthReport) due() <-chan time.Time {
	if r == nil {
		return nil
	}
	return r.tick.C
}

// sample takes a new reading and reports whether it is news to the hub.
func (r *healthReport) sample() bool {
	r.latest = r.d.Health()
	return r.differs()
}

func (r *healthReport) differs() bool {
	return lanesDiffer(r.sent, r.latest.Lanes) || shmDiffers(r.shm, r.latest.ShmFreeMB)
}

// attach puts the newest reading into a heartbeat: /dev/shm always (stats
// go whole with every heartbeat), lane_health only when it is news.
func (r *healthReport) attach(f *messages.Frame) {
	if r == nil {
		return
	}
	f.Stats.ShmFreeMB = r.latest.ShmFreeMB
	if lanesDiffer(r.sent, r.latest.Lanes) {
		f.LaneHealth = r.latest.Lanes
	}
}

// reported records that the hub got f's health.
func (r *healthReport) reported(f *messages.Frame) {
	if r == nil {
		return
	}
	r.shm = f.Stats.ShmFreeMB
	if f.LaneHealth != nil {
		r.sent = f.LaneHealth
	}
}

func (r *healthReport) stop() {
	if r != nil {
		r.tick.Stop()
	}
}

// lanesDiffer: a count changed, or a lane's RSS moved by a step or more.
func lanesDiffer(a, b []messages.LaneHealth) bool {
	if len(a) != len(b) {
		return true
	}
	for i := range a {
		if a[i].Crashes10m != b[i].Crashes10m || a[i].Restarts10m != b[i].Restarts10m ||
			absDiff(a[i].RSSMB, b[i].RSSMB) >= healthRSSStepMB {
			return true
		}
	}
	return false
}

func shmDiffers(a, b *int64) bool {
	if a == nil || b == nil {
		return (a == nil) != (b == nil)
	}
	return absDiff(*a, *b) >= healthShmStepMB
}

func absDiff(a, b int64) int64 {
	if a > b {
		return a - b
	}
	return b - a
}
