package grains

import (
	"math/rand/v2"
	"time"

	"github.com/paprika-hub/paprika/messages"
)

// Candidate is the scheduler's view of one worker, as pick_worker reads it.
type Candidate struct {
	ID            string
	Status        string // active, drain, standby
	Connected     bool
	LastSeen      time.Time
	MaxConcurrent int
	InFlight      int
	Lanes         int  // lane URLs reported
	HasBrowser    bool // a single-browser URL reported
	DiskPct       float64
	Drivers       []string
	// Declares: the worker declared its modes in hello and runs exactly
	// Modes; else it runs the built-in modes its drivers allow.
	Declares bool
	Modes    map[string]struct{}
	// Health (health.go): lanes past a health threshold, their commonest
	// reason, and /dev/shm under the minimum.
	UnhealthyLanes  int
	UnhealthyReason string
	ShmLow          bool
	unhealthyIdx    int // UnhealthyReason's index in persistence.HealthSkipReasons
	// LinkHub is the cluster address of the hub holding the worker's
	// socket ("" when unknown): PickWorkerNear's preference.
	LinkHub string

	// scheduler bookkeeping: InFlight = reported + placing
	reported int       // in_flight as the worker grain last reported it
	placing  int       // placements sent but not yet settled
	freedAt  time.Time // last report of a lane freed, or of becoming eligible
}

// PickRule holds the thresholds of pick_worker (DESIGN.md, "Scheduling").
type PickRule struct {
	AliveWindow    time.Duration // heartbeat within this window (120 s)
	DiskExcludePct float64       // refuse workers at or above this disk use (90)
	Skips          *HealthSkips  // counts health skips when set (health.go)
}

// Eligible reports whether c may take a job of the given mode now. Each
// filter prevents an incident the source recorded: workers without lanes
// answered three 502s in a row; full disks refused jobs after a wasted round
// trip; stale heartbeats hid dead machines.
func (r PickRule) Eligible(c *Candidate, mode string, now time.Time) bool {
	if !c.Connected || now.Sub(c.LastSeen) > r.AliveWindow {
		return false
	}
	if c.Status != WorkerActive {
		return false
	}
	if c.InFlight >= c.MaxConcurrent {
		return false
	}
	if c.Lanes < 1 && !c.HasBrowser {
		return false
	}
	if c.DiskPct >= r.DiskExcludePct {
		return false
	}
	// runsMode, spelled out so that nothing is called per candidate on
	// pick_worker's hot path (a noop job on a worker declaring nothing).
	if c.Declares {
		if !declaresMode(c.Modes, mode) {
			return false
		}
	} else if d := messages.ModeDriver(mode); d != "" && !hasDriverFor(c.Drivers, mode, d) {
		return false
	}
	// Last, so that only a worker that could otherwise run the job counts
	// as skipped for its health.
	return (!c.ShmLow && c.UnhealthyLanes == 0) || r.healthOK(c)
}

// better orders candidates by (in_flight, -max_concurrent): the least loaded
// first, and among equals the one with more capacity.
func better(a, b *Candidate) bool {
	if a.InFlight != b.InFlight {
		return a.InFlight < b.InFlight
	}
	return a.MaxConcurrent > b.MaxConcurrent
}

// PickWorker returns the best eligible candidate or nil. Ties are broken at
// random (reservoir sampling over the tied best), because a deterministic
// order piles every idle job onto the first worker. One pass, no allocation.
func (r PickRule) PickWorker(cands []*Candidate, mode string, now time.Time, rng *rand.Rand) *Candidate {
	return r.PickWorkerNear(cands, mode, now, rng, "")
}

// PickWorkerNear is PickWorker breaking ties toward the hub at near (the
// job grain's): among the tied best, one whose socket is on that hub if
// there is any, at random among those, else at random among all. The rank
// — (in_flight, -max_concurrent) — is never overruled, so no worker takes
// more than an equal share for being near; what being near saves is the
// cluster hop of the job's job_started and job_done (the link sends them
// to the job grain on its own hub). With near == "" or no candidate on
// that hub it draws exactly as PickWorker always has.
func (r PickRule) PickWorkerNear(cands []*Candidate, mode string, now time.Time, rng *rand.Rand, near string) *Candidate {
	var best, bestNear *Candidate
	ties, nearTies := 0, 0
	for _, c := range cands {
		if !r.Eligible(c, mode, now) {
			continue
		}
		isNear := near != "" && c.LinkHub == near
		switch {
		case best == nil || better(c, best):
			best, ties = c, 1
			bestNear, nearTies = nil, 0
			if isNear {
				bestNear, nearTies = c, 1
			}
		case !better(best, c): // equal rank
			ties++
			if rng.IntN(ties) == 0 {
				best = c
			}
			if isNear {
				nearTies++
				if rng.IntN(nearTies) == 0 {
					bestNear = c
				}
			}
		}
	}
	if bestNear != nil {
		return bestNear
	}
	return best
}
