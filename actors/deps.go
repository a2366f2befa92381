package actors

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/cluster"

	"github.com/paprika-hub/paprika/messages"
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

// Worker statuses an operator may set (PATCH /workers/{id}).
const (
	WorkerActive  = "active"
	WorkerDrain   = "drain"
	WorkerStandby = "standby"
)

// Timing holds every interval the actors use; the hub fills it from config.
type Timing struct {
	HeartbeatInterval time.Duration // worker heartbeat (15 s)
	AliveWindow       time.Duration // heartbeat within this = alive (120 s)
	AssignGrace       time.Duration // how long a placement may take (8 s)
	DiskExcludePct    float64       // pick_worker disk filter (90)
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
	IdlePassivate     time.Duration // idle final job grains stop after this
	ForwardTimeout    time.Duration // bound on one session command (cluster.forward_timeout)
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
	Metrics  *Metrics
	Cluster  func() *cluster.Cluster // set once the member starts
	LogRoute func() *LogRouter       // the hub's log router (local)
	Now      func() time.Time
}

// storeTimeout bounds one registry or session store call made inside an
// actor's turn (reconciler.fleet_read_timeout, 1.5 s).
func (d *Deps) storeTimeout() time.Duration {
	if d.Timing.FleetReadTimeout > 0 {
		return d.Timing.FleetReadTimeout
	}
	return 1500 * time.Millisecond
}

func (d *Deps) now() time.Time {
	if d.Now != nil {
		return d.Now()
	}
	return time.Now()
}

// EnsureMessage is the message that activates a job grain.
func EnsureMessage() interface{} { return &messages.JobEnsure{} }

// Wake activates a job grain without waiting: it loads the job, arms its
// timers and, when queued, enqueues itself.
func Wake(cl *cluster.Cluster, jobID string) error {
	pid := cl.Get(jobID, KindJob)
	if pid == nil {
		return fmt.Errorf("wake job %s: no activation", jobID)
	}
	cl.ActorSystem.Root.Send(pid, &messages.JobEnsure{})
	return nil
}

// Call is a request to a grain with a bounded timeout and retry backoff.
func Call(cl *cluster.Cluster, identity, kind string, msg interface{}, timeout time.Duration) (*messages.Reply, error) {
	return requestGrain(cl, identity, kind, msg, timeout)
}

// InjectPanic makes the receiving actor panic: fault injection for the
// supervision tests and the chaos suite. Local only (not protobuf), so no
// other member — and no client — can send it.
type InjectPanic struct{}

// CallContext is Call bounded by ctx as well: the call's timeout shrinks to
// ctx's deadline, and when ctx ends first CallContext returns ctx.Err() at
// once. protoactor's grain calls take no context.Context (its
// cluster.WithContext is an actor.SenderContext), so the call runs on a
// goroutine of its own, which a cancelled ctx leaves to end by its timeout.
func CallContext(ctx context.Context, cl *cluster.Cluster, identity, kind string, msg interface{}, timeout time.Duration) (*messages.Reply, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if dl, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(dl))
	}
	type result struct {
		r   *messages.Reply
		err error
	}
	done := make(chan result, 1) // the goroutine never blocks on a gone caller
	go func() {
		r, err := Call(cl, identity, kind, msg, timeout)
		done <- result{r, err}
	}()
	select {
	case res := <-done:
		return res.r, res.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
