package api

import (
	"context"
	"net/http"
	"strconv"
	"time"
)

// Load is the fleet's load as the scheduler grain counts it (one per
// cluster, so every hub answers the same): GET /pressure and the queue
// and tenant quota checks of POST /jobs.
type Load struct {
	Queued int // queued jobs, placements in flight included
	// Scheduled counts jobs waiting for their run_at (delayed, or a retry
	// in its backoff): they count against limits.max_queued, so a delay
	// cannot get round the cap, but not as a queue waiting for a lane.
	Scheduled    int
	Running      int // lanes in use (jobs and sessions)
	LanesFree    int // lanes alive, active workers could take a job on now
	LanesBusy    int
	WorkersAlive int
	// Per tenant ("" = the default tenant); the scheduler leaves out the
	// smallest past 10,000 tenants.
	QueuedByTenant  map[string]int
	RunningByTenant map[string]int
}

// Pressure is the body of GET /pressure.
type Pressure struct {
	Queued       int  `json:"queued"`
	Scheduled    int  `json:"scheduled"`
	Running      int  `json:"running"`
	LanesFree    int  `json:"lanes_free"`
	LanesBusy    int  `json:"lanes_busy"`
	WorkersAlive int  `json:"workers_alive"`
	MaxQueued    int  `json:"max_queued"` // limits.max_queued; 0 = no cap
	RetryAfterS  int  `json:"retry_after_s"`
	OK           bool `json:"ok"`
	// Reason says why ok is false: "queue_near_full", "no_free_lane",
	// "no_workers" or "load_unknown".
	Reason string `json:"reason,omitempty"`
	// AsOf is when the scheduler was asked (the answer is at most
	// queueRefresh old).
	AsOf time.Time `json:"as_of"`
}

// pressureBusyFraction: past this share of limits.max_queued the fleet
// is busy (a load balancer sends new work elsewhere before the 429s).
const pressureBusyFraction = 0.8

// pressure judges a load. Busy (ok false) when the queue holds
// pressureBusyFraction of limits.max_queued or more, or jobs are queued
// while no lane is free (every submit would wait), or no worker is alive;
// retry_after_s is 0 when ok, else the queue_full Retry-After.
func pressure(l Load, maxQueued int, since int) Pressure {
	p := Pressure{Queued: l.Queued + since, Scheduled: l.Scheduled, Running: l.Running, LanesFree: l.LanesFree, LanesBusy: l.LanesBusy,
		WorkersAlive: l.WorkersAlive, MaxQueued: maxQueued, OK: true}
	switch {
	case maxQueued > 0 && float64(p.Queued+p.Scheduled) >= pressureBusyFraction*float64(maxQueued):
		p.OK, p.Reason = false, "queue_near_full"
	case p.WorkersAlive == 0:
		p.OK, p.Reason = false, "no_workers"
	case p.Queued > 0 && p.LanesFree == 0:
		p.OK, p.Reason = false, "no_free_lane"
	}
	if !p.OK {
		p.RetryAfterS = queueRetryAfter
	}
	return p
}

// getPressure answers GET /pressure: the object, or with ?probe=1 a plain
// "ok" (200) or "busy" (503, Retry-After) for load balancers.
func (s *Server) getPressure(w http.ResponseWriter, r *http.Request) {
	l, since, at, err := s.queue.load(r.Context(), s)
	var p Pressure
	if err != nil {
		p = Pressure{MaxQueued: s.limits.MaxQueued, Reason: "load_unknown", RetryAfterS: queueRetryAfter}
	} else {
		p = pressure(l, s.limits.MaxQueued, since)
	}
	p.AsOf = at.UTC()
	if r.URL.Query().Get("probe") != "" {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		if !p.OK {
			w.Header().Set("Retry-After", strconv.Itoa(p.RetryAfterS))
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte("busy\n"))
			return
		}
		_, _ = w.Write([]byte("ok\n"))
		return
	}
	status := http.StatusOK
	if !p.OK {
		w.Header().Set("Retry-After", strconv.Itoa(p.RetryAfterS))
	}
	writeJSON(w, status, p)
}

// load is the cached fleet load (refreshed at most once per queueRefresh,
// by one request while the others use the previous answer), the jobs this
// hub created since, and when it was read. An error (with a zero Load)
// only when it was never read.
func (g *queueGate) load(ctx context.Context, s *Server) (Load, int, time.Time, error) {
	g.mu.Lock()
	if time.Since(g.at) >= queueRefresh && !g.refreshing {
		g.refreshing, g.at = true, time.Now() // others meanwhile use the old value
		g.mu.Unlock()
		cctx, cancel := context.WithTimeout(ctx, queueRefresh)
		l, err := s.b.Load(cctx)
		cancel()
		g.mu.Lock()
		g.refreshing = false
		if err == nil {
			g.last, g.since, g.sinceTenant, g.readAt, g.known = l, 0, map[string]int{}, g.at, true
		} else {
			s.log.Debug("fleet load unavailable; queue caps and /pressure use the last read", "err", err)
		}
	}
	defer g.mu.Unlock()
	if !g.known {
		return Load{}, g.since, g.readAt, errLoadUnknown
	}
	return g.last, g.since, g.readAt, nil
}

// tenantQueued is tenant's queued jobs by the cached load plus this hub's
// submits since.
func (g *queueGate) tenantQueued(tenant string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.last.QueuedByTenant[tenant] + g.sinceTenant[tenant]
}

var errLoadUnknown = Errorf(http.StatusServiceUnavailable, "load_unknown", "the fleet's load could not be read yet")
