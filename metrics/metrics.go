package metrics

import (
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
)

// Metrics holds every metric family of one hub. Each family is declared
// once, in NewMetrics, with its help text, so /metrics can never show a
// family without HELP nor two spellings of one name; call sites get a typed
// collector and cannot misspell a name or a label. The families live on a
// registry of their own, not the global default one, because tests (and a
// bench) run several hubs in one process and each must count only its own.
// Each field's comment names its family, so a name seen on /metrics greps
// straight to the field that counts it; a labelled family's labels are
// listed in the order WithLabelValues takes them (it is positional).
type Metrics struct {
	// Reconciler and re-drive.
	RedriveJobs       prometheus.Counter // paprika_redrive_jobs_total
	FleetReadErrors   prometheus.Counter // paprika_fleet_read_errors_total
	ReconcilerLost    prometheus.Counter // paprika_reconciler_lost_total
	ReconcilerOverdue prometheus.Counter // paprika_reconciler_overdue_total

	// Sessions.
	SessionStoreErrors prometheus.Counter // paprika_session_store_errors_total
	SessionsResumed    prometheus.Counter // paprika_sessions_resumed_total
	SessionsReclaimed  prometheus.Counter // paprika_sessions_reclaimed_total

	// Worker grains and the registry.
	WorkerSlotsPruned prometheus.Counter // paprika_worker_slots_pruned_total
	WorkerLostJobs    prometheus.Counter // paprika_worker_lost_jobs_total
	RegistryErrors    prometheus.Counter // paprika_registry_errors_total

	// Scheduler.
	SchedPlacements       prometheus.Counter // paprika_sched_placements_total
	SchedAffinityHits     prometheus.Counter // paprika_sched_affinity_hits_total
	SchedPlaceTimeouts    prometheus.Counter // paprika_sched_place_timeouts_total
	SchedStalePlacements  prometheus.Counter // paprika_sched_stale_placements_total
	SchedEnqueues         prometheus.Counter // paprika_sched_enqueues_total
	SchedStaleActivations prometheus.Counter // paprika_sched_stale_activations_total

	// SchedHealthSkips is paprika_sched_health_skips_total{reason}, reason
	// one of persistence.HealthSkipReasons.
	SchedHealthSkips *prometheus.CounterVec

	// Job grains.
	AssignmentQueries      prometheus.Counter     // paprika_assignment_queries_total
	AssignmentsRecovered   prometheus.Counter     // paprika_assignments_recovered_total
	AssignmentsUnconfirmed prometheus.Counter     // paprika_assignments_unconfirmed_total
	AssignmentsRejected    prometheus.Counter     // paprika_assignments_rejected_total
	ClaimsLost             prometheus.Counter     // paprika_claims_lost_total
	JobsSubmitted          *prometheus.CounterVec // paprika_jobs_submitted_total{mode}
	JobsFinished           *prometheus.CounterVec // paprika_jobs_finished_total{status, reason}
	JobRetries             prometheus.Counter     // paprika_job_retries_total
	FencedReports          *prometheus.CounterVec // paprika_fenced_reports_total{kind}: started, finished, log, session_result, tunnel_attach, running

	// Logs.
	LogLinesStored    prometheus.Counter // paprika_log_lines_stored_total
	LogWrites         prometheus.Counter // paprika_log_writes_total
	LogWriteErrors    prometheus.Counter // paprika_log_write_errors_total
	LogLinesDuplicate prometheus.Counter // paprika_log_lines_duplicate_total
	LogGaps           prometheus.Counter // paprika_log_gaps_total
	LogStreams        prometheus.Counter // paprika_log_streams_started_total
	// LogLinesRefused counts lines past a job's log bound, by the bound
	// (limit = lines | bytes): limits.max_log_lines, limits.max_log_bytes.
	LogLinesRefused *prometheus.CounterVec // paprika_log_lines_refused_total{limit}

	// Worker links.
	LinksOpened      prometheus.Counter // paprika_links_opened_total
	LinksClosed      prometheus.Counter // paprika_links_closed_total
	LinkBadFrames    prometheus.Counter // paprika_link_bad_frames_total
	LinksRefused     prometheus.Counter // paprika_links_refused_total
	LinksRelinked    prometheus.Counter // paprika_links_relinked_total
	LinkSlowConsumer prometheus.Counter // paprika_link_slow_consumer_total

	// Actors and cluster.
	ActorPanics *prometheus.CounterVec // paprika_actor_panics_total{kind}
	// GrainMessages counts what grains cost the cluster, per message:
	// paprika_grain_messages_total{kind, op, to}.
	GrainMessages         *prometheus.CounterVec
	ActorSupervision      *prometheus.CounterVec // paprika_actor_supervision_total{directive}
	ClusterMembershipLost prometheus.Counter     // paprika_cluster_membership_lost_total

	// HubUptime reads the start time set by MarkStarted at scrape time.
	HubUptime prometheus.GaugeFunc // paprika_hub_uptime_seconds

	// Latencies, one observation per job, placement, flush or grain call:
	// never per log line.
	QueueWait        prometheus.Histogram     // paprika_queue_wait_seconds
	PlacementLatency prometheus.Histogram     // paprika_sched_placement_latency_seconds
	JobDuration      *prometheus.HistogramVec // paprika_job_duration_seconds{mode}
	LogFlush         prometheus.Histogram     // paprika_log_flush_duration_seconds
	GrainRequest     *prometheus.HistogramVec // paprika_grain_request_duration_seconds{kind}
	TenantWait       *prometheus.HistogramVec // paprika_tenant_wait_seconds{tenant} (tenants.go)
	JobStoreWrite    *prometheus.HistogramVec // paprika_job_store_write_seconds{op}
	// StoreWrites are JobStoreWrite's series, resolved once: a job's life
	// observes each.
	StoreWrites StoreWrites

	// Fleet reads the scheduler, the session store and the member list at
	// scrape time (see fleet.go): paprika_queue_depth{mode},
	// paprika_workers_alive, paprika_lanes{state},
	// paprika_worker_in_flight{worker}, paprika_sessions_open,
	// paprika_hub_members, paprika_fleet_scrape_errors_total.
	Fleet *FleetCollector

	// Live view (live.go): paprika_live_*.
	Live *LiveMetrics

	registry *prometheus.Registry
	started  atomic.Int64 // unix nanoseconds; 0 until MarkStarted
}

// NewMetrics declares every family on a fresh registry, together with the
// Go runtime and process collectors. Every Deps needs one: the actors call
// the collectors without a nil check, so a Deps built without Metrics
// fails on its first count instead of silently losing it.
func NewMetrics() *Metrics {
	reg := prometheus.NewRegistry()
	counter := func(name, help string) prometheus.Counter {
		c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
		reg.MustRegister(c)
		return c
	}
	vec := func(name, help string, labels ...string) *prometheus.CounterVec {
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
		reg.MustRegister(c)
		return c
	}
	m := &Metrics{registry: reg}
	m.Live = newLiveMetrics(reg)

	m.RedriveJobs = counter("paprika_redrive_jobs_total",
		"Queued jobs past redrive.min_age that the periodic re-drive woke so they enqueue again.")
	m.FleetReadErrors = counter("paprika_fleet_read_errors_total",
		"Reconciler reads of the fleet-wide worker registry that failed or timed out.")
	m.ReconcilerLost = counter("paprika_reconciler_lost_total",
		"Running jobs the reconciler declared lost because their worker was gone past the orphan grace.")
	m.ReconcilerOverdue = counter("paprika_reconciler_overdue_total",
		"Jobs the reconciler woke because they were past their deadline or queued past the queued timeout.")

	m.SessionStoreErrors = counter("paprika_session_store_errors_total",
		"Session store reads, writes and deletes that failed.")
	m.SessionsResumed = counter("paprika_sessions_resumed_total",
		"Sessions a grain activation loaded from the session store (after a hub loss, a passivation or a restart).")
	m.SessionsReclaimed = counter("paprika_sessions_reclaimed_total",
		"Session lanes freed because a worker held them for a session with no record left.")

	m.WorkerSlotsPruned = counter("paprika_worker_slots_pruned_total",
		"Job slots freed because the worker stopped reporting the job in its heartbeats.")
	m.WorkerLostJobs = counter("paprika_worker_lost_jobs_total",
		"Jobs declared lost because their worker stayed disconnected past the orphan grace.")
	m.RegistryErrors = counter("paprika_registry_errors_total",
		"Worker registry writes that failed; the scheduler still has the state, other hubs see it late.")

	m.SchedPlacements = counter("paprika_sched_placements_total",
		"Jobs the scheduler placed on a worker.")
	m.SchedAffinityHits = counter("paprika_sched_affinity_hits_total",
		"Jobs (within scheduler.affinity_wait) and sessions (at once) with a profile placed on the worker that ran the profile last (warm).")
	m.SchedPlaceTimeouts = counter("paprika_sched_place_timeouts_total",
		"Placements whose job grain did not answer within twice the assign grace.")
	m.SchedStalePlacements = counter("paprika_sched_stale_placements_total",
		"Placements forgotten because their job asked to be queued again long after (the answer was lost).")
	m.SchedHealthSkips = vec("paprika_sched_health_skips_total",
		"Times pick_worker passed over a worker that could otherwise take the job, for its health: shm_low (/dev/shm under scheduler.min_shm_free_mb), or its free lanes all unhealthy (lane_rss, lane_crashes, lane_restarts: the commonest reason among them).", "reason")
	m.SchedEnqueues = counter("paprika_sched_enqueues_total",
		"Requests of queued jobs for a lane that reached the scheduler (one per new job; more after re-drives and moves).")
	m.SchedStaleActivations = counter("paprika_sched_stale_activations_total",
		"Scheduler activations that stopped because the cluster routes the scheduler to another one.")

	m.AssignmentQueries = counter("paprika_assignment_queries_total",
		"job_query frames sent to ask a worker whether it holds an attempt it never confirmed.")
	m.AssignmentsRecovered = counter("paprika_assignments_recovered_total",
		"Attempts a worker said it never got, queued again.")
	m.AssignmentsUnconfirmed = counter("paprika_assignments_unconfirmed_total",
		"Assignments with no answer from the worker; the claim is kept until the worker reports or disowns it.")
	m.AssignmentsRejected = counter("paprika_assignments_rejected_total",
		"Jobs a worker rejected, rolled back and queued again.")
	m.ClaimsLost = counter("paprika_claims_lost_total",
		"Job claims that failed or lost the conditional update to another placement.")
	m.JobsSubmitted = vec("paprika_jobs_submitted_total",
		"Jobs created through the API, by mode.", "mode")
	m.JobsFinished = vec("paprika_jobs_finished_total",
		"Jobs that reached a final state, by status and reason.", "status", "reason")
	m.JobRetries = counter("paprika_job_retries_total",
		"Failed attempts (job_error, lane_error) scheduled to run again after their retry backoff.")
	m.FencedReports = vec("paprika_fenced_reports_total",
		"Worker reports refused because their attempt was not current, or the worker does not hold the work "+
			"(kind=running: an entry of a hello or heartbeat running list).", "kind")

	m.LogLinesStored = counter("paprika_log_lines_stored_total",
		"Log lines written to the log store.")
	m.LogWrites = counter("paprika_log_writes_total",
		"Log store writes (one round trip each).")
	m.LogWriteErrors = counter("paprika_log_write_errors_total",
		"Log store writes that failed and are retried with backoff.")
	m.LogLinesDuplicate = counter("paprika_log_lines_duplicate_total",
		"Log lines dropped because their sequence number was already stored.")
	m.LogGaps = counter("paprika_log_gaps_total",
		"Log lines that arrived past the next expected sequence number (lines in between are missing).")
	m.LogStreams = counter("paprika_log_streams_started_total",
		"Per-job log streams spawned on this hub (a job that ends without a line needs none).")
	m.LogLinesRefused = vec("paprika_log_lines_refused_total",
		"Log lines not stored because their job's log reached limits.max_log_lines or limits.max_log_bytes, by limit (lines, bytes).", "limit")

	m.LinksOpened = counter("paprika_links_opened_total",
		"Worker links (WebSockets) opened on this hub.")
	m.LinksClosed = counter("paprika_links_closed_total",
		"Worker links closed after their hello.")
	m.LinkBadFrames = counter("paprika_link_bad_frames_total",
		"Frames from workers that did not decode or have a type a worker does not send.")
	m.LinksRefused = counter("paprika_links_refused_total",
		"Second links for a worker whose link answers a ping, refused (id_taken).")
	m.LinksRelinked = counter("paprika_links_relinked_total",
		"Hellos answered with relink: the worker's grain lives on another hub the worker was given, and it links there instead.")
	m.LinkSlowConsumer = counter("paprika_link_slow_consumer_total",
		"Worker links closed because the worker did not read its outgoing frames.")

	m.ActorPanics = vec("paprika_actor_panics_total",
		"Actor panics, by actor kind; each is followed by a restart.", "kind")
	m.GrainMessages = vec("paprika_grain_messages_total",
		"Messages to grains sent by this hub, by target grain kind, op (send: one-way; request: one attempt of a request "+
			"and its answer; lookup: an identity lookup, a round trip to the identity's owner) and to (local: this hub; remote: another).",
		"kind", "op", "to")
	m.ActorSupervision = vec("paprika_actor_supervision_total",
		"Supervisor decisions about failed actors, by directive.", "directive")
	m.ClusterMembershipLost = counter("paprika_cluster_membership_lost_total",
		"Times this hub lost its cluster membership (it must restart).")

	m.HubUptime = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "paprika_hub_uptime_seconds",
		Help: "Seconds since this hub started.",
	}, m.uptime)
	reg.MustRegister(m.HubUptime)

	hist := func(name, help string, buckets []float64) prometheus.Histogram {
		h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets})
		reg.MustRegister(h)
		return h
	}
	histVec := func(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
		h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels)
		reg.MustRegister(h)
		return h
	}
	m.QueueWait = hist("paprika_queue_wait_seconds",
		"Seconds from a job's submission to its worker's job_started report, first attempt only (a retry's wait would include the failed attempt).",
		waitBuckets)
	m.PlacementLatency = hist("paprika_sched_placement_latency_seconds",
		"Seconds from the moment a queued job became placeable to the scheduler assigning it: the later of the job reaching "+
			"the scheduler's queue and the chosen worker last reporting a lane freed (or becoming eligible).",
		fastBuckets)
	m.JobDuration = histVec("paprika_job_duration_seconds",
		"Seconds from a job's start (its claim by a worker) to its final state, by mode; jobs that ended while queued are not observed.",
		waitBuckets, "mode")
	m.LogFlush = hist("paprika_log_flush_duration_seconds",
		"Seconds one log flush took: the log store write round trip of the batches coalesced since the last flush, failed ones included.",
		fastBuckets)
	m.GrainRequest = histVec("paprika_grain_request_duration_seconds",
		"Seconds a grain request took, from the call (grains.Ask, AskOnce, Call) to its answer or final failure, retries included, by grain kind.",
		fastBuckets, "kind")
	m.JobStoreWrite = histVec("paprika_job_store_write_seconds",
		"Seconds a write on a job's path took in the job store, from the call to its answer (durable, refused or failed), by op: "+
			"create (a submission), claim (a placement; it holds the worker's freed slot), finish (an attempt's end).",
		fastBuckets, "op")
	m.StoreWrites = StoreWrites{Create: m.JobStoreWrite.WithLabelValues(StoreOpCreate),
		Claim: m.JobStoreWrite.WithLabelValues(StoreOpClaim), Finish: m.JobStoreWrite.WithLabelValues(StoreOpFinish)}
	m.TenantWait = newTenantWait(histVec)

	m.Fleet = newFleetCollector()
	reg.MustRegister(m.Fleet)

	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// fastBuckets cover in-process and store round trips: 0.5 ms to 10 s.
// StoreWrites are paprika_job_store_write_seconds' series, one per op.
type StoreWrites struct {
	Create, Claim, Finish prometheus.Observer
}

// Ops of paprika_job_store_write_seconds.
const (
	StoreOpCreate = "create"
	StoreOpClaim  = "claim"
	StoreOpFinish = "finish"
)

var fastBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// waitBuckets cover queue waits and job runs: 10 ms to an hour.
var waitBuckets = []float64{.01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600}

// MarkStarted sets the start the uptime gauge counts from: the hub creates
// its Metrics before it starts (the actors' Deps need them), so the time
// is only known later.
func (m *Metrics) MarkStarted(t time.Time) { m.started.Store(t.UnixNano()) }

// CountStoreCommits exports paprika_job_store_commits_total, read from
// commits at each scrape: the write transactions the embedded job store
// committed. Its group committer runs every write that queued during the
// previous commit in one, so commits over jobs finished is what a job's
// writes cost in fsyncs. Only the embedded store has it.
func (m *Metrics) CountStoreCommits(commits func() int64) {
	m.registry.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "paprika_job_store_commits_total",
		Help: "Write transactions the embedded job store committed; one commit (two fdatasyncs) carries every write that queued during the previous one.",
	}, func() float64 { return float64(commits()) }))
}

// uptime is in whole seconds, as /metrics always reported it.
func (m *Metrics) uptime() float64 {
	s := m.started.Load()
	if s == 0 {
		return 0
	}
	return float64(int64(time.Since(time.Unix(0, s)).Seconds()))
}

// Handler serves the registry in whatever exposition format the scraper
// negotiates, so escaping and content type are the library's, not ours.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{})
}

// Get reads one series as tests and views name it: the family name and
// its label pairs as "k=v", all of them (a series of a labelled family is
// not its sum). A histogram reads as its count of observations. It gathers like a scrape does, so it sees exactly what
// /metrics would; an absent series, or a nil Metrics, reads 0.
func (m *Metrics) Get(name string, labels ...string) int64 {
	if m == nil {
		return 0
	}
	want := make(map[string]string, len(labels))
	for _, l := range labels {
		k, v, _ := strings.Cut(l, "=")
		want[k] = v
	}
	// A collector error still leaves the other families gathered.
	fams, _ := m.registry.Gather()
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, s := range f.GetMetric() {
			if sameLabels(s.GetLabel(), want) {
				return int64(value(s))
			}
		}
	}
	return 0
}

func sameLabels(pairs []*dto.LabelPair, want map[string]string) bool {
	if len(pairs) != len(want) {
		return false
	}
	for _, p := range pairs {
		if v, ok := want[p.GetName()]; !ok || v != p.GetValue() {
			return false
		}
	}
	return true
}

func value(s *dto.Metric) float64 {
	switch {
	case s.Counter != nil:
		return s.GetCounter().GetValue()
	case s.Gauge != nil:
		return s.GetGauge().GetValue()
	case s.Histogram != nil:
		return float64(s.GetHistogram().GetSampleCount())
	default:
		return s.GetUntyped().GetValue()
	}
}
