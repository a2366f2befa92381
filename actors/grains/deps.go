package grains

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/cluster"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/paprika-hub/paprika/actors/supervise"
	"github.com/paprika-hub/paprika/internal/seal"
	"github.com/paprika-hub/paprika/messages"
	"github.com/paprika-hub/paprika/metrics"
	"github.com/paprika-hub/paprika/persistence"
)

// Grain kinds, as registered with the cluster. An identity is "<kind>/<id>"
// in logs and docs; protoactor takes the two parts separately.
const (
	KindWorker    = "worker"
	KindJob       = "job"
	KindScheduler = "scheduler"
	// SchedulerID is the identity of the one scheduler of the default pool.
	SchedulerID = "default"
)

// Worker statuses an operator may set (PATCH /workers/{id}), short names
// for persistence's, their one home.
const (
	WorkerActive  = persistence.WorkerActive
	WorkerDrain   = persistence.WorkerDrain
	WorkerStandby = persistence.WorkerStandby
	WorkerPending = persistence.WorkerPending
)

// Timing holds every interval the actors use; the hub fills it from config.
type Timing struct {
	HeartbeatInterval time.Duration // worker heartbeat (15 s)
	AliveWindow       time.Duration // heartbeat within this = alive (120 s)
	AssignGrace       time.Duration // how long a placement may take (8 s)
	DiskExcludePct    float64       // pick_worker disk filter (90)
	Health            HealthRule    // health-aware placement thresholds (health.go; zero = off)
	PriorityAging     time.Duration // a queued job's effective priority rises one level per this wait (30 s; 0 = none)
	AffinityWait      time.Duration // a profile job waits this long for its warm worker (5 s; 0 = none; profiles.go)
	RetryBackoffMax   time.Duration // cap of the default retry wait (jobs.retry_backoff_max, 1 h; 0 = 1 h)
	RedriveInterval   time.Duration // re-drive sweep (3 s)
	RedriveMinAge     time.Duration // re-drive age gate (90 s)
	RedriveDisable    bool
	ReconcileInterval time.Duration // reconciler sweep (90 s)
	OrphanGrace       time.Duration // running job of a gone worker (300 s)
	QueuedTimeout     time.Duration // queued and unassigned (180 s)
	FleetReadTimeout  time.Duration // registry read bound (1.5 s)
	FleetCache        time.Duration // last-good fleet view reuse (60 s)
	LogBatchLines     int           // 50
	LogBatchWait      time.Duration // 100 ms
	LogBudgetLines    int64         // log lines in memory before readers block
	GrainTimeout      time.Duration // grain request timeout
	IdlePassivate     time.Duration // idle grains with nothing to do stop after this (30 s)
	FinalPassivate    time.Duration // an idle finished job's grain stops after this (3 s; 0 = IdlePassivate)
	ForwardTimeout    time.Duration // bound on one session command (cluster.forward_timeout)
	MemberTimeout     time.Duration // a hub silent this long is dead (cluster.member_timeout)
	HubTTL            time.Duration // how long a hub's record outlives its last beat (cluster.hub_ttl)
	WorkerMaxLanes    int           // the most slots any worker may claim (limits.worker_max_lanes; 0 = no bound)
	CDPTunnels        int           // open CDP tunnels per session (limits.cdp_tunnels_per_session; 0 = 8)
	OwnerCheckEvery   time.Duration // the scheduler's periodic ownership check (0 = ownerCheckEvery, 3 s)

	// SessionProfileWait: a session opening with a profile in use retries
	// its pick this long before it answers profile_in_use
	// (scheduler.session_profile_wait, 30 s; 0 = none; session_grain.go).
	SessionProfileWait time.Duration
}

// finalPassivate is how long a finished job's grain stays up idle. Shorter
// than IdlePassivate because such a grain has nothing left to do — every read
// of its job goes to the store, and a late message (a worker's repeated
// report, a retry) activates it again from there — while at a thousand jobs
// a second 30 s of them is 30,000 activations held in memory.
func (t Timing) finalPassivate() time.Duration {
	if t.FinalPassivate > 0 {
		return t.FinalPassivate
	}
	return t.IdlePassivate
}

// Deps is what every actor of a hub shares: fixed after the hub starts.
type Deps struct {
	HubID    string
	Timing   Timing
	Jobs     persistence.JobStore
	Logs     persistence.LogStore
	Workers  persistence.WorkerRegistry
	Hubs     persistence.HubRegistry
	Sessions persistence.SessionStore
	Log      *slog.Logger
	Metrics  *metrics.Metrics
	Cluster  func() *cluster.Cluster // set once the member starts
	LogRoute func() LogCloser        // the hub's log pipe (local)
	Now      func() time.Time
	// ParamsKey opens a job's sealed proxy password into its assign_job
	// frame (the API sealed it with the same key); nil: params go as
	// stored.
	ParamsKey *seal.Key
	// OnLinkFrame, when set, is called on a worker link's reader as each
	// frame from the worker is read and decoded, with the frame's type:
	// the gateway benchmarks time heartbeats and log lines on the link
	// while CDP tunnels carry large messages (BenchmarkCDPLinkDuringTransfer).
	// It must not block. Nil in production.
	OnLinkFrame func(workerID, frameType string)

	// Approvals holds the operator's approvals of worker ids
	// (auth.worker_approval); nil when approval is off: every worker is
	// given work as soon as it links.
	Approvals persistence.ApprovalStore

	// Tenants is the tenant policy of the scheduler (tenant_book.go).
	Tenants TenantConfig

	// Assets is the asset store, where the profiles' metadata says where
	// each profile ran last: a fresh scheduler activation starts its
	// affinity memory from it (profiles.go). Nil: it starts empty.
	Assets persistence.AssetStore

	// Dispatcher runs the turns of the grains and the links (the hub's
	// dispatch.Pool); nil: protoactor's default, a goroutine per turn.
	Dispatcher actor.Dispatcher
}

// LogCloser ends a job's log on this hub without waiting (the log pipe's
// router): the job grain closes the log when the hub itself ends a job.
type LogCloser interface {
	CloseLog(ctx actor.SenderContext, jobID string)
}

// storeTimeout bounds one registry or session store call made inside an
// actor's turn (reconciler.fleet_read_timeout, 1.5 s).
func (d *Deps) storeTimeout() time.Duration {
	if d.Timing.FleetReadTimeout > 0 {
		return d.Timing.FleetReadTimeout
	}
	return 1500 * time.Millisecond
}

// Clock is now by the hub's clock (Now, or time.Now).
func (d *Deps) Clock() time.Time {
	if d.Now != nil {
		return d.Now()
	}
	return time.Now()
}

// EnsureMessage is the message that activates a job grain.
func EnsureMessage() interface{} { return &messages.JobEnsure{} }

// Wake activates a job grain without waiting: it loads the job, arms its
// timers and, when queued, enqueues itself.
func Wake(cl *cluster.Cluster, jobID string) error { return wake(cl, jobID, nil) }

// wake is Wake; a non-nil created is the record Create just stored, which
// the activation takes instead of reading it back (jobGrain.activate).
func wake(cl *cluster.Cluster, jobID string, created *messages.JobRecord) error {
	ensure := &messages.JobEnsure{Created: created}
	if d, ok := cl.Config.IdentityLookup.(deliverer); ok {
		// One message to the job's owner, which activates the grain: no
		// lookup's round trip first (on three hubs, two of every three
		// jobs' owners are another hub).
		owner, sent := d.Deliver(cluster.NewClusterIdentity(jobID, KindJob), &messages.GrainDeliver{Identity: jobID, Kind: KindJob,
			Payload: &messages.GrainDeliver_JobEnsure{JobEnsure: ensure}})
		if sent {
			countMessage(cl.ActorSystem, KindJob, opSend, actor.NewPID(owner, ""))
			return nil
		}
	}
	pid := cl.Get(jobID, KindJob)
	if pid == nil {
		return fmt.Errorf("wake job %s: no activation", jobID)
	}
	countMessage(cl.ActorSystem, KindJob, opLookup, pid)
	countMessage(cl.ActorSystem, KindJob, opSend, pid)
	cl.ActorSystem.Root.Send(pid, ensure)
	return nil
}

// deliverer is the cluster's identity lookup when it can hand a grain a
// one-way message through the grain's owner (membership.Lookup.Deliver).
type deliverer interface {
	Deliver(id *cluster.ClusterIdentity, msg *messages.GrainDeliver) (owner string, ok bool)
}

// newKind registers a grain kind whose panics become error replies and
// restarts (supervise.Recover).
func newKind(d *Deps, kind string, produce func() actor.Actor) *cluster.Kind {
	// A series at 0 from the start: a rate or an alert over panics sees
	// "none", not "no data".
	d.Metrics.ActorPanics.WithLabelValues(kind)
	props := actor.PropsFromProducer(produce, actor.WithReceiverMiddleware(supervise.Recover(kind, d.Log, d.Metrics)),
		actor.WithDispatcher(d.Dispatcher))
	return cluster.NewKind(kind, props)
}
