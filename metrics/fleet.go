package metrics

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// MaxWorkerSeries bounds paprika_worker_in_flight: a fleet larger than
// this shows its first MaxWorkerSeries alive workers (by the scheduler's
// order) and counts the rest in paprika_worker_series_dropped, so a fleet
// of any size cannot grow the scrape without end.
const MaxWorkerSeries = 1000

// Fleet is the fleet's state as one scrape reads it. Values describe the
// whole cluster, so every hub reports the same ones: aggregate them with
// max, not sum.
type Fleet struct {
	// QueueDepth counts queued jobs waiting for a lane, by mode.
	QueueDepth map[string]int
	// WorkersAlive counts connected workers heard from within the alive window.
	WorkersAlive int
	// LanesBusy counts job and session slots in use on alive workers.
	LanesBusy int
	// LanesFree counts the slots alive active workers could take a job on.
	LanesFree int
	// InFlight is the work on each alive worker (at most MaxWorkerSeries).
	InFlight map[string]int
	// Dropped counts alive workers left out of InFlight by the cap.
	Dropped int
	// SessionsOpen counts session records in the session store; -1 when
	// the store could not be read in time (the gauge is then left out).
	SessionsOpen int
	// HubMembers counts the cluster members this hub sees.
	HubMembers int
	// Tenants are the per-tenant gauges, bounded (BoundTenants).
	Tenants map[string]TenantLoad
}

// FleetFunc reads the fleet's state; ctx bounds it.
type FleetFunc func(ctx context.Context) (Fleet, error)

// FleetCollector exposes the fleet gauges. It reads the state when
// scraped instead of keeping gauges updated on every event: the scheduler
// already holds the numbers, a scrape every few seconds costs one grain
// request, and a worker that goes away simply stops being reported (no
// series to delete).
type FleetCollector struct {
	read    atomic.Pointer[FleetFunc]
	timeout time.Duration
	errors  prometheus.Counter

	queueDepth, workersAlive, lanes, inFlight, dropped, sessions, members *prometheus.Desc
	tenants                                                               tenantDescs
}

func newFleetCollector() *FleetCollector {
	return &FleetCollector{
		timeout: 2 * time.Second,
		errors: prometheus.NewCounter(prometheus.CounterOpts{Name: "paprika_fleet_scrape_errors_total",
			Help: "Scrapes whose read of the fleet state (scheduler grain, session store) failed or timed out; the fleet gauges it could not read are left out of that scrape."}),
		queueDepth: prometheus.NewDesc("paprika_queue_depth",
			"Queued jobs waiting in the scheduler for a lane, by mode (the whole cluster's queue; every hub reports it).", []string{"mode"}, nil),
		workersAlive: prometheus.NewDesc("paprika_workers_alive",
			"Workers connected and heard from within worker.alive_window (cluster-wide).", nil, nil),
		lanes: prometheus.NewDesc("paprika_lanes",
			"Job and session slots of alive workers, by state: busy (in use), free (on active workers, takeable now).", []string{"state"}, nil),
		inFlight: prometheus.NewDesc("paprika_worker_in_flight",
			"Jobs and sessions on one alive worker, as the scheduler counts them (at most 1000 workers; see paprika_worker_series_dropped).", []string{"worker"}, nil),
		dropped: prometheus.NewDesc("paprika_worker_series_dropped",
			"Alive workers left out of paprika_worker_in_flight by its cap of 1000 series.", nil, nil),
		sessions: prometheus.NewDesc("paprika_sessions_open",
			"Sessions with a record in the session store (cluster-wide).", nil, nil),
		members: prometheus.NewDesc("paprika_hub_members",
			"Cluster members (hubs) this hub sees.", nil, nil),
		tenants: newTenantDescs(),
	}
}

// SetSource sets the function scrapes read the fleet through; until then
// the fleet gauges are absent. timeout bounds each read (0 keeps 2 s).
func (c *FleetCollector) SetSource(f FleetFunc, timeout time.Duration) {
	if timeout > 0 {
		c.timeout = timeout
	}
	c.read.Store(&f)
}

// Describe implements prometheus.Collector.
func (c *FleetCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.queueDepth, c.workersAlive, c.lanes, c.inFlight, c.dropped, c.sessions, c.members} {
		ch <- d
	}
	c.tenants.describe(ch)
	c.errors.Describe(ch)
}

// Collect implements prometheus.Collector.
func (c *FleetCollector) Collect(ch chan<- prometheus.Metric) {
	c.collect(ch)
	c.errors.Collect(ch)
}

func (c *FleetCollector) collect(ch chan<- prometheus.Metric) {
	read := c.read.Load()
	if read == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	f, err := (*read)(ctx)
	gauge := func(d *prometheus.Desc, v int, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), labels...)
	}
	// The member count is local and always known.
	gauge(c.members, f.HubMembers)
	if f.SessionsOpen >= 0 {
		gauge(c.sessions, f.SessionsOpen)
	}
	if err != nil || f.SessionsOpen < 0 {
		c.errors.Inc()
	}
	if err != nil {
		return
	}
	for mode, n := range f.QueueDepth {
		gauge(c.queueDepth, n, mode)
	}
	gauge(c.workersAlive, f.WorkersAlive)
	gauge(c.lanes, f.LanesBusy, "busy")
	gauge(c.lanes, f.LanesFree, "free")
	n := 0
	for w, v := range f.InFlight {
		if n == MaxWorkerSeries {
			f.Dropped++
			continue
		}
		n++
		gauge(c.inFlight, v, w)
	}
	gauge(c.dropped, f.Dropped)
	c.tenants.collect(ch, f.Tenants)
}
