package grains

import (
	"log/slog"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/paprika-hub/paprika/messages"
	"github.com/paprika-hub/paprika/persistence"
)

// HealthRule holds the thresholds of health-aware placement (README,
// "Health-aware placement"); 0 turns a threshold off. The worker grain
// judges each lane with it when a report arrives, so pick_worker reads two
// precomputed fields per candidate and never a lane list.
type HealthRule struct {
	MaxLaneRSSMB       int64 // a lane whose browser RSS is over this takes no work
	MaxLaneCrashes10m  int   // ... or whose renderer crashes in 10 min reached this
	MaxLaneRestarts10m int   // ... or whose restarts in 10 min reached this
	MinShmFreeMB       int64 // a worker whose /dev/shm free is under this takes no work
}

// laneSkip is why lane h takes no work under r, or "" when it may.
func (r HealthRule) laneSkip(h *persistence.LaneHealth) string {
	switch {
	case h == nil:
		return ""
	case r.MaxLaneCrashes10m > 0 && h.Crashes10m >= r.MaxLaneCrashes10m:
		return persistence.HealthSkipCrashes
	case r.MaxLaneRestarts10m > 0 && h.Restarts10m >= r.MaxLaneRestarts10m:
		return persistence.HealthSkipRestarts
	case r.MaxLaneRSSMB > 0 && h.RSSMB > r.MaxLaneRSSMB:
		return persistence.HealthSkipRSS
	}
	return ""
}

// shmLow: the worker reported /dev/shm free under the minimum. A worker
// that reports none (the simulated driver) is never skipped for it.
func (r HealthRule) shmLow(free *int64) bool {
	return r.MinShmFreeMB > 0 && free != nil && *free < r.MinShmFreeMB
}

// judge marks each lane's skip reason and the worker's, and returns the
// count of unhealthy lanes with their commonest reason (the first
// threshold's on a tie): what the scheduler's candidate carries.
func (r HealthRule) judge(w *persistence.WorkerInfo) (unhealthy int, reason string) {
	var by [4]int
	for i := range w.Lanes {
		l := &w.Lanes[i]
		l.Skipped = r.laneSkip(l.Health)
		if l.Skipped == "" {
			continue
		}
		unhealthy++
		for k, name := range persistence.HealthSkipReasons {
			if name == l.Skipped {
				by[k]++
			}
		}
	}
	best := 0
	for k := range by {
		if by[k] > by[best] {
			best = k
		}
	}
	if unhealthy > 0 {
		reason = persistence.HealthSkipReasons[best]
	}
	w.Skipped = ""
	if r.shmLow(w.ShmFreeMB) {
		w.Skipped = persistence.HealthSkipShm
	}
	return unhealthy, reason
}

// HealthSkips counts pick_worker's passes over a worker for its health, by
// reason (index in persistence.HealthSkipReasons). Atomic so that a
// benchmark or test may share one; the scheduler flushes them into the
// paprika_sched_health_skips_total counter after each pass.
type HealthSkips [4]atomic.Int64

// healthIndex is reason's index in persistence.HealthSkipReasons.
func healthIndex(reason string) int {
	for k, name := range persistence.HealthSkipReasons {
		if name == reason {
			return k
		}
	}
	return 0
}

// healthOK is the health filter of Eligible, called only for a candidate
// with a health mark: a worker short of /dev/shm is skipped like a full
// disk; a worker's unhealthy lanes count as taken: the worker picks its
// own lane for a job, steered off them by lane_skip (syncSkips), so only
// its healthy lanes are capacity.
func (r PickRule) healthOK(c *Candidate) bool {
	switch {
	case c.ShmLow:
		r.countSkip(0)
		return false
	case c.InFlight+c.UnhealthyLanes >= c.MaxConcurrent:
		r.countSkip(c.unhealthyIdx)
		return false
	}
	return true
}

func (r PickRule) countSkip(k int) {
	if r.Skips != nil {
		r.Skips[k].Add(1)
	}
}

// initHealthSkips gives every reason its series from the start.
func (s *schedulerGrain) initHealthSkips() {
	for _, r := range persistence.HealthSkipReasons {
		s.deps.Metrics.SchedHealthSkips.WithLabelValues(r)
	}
}

// flushHealthSkips moves the pass's counts into the metric (off pick's
// hot path: one counter add per reason per pass, not per skip).
func (s *schedulerGrain) flushHealthSkips() {
	for k := range s.rule.Skips {
		if n := s.rule.Skips[k].Swap(0); n > 0 {
			s.deps.Metrics.SchedHealthSkips.WithLabelValues(persistence.HealthSkipReasons[k]).Add(float64(n))
		}
	}
}

// applyHealth takes a report's lane_health, when it has one entry per lane
// (absent means unchanged; a list of another length is not trusted to
// resize the worker), and the /dev/shm figure of its stats.
func (g *workerGrain) applyHealth(lanes []persistence.LaneHealth, st *messages.Stats) {
	if len(lanes) > 0 && len(lanes) == len(g.info.Lanes) {
		for i := range lanes {
			h := lanes[i]
			g.info.Lanes[i].Health = &h
		}
	}
	if st != nil {
		g.info.ShmFreeMB = st.ShmFreeMB
	}
}

// carryHealth keeps the lanes' last health across a rebuild of the lane
// list for new states (lane_health comes only when it changed).
func carryHealth(from, to []persistence.LaneStatus) {
	if len(from) != len(to) {
		return
	}
	for i := range to {
		to[i].Health = from[i].Health
	}
}

// judgeHealth marks the lanes' and the worker's skip reasons (shown by GET
// /workers) and puts what placement needs of them into st.
func (g *workerGrain) judgeHealth(st *messages.SchedWorkerState) {
	n, reason := g.deps.Timing.Health.judge(&g.info)
	st.UnhealthyLanes, st.UnhealthyReason = int32(n), reason
	st.ShmLow = g.info.Skipped == persistence.HealthSkipShm
}

// skipSent is what a worker was last told of its skipped lanes (lane_skip),
// so that the frame goes only when the set changed: a worker starts each
// link with none, and an activation that took over a link it did not
// accept does not know what the worker holds.
type skipSent struct {
	conn    *actor.PID // the link told; nil: none yet
	reasons []string   // per lane, as sent; shorter means "" for the rest
}

// newLink records a link the worker just opened: it skips nothing yet.
func (s *skipSent) newLink(conn *actor.PID) { s.conn, s.reasons = conn, s.reasons[:0] }

// differs: lanes' skip marks are not what was sent.
func (s *skipSent) differs(lanes []persistence.LaneStatus) bool {
	for i := range lanes {
		sent := ""
		if i < len(s.reasons) {
			sent = s.reasons[i]
		}
		if sent != lanes[i].Skipped {
			return true
		}
	}
	for i := len(lanes); i < len(s.reasons); i++ {
		if s.reasons[i] != "" {
			return true
		}
	}
	return false
}

// syncSkips tells the worker which of its lanes placement skips (judged in
// publish) when that changed since it was last told, or when this
// activation does not know what the link was told (a restart, a move, a
// link adopted by a heartbeat): placement counts a sick lane as taken, but
// only the worker picks the lane a job runs on. Called after a hello or a
// heartbeat, the only reports that change health, never per job.
func (g *workerGrain) syncSkips(ctx actor.Context) {
	if g.conn == nil {
		return
	}
	unknown := !samePID(g.skips.conn, g.conn)
	if !unknown && !g.skips.differs(g.info.Lanes) {
		return
	}
	f := messages.Frame{Type: messages.TypeLaneSkip}
	reasons := g.skips.reasons[:0]
	for i := range g.info.Lanes {
		r := g.info.Lanes[i].Skipped
		reasons = append(reasons, r)
		if r != "" {
			f.SkipLanes = append(f.SkipLanes, messages.LaneSkip{Lane: i, Reason: r})
		}
	}
	g.skips.conn, g.skips.reasons = g.conn, reasons
	g.log.Info("telling the worker which lanes placement skips", slog.Int("skipped", len(f.SkipLanes)),
		slog.Int("lanes", len(g.info.Lanes)))
	g.send(ctx, f)
}
