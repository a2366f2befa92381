package grains

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/proto"

	"github.com/paprika-hub/paprika/actors/supervise"
	"github.com/paprika-hub/paprika/internal/deadline"
	"github.com/paprika-hub/paprika/messages"
	"github.com/paprika-hub/paprika/persistence"
)

// jobGrain is `job/<id>`: the job's state machine. Every transition is a
// conditional write to the job store first and a change of memory second,
// so a restart (or a move to another hub) resumes from the store. The
// attempt number is the fencing epoch: a report from an older attempt — a
// worker declared lost that came back, a hub that was cut off — is refused.
type jobGrain struct {
	// fixed after construction
	deps *Deps

	// actor-confined state
	grain
	job      persistence.Job
	loaded   bool
	deadline supervise.Stop
	// deadlineAt is when deadline fires: a transition that keeps it (the
	// claim, the start) keeps the timer instead of arming a new one.
	deadlineAt time.Time
	queuedTO   supervise.Stop
	audit      supervise.Stop
	audited    int   // the attempt its worker said it runs: no more queries
	checking   int32 // an attempt its worker stopped reporting: ask even if started
	waitSeen   int32 // the attempt whose queue wait was observed
	// enqueued: the activation's load asked the scheduler already, so the
	// JobEnsure that woke the grain (a new job's) need not ask again.
	enqueued bool
	missing  bool // the store says the job does not exist
	// activated: the first message after ClusterInit was read (activate).
	activated bool
	// laneUnsaved is the attempt whose lane (job.Lane) the store does not
	// hold yet (0: none); laneSave fires its write (laneSaveAfter).
	laneUnsaved int
	laneSave    supervise.Stop
	// freed is the attempt whose worker slot this grain has let go of
	// already (0: none): the worker reported its end, so its lane is free
	// whether or not the end is durable yet (finished). freedAt is that
	// end's finished_at, stamped when the slot went.
	freed   int
	freedAt time.Time
}

// storeRetry is how long a job waits before it is placed again after the
// job store failed its claim (MariaDB down: no hot loop of failing claims).
const storeRetry = time.Second

type deadlineTick struct{}

// laneTick: the lane of attempt is still unsaved laneSaveAfter after its
// job_started; write it on its own.
type laneTick struct{ attempt int }

// laneSaveAfter is how long a running attempt's lane waits to be written
// with its end before it is written on its own. Nothing needs the lane
// durable sooner (see started): a job shorter than this — the no-op and
// most short jobs — gets its lane with its finish, one store write fewer,
// and GET /jobs/{id}, which reads the store, shows a longer job's lane
// from this long after it started.
const laneSaveAfter = time.Second

type queuedTimeoutTick struct{}

// auditTick: the worker has not reported the attempt yet; ask it.
type auditTick struct{}

// AssignAuditAfter is how long a claimed attempt may go without a
// job_started before the hub asks the worker (job_query) whether it holds
// it. An assignment whose confirmation died with a hub or a socket keeps
// its claim — rolling it back on a guess could run the job twice — until
// the worker itself says it will never run it; then the job is queued
// again at once instead of failing at its deadline.
const AssignAuditAfter = 5 * time.Second

// auditEvery spaces the queries while the worker does not answer (it is
// reconnecting, or its grain moving).
const auditEvery = 5 * time.Second

// NewJobKind registers the job grain.
func NewJobKind(d *Deps) *cluster.Kind {
	return newKind(d, KindJob, func() actor.Actor { return &jobGrain{deps: d} })
}

func (g *jobGrain) Receive(ctx actor.Context) {
	if g.common(ctx) {
		return
	}
	switch msg := ctx.Message().(type) {
	case *actor.Started, *actor.Stopped:
		// Lifecycle only: protoactor delivers Started before ClusterInit,
		// so loading here would read the store with an empty id.
		return
	case *cluster.ClusterInit:
		g.begin(ctx, g.deps, msg, KindJob, "job_id")
		// The job is taken when the message that activated the grain is
		// read (it may carry it: activate); should none come — a restart
		// after a panic — the timeout loads it, so its timers are re-armed.
		g.idle.Set(activationWait)
		return
	case *supervise.IdleTimeout:
		if !g.activated {
			g.activate(ctx, nil)
			return
		}
		// A scheduled job needs no grain until its time: the scheduler
		// holds it and wakes it then.
		if g.job.Status.Final() || !g.loaded || g.job.Status == persistence.StatusScheduled {
			ctx.Stop(ctx.Self()) // idle and final: passivate
		}
		return
	}
	if !g.activated {
		var created *messages.JobRecord
		if e, isEnsure := ctx.Message().(*messages.JobEnsure); isEnsure {
			created = e.Created
		}
		if !g.activate(ctx, created) {
			g.refuse(ctx)
			return
		}
	}
	if !g.loaded && !g.load(ctx) {
		g.refuse(ctx)
		return
	}
	switch msg := ctx.Message().(type) {
	case *messages.JobEnsure:
		// Re-drive and recovery wake jobs with this: a queued job asks the
		// scheduler again (it ignores jobs it holds), since the scheduler
		// may have moved or restarted and forgotten it.
		g.log.Debug("job ensure", slog.String("status", string(g.job.Status)), slog.String("worker_id", g.job.WorkerID))
		// A new job's first ensure is the one that activated the grain:
		// loading it enqueued the job already.
		if g.job.Status == persistence.StatusQueued && !g.enqueued {
			g.enqueue(ctx)
		}
		if g.job.Status == persistence.StatusScheduled && !g.enqueued {
			g.arm(ctx) // queues it when due, else holds it with the scheduler
		}
		g.enqueued = false
		if ctx.Sender() != nil {
			// Only a caller that asks gets the job; a wake (a Send) costs
			// no encoding of a whole job.
			reply(ctx, ok(g.jobJSON()))
		}
	case *messages.JobPlace:
		g.place(ctx, msg)
	case *messages.JobStarted:
		reply(ctx, g.started(ctx, msg))
	case *messages.JobLaneFreed:
		// Not refreshed from the store when stale: JobFinished, right
		// behind it, is, and frees the slot then if this did not.
		if g.current(msg.WorkerId, msg.Attempt) {
			g.free(ctx, int(msg.Attempt), g.endedAt(msg.ReportedUnixNs))
		}
	case *messages.JobFinished:
		reply(ctx, g.finished(ctx, msg))
	case *messages.JobCancel:
		reply(ctx, g.cancel(ctx))
	case *messages.JobRetry:
		reply(ctx, g.revive(ctx))
	case *promoteRetry:
		if g.job.Status == persistence.StatusScheduled {
			g.arm(ctx)
		}
	case *messages.JobWorkerLost:
		g.workerLost(ctx, msg)
	case *auditTick:
		// Stopped, not forgotten: the tick may be one an earlier
		// incarnation's timer sent before the restart, and the audit this
		// one armed would then run beside the one query arms.
		g.stopAudit()
		g.query(ctx)
	case *messages.JobCheck:
		g.refreshIfStale(ctx, msg.WorkerId, msg.Attempt)
		if g.current(msg.WorkerId, msg.Attempt) {
			g.audited, g.checking = 0, msg.Attempt // whatever the worker said before, ask again
			g.stopAudit()
			g.ask(ctx)
		}
	case *messages.JobAudit:
		g.onAudit(ctx, msg)
	case *laneTick:
		g.laneSave = nil
		g.saveLane(ctx, msg.attempt)
	case *deadlineTick:
		g.deadline = nil
		if !g.job.Status.Final() {
			g.log.Warn("job passed its deadline; forcing it closed", slog.Int("timeout_s", g.job.TimeoutS))
			g.end(ctx, persistence.Finish{Status: persistence.StatusFailed, Reason: persistence.ReasonDeadlineExceeded,
				Error: fmt.Sprintf("not done within timeout_s=%d", g.job.TimeoutS)}, slotKept)
		}
	case *supervise.InjectPanic:
		panic("injected panic in job grain " + g.id)
	case *queuedTimeoutTick:
		g.queuedTO = nil
		if g.job.Status == persistence.StatusQueued {
			g.log.Warn("job waited too long for a worker", slog.Duration("queued_timeout", g.deps.Timing.QueuedTimeout))
			g.end(ctx, persistence.Finish{Status: persistence.StatusFailed, Reason: persistence.ReasonQueuedTimeout,
				Error: fmt.Sprintf("no worker took it within %s", g.deps.Timing.QueuedTimeout)}, slotFreed)
		}
	}
}

// gone ends the activation of a job the store does not hold: no timer of
// it may fire, and a later message activates a grain that reads the store.
func (g *jobGrain) gone(ctx actor.Context) {
	g.missing = true
	g.stopTimers()
	g.stopDeadline()
	ctx.Stop(ctx.Self())
}

// refuse answers a request while the store cannot give the job.
func (g *jobGrain) refuse(ctx actor.Context) {
	if _, isPlace := ctx.Message().(*messages.JobPlace); isPlace {
		g.sched(ctx, &messages.SchedPlaceFailed{JobId: g.id, WorkerId: ctx.Message().(*messages.JobPlace).WorkerId})
	}
	if g.missing {
		// For good: a report of a job that does not exist is refused, not
		// retried (its sender drops it).
		reply(ctx, fail(messages.CodeNotFound, "no job %s", g.id))
		return
	}
	reply(ctx, fail(messages.CodeUnavailable, "job %s could not be loaded", g.id))
}

// activationWait is how long a new activation waits for its first message
// before it loads the job on its own (a restarted incarnation gets none).
const activationWait = 200 * time.Millisecond

// activate takes the job into a new activation and arms what its state
// needs; false as load. created is the record of the wake that activated
// the grain, when that wake is a new job's: it is taken as is, with no read
// of the store, because it is provably the current state. Create stored it
// a moment ago (or, announced, is storing it: the claim shares its commit
// or follows it) and the submit's wake is this activation's first message;
// every transition of a job is made by its grain, and this activation is
// the first to exist (a grain activated before — by a cancel that came
// first, a re-drive — read the store and is loaded, so its created is
// ignored). The one way another copy can exist, two activations for a
// moment after a topology change (protoactor #799), is the one every
// activation already lives with: each transition is a conditional write
// (the claim wants queued and unassigned, the others the attempt), so a
// copy that is behind loses its first write and reloads. Every other wake
// (hub start, re-drive, reconciler, scheduler) carries no record and the
// activation reads the store.
func (g *jobGrain) activate(ctx actor.Context, created *messages.JobRecord) bool {
	g.activated = true
	if j, ok := jobOfRecord(g.id, created); ok {
		g.job, g.loaded = j, true
		g.arm(ctx)
	} else {
		g.load(ctx)
	}
	// The wake's JobEnsure, read next (or now), need not enqueue again.
	g.enqueued = g.job.Status == persistence.StatusQueued || g.job.Status == persistence.StatusScheduled
	return g.loaded
}

// load reads the job and arms what its state needs. False when the store
// failed (the next message retries) or the job does not exist.
func (g *jobGrain) load(ctx actor.Context) bool {
	rctx := deadline.Within(g.deps.Timing.GrainTimeout)
	j, err := g.deps.Jobs.Get(rctx, g.id)
	g.missing = errors.Is(err, persistence.ErrNotFound)
	if err != nil {
		if !g.missing {
			g.log.Warn("job grain: load failed", slog.Any("err", err))
		}
		g.idle.Set(g.deps.Timing.IdlePassivate)
		return false
	}
	if g.laneUnsaved != 0 && j.Status == persistence.StatusRunning && j.Attempts == g.laneUnsaved &&
		j.WorkerID == g.job.WorkerID && j.Lane == "" {
		j.Lane = g.job.Lane // the store is behind on it by design, not stale
	} else {
		g.laneSaved()
	}
	g.job, g.loaded = j, true
	g.arm(ctx)
	return true
}

// arm sets the timers of the current state: a queued or running job always
// has its hard deadline (forced close), a queued one its queued timeout; a
// final one passivates when idle.
func (g *jobGrain) arm(ctx actor.Context) {
	g.stopTimers()
	now := g.deps.Clock()
	if g.job.Status == persistence.StatusScheduled && !g.armScheduled(ctx, now) {
		g.stopDeadline()
		return // waits for its time, with no timers of its own
	}
	if g.job.Status.Final() {
		g.stopDeadline()
		g.idle.Set(g.deps.Timing.finalPassivate())
		return
	}
	g.idle.Cancel()
	if due := g.job.Deadline(); g.deadline == nil || !due.Equal(g.deadlineAt) {
		g.stopDeadline()
		g.deadline, g.deadlineAt = g.timers.After(max(due.Sub(now), 0), &deadlineTick{}), due
	}
	if g.unconfirmed() {
		due := g.job.StartedAt.Add(AssignAuditAfter)
		g.audit = g.timers.After(max(due.Sub(now), 0), &auditTick{})
	}
	if g.job.Status == persistence.StatusQueued {
		due := g.job.ReadyAt().Add(g.deps.Timing.QueuedTimeout)
		g.queuedTO = g.timers.After(max(due.Sub(now), 0), &queuedTimeoutTick{})
		g.enqueue(ctx)
	}
}

// enqueue asks the scheduler for a lane.
func (g *jobGrain) enqueue(ctx actor.Context) {
	msg := &messages.SchedEnqueue{JobId: g.id, CreatedUnixMs: g.job.CreatedAt.UnixMilli(), Mode: g.job.Mode,
		Priority: proto.Int32(int32(g.job.Priority)), Tenant: g.job.Tenant, Profile: messages.ProfileOf(g.job.Params),
		Job: RefOf(ctx.Self())}
	if g.job.Status == persistence.StatusScheduled {
		msg.RunAtUnixMs = g.job.RunAt.Add(time.Millisecond - 1).UnixMilli() // rounded up: never woken early
	}
	g.sched(ctx, msg)
}

// stopTimers stops the timers of a state; the deadline, which holds
// across states, stops on its own (stopDeadline).
func (g *jobGrain) stopTimers() {
	if g.queuedTO != nil {
		g.queuedTO()
		g.queuedTO = nil
	}
	g.stopAudit()
}

func (g *jobGrain) stopDeadline() {
	if g.deadline != nil {
		g.deadline()
		g.deadline = nil
	}
}

func (g *jobGrain) stopAudit() {
	if g.audit != nil {
		g.audit()
		g.audit = nil
	}
}

// unconfirmed: claimed, but the worker has not said it started the attempt
// (or no longer lists it); until it answers a job_query it is asked again.
func (g *jobGrain) unconfirmed() bool {
	return g.job.Status == persistence.StatusRunning && g.audited != g.job.Attempts &&
		(g.job.Lane == "" || int(g.checking) == g.job.Attempts)
}

// query asks the worker whether it holds the current attempt; its
// job_status answer comes back as JobAudit, through whichever hub holds its
// socket.
func (g *jobGrain) query(ctx actor.Context) {
	if !g.unconfirmed() {
		return
	}
	g.ask(ctx)
}

// ask sends job_query for the current attempt and re-arms the audit timer
// until an answer comes.
func (g *jobGrain) ask(ctx actor.Context) {
	frame, err := messages.Frame{Type: messages.TypeJobQuery, JobID: g.id, Attempt: g.job.Attempts}.Encode()
	if err != nil {
		g.log.Error("encode job_query", slog.Any("err", err))
		return
	}
	g.deps.Metrics.AssignmentQueries.Inc()
	g.log.Info("asking the worker whether it holds the attempt", slog.String("worker_id", g.job.WorkerID),
		slog.Int("attempt", g.job.Attempts))
	Send(ctx, g.cl, g.job.WorkerID, KindWorker, &messages.WorkerForward{Frame: frame})
	g.audit = g.timers.After(auditEvery, &auditTick{})
}

// onAudit acts on the worker's answer. "unknown" is final on the worker's
// side (it refuses that attempt from now on), so the job goes back to the
// queue under a new attempt with no risk of a second run.
func (g *jobGrain) onAudit(ctx actor.Context, m *messages.JobAudit) {
	g.load(ctx) // act on the stored truth, not on this activation's copy
	if !g.current(m.WorkerId, m.Attempt) {
		return
	}
	if m.State != messages.JobStateUnknown {
		g.audited = int(m.Attempt)
		g.stopAudit()
		return
	}
	if m.WorkerStartedUnixMs == 0 || time.UnixMilli(m.WorkerStartedUnixMs).After(g.job.StartedAt) {
		// A worker process younger than the claim cannot know whether its
		// predecessor got (and ran) the attempt: that is a lost worker, not
		// an undelivered assignment — retried only while attempts remain.
		// The start time is reckoned as receipt time minus uptime, so the
		// answer's travel time can only make the process look younger:
		// a real restart after the claim is never missed (no second run);
		// a worker that started within that travel time before the claim
		// is taken for restarted, which costs an attempt, never a double run.
		g.log.Warn("worker restarted since the assignment; treating the attempt as lost", slog.String("worker_id", m.WorkerId))
		g.workerLost(ctx, &messages.JobWorkerLost{WorkerId: m.WorkerId, Attempt: m.Attempt})
		return
	}
	rctx := deadline.Within(g.deps.Timing.GrainTimeout)
	err := g.deps.Jobs.Requeue(rctx, g.id, int(m.Attempt))
	if err != nil {
		g.log.Warn("requeue of a disowned attempt failed; asking again later", slog.Any("err", err))
		if errors.Is(err, persistence.ErrConflict) {
			g.load(ctx)
		}
		return
	}
	g.deps.Metrics.AssignmentsRecovered.Inc()
	g.log.Warn("worker never got the attempt; job queued again", slog.String("worker_id", m.WorkerId),
		slog.Int("attempt", int(m.Attempt)))
	g.load(ctx) // queued again before the slot goes (see rejected)
	Send(ctx, g.cl, m.WorkerId, KindWorker, &messages.WorkerRelease{JobId: g.id, Attempt: m.Attempt})
}

func (g *jobGrain) sched(ctx actor.Context, msg interface{}) {
	Send(ctx, g.cl, SchedulerID, KindScheduler, msg)
}

// place runs the claim of record for the scheduler's choice, then asks the
// worker grain to reserve the slot and send the job; a refused send rolls the
// claim back so the job is placed again. The worker's answer comes back as
// a continuation: meanwhile this grain answers reads, cancels and reports
// (a quick worker's job_started may well come first).
func (g *jobGrain) place(ctx actor.Context, msg *messages.JobPlace) {
	failed := &messages.SchedPlaceFailed{JobId: g.id, WorkerId: msg.WorkerId}
	if g.job.Status != persistence.StatusQueued || g.job.WorkerID != "" {
		g.sched(ctx, failed) // placed already (a duplicate), or final
		return
	}
	params := g.job.Params
	if k := g.deps.ParamsKey; k != nil {
		var err error
		if params, err = k.OpenParams(params); err != nil {
			// Sealed under a key no hub has any more (the cluster's secret
			// changed): no attempt could succeed, so fail it for good.
			g.log.Warn("job params do not open; job failed", slog.Any("err", err))
			g.end(ctx, persistence.Finish{Status: persistence.StatusFailed, Reason: persistence.ReasonJobError,
				Error: fmt.Sprintf("%v: submit the job again", err)}, slotFreed)
			g.sched(ctx, failed)
			return
		}
	}
	rctx := deadline.Within(g.deps.Timing.GrainTimeout)
	took := prometheus.NewTimer(g.deps.Metrics.StoreWrites.Claim)
	claimed, err := g.deps.Jobs.Claim(rctx, g.id, msg.WorkerId, g.deps.Clock())
	took.ObserveDuration()
	if err != nil {
		g.deps.Metrics.ClaimsLost.Inc()
		g.log.Info("claim lost or failed", slog.String("worker_id", msg.WorkerId), slog.Any("err", err))
		if errors.Is(err, persistence.ErrNotFound) {
			// Not stored: a create announced early (CreateAnnounced) that
			// failed on its way to disk, and its submitter was told so.
			// There is nothing to place, now or later.
			g.sched(ctx, failed)
			g.gone(ctx)
			return
		}
		if !errors.Is(err, persistence.ErrConflict) {
			// Store trouble: try again later, not in a tight loop.
			failed.Requeue, failed.RetryAfterMs = true, storeRetry.Milliseconds()
		} else {
			g.load(ctx) // someone else moved it: take the stored truth
		}
		g.sched(ctx, failed)
		return
	}
	// The claim is the truth from here on, whatever the worker answers.
	g.job = claimed
	// msg.Lane: the profile's warm lane, a hint the worker honours when
	// that lane is free (README "Profiles and affinity").
	frame, err := messages.Frame{Type: messages.TypeAssignJob, JobID: g.id, Attempt: claimed.Attempts,
		Mode: claimed.Mode, Params: params, Deadline: claimed.Deadline().UnixMilli(), Lane: msg.Lane}.Encode()
	if err != nil {
		g.assigned(ctx, msg.WorkerId, claimed.Attempts, nil, err)
		return
	}
	// The continuation keeps the attempt alone: capturing the claimed job
	// would move the whole record to the heap on every placement.
	workerID, attempt := msg.WorkerId, claimed.Attempts
	Ask(ctx, g.timers, g.cl, workerID, KindWorker,
		&messages.WorkerAssign{JobId: g.id, Attempt: int32(attempt), Frame: frame, Job: RefOf(ctx.Self())},
		g.deps.Timing.AssignGrace,
		func(res *messages.Reply, err error) { g.assigned(ctx, workerID, attempt, res, err) })
}

// assigned acts on the worker grain's answer to an assignment.
func (g *jobGrain) assigned(ctx actor.Context, workerID string, attempt int, res *messages.Reply, err error) {
	// What happened meanwhile counts: a job that already finished, was
	// canceled or moved on keeps that state; only the scheduler's
	// placement is settled.
	live := g.job.Status == persistence.StatusRunning && g.job.WorkerID == workerID && g.job.Attempts == attempt
	if err != nil || messages.CodeInternal.Is(res) || messages.CodeUnconfirmed.Is(res) {
		// No answer is not a refusal: the worker may well have the job (its
		// grain's reply was lost with a dying hub). Rolling the claim back
		// now could run it twice, so the claim stands: if the worker has
		// it, it reports under this attempt; if not, the job ends at its
		// deadline (forced close) rather than risk a second run.
		g.deps.Metrics.AssignmentsUnconfirmed.Inc()
		g.log.Warn("assignment unconfirmed; keeping the claim until the worker reports or disowns it",
			slog.String("worker_id", workerID), slog.String("cause", ErrString(err, res)))
		if live {
			g.arm(ctx)
		}
		g.sched(ctx, &messages.SchedPlaced{JobId: g.id, WorkerId: workerID})
		return
	}
	if !res.Ok {
		failed := &messages.SchedPlaceFailed{JobId: g.id, WorkerId: workerID}
		g.log.Info("worker refused the job; rolling the claim back", slog.String("worker_id", workerID),
			slog.String("cause", ErrString(err, res)))
		rctx := deadline.Within(g.deps.Timing.GrainTimeout)
		uerr := g.deps.Jobs.Unclaim(rctx, g.id, workerID, attempt)
		if uerr != nil && live {
			g.log.Error("roll back claim", slog.Any("err", uerr))
		}
		g.load(ctx)
		failed.Requeue = g.job.Status == persistence.StatusQueued
		g.sched(ctx, failed)
		return
	}
	if live {
		g.arm(ctx)
	}
	g.log.Debug("job placed", slog.String("worker_id", workerID), slog.Int("attempt", attempt))
	if !res.PlacedReported {
		// An older worker grain (or a retried request's answer): the
		// scheduler hears it from here.
		g.sched(ctx, &messages.SchedPlaced{JobId: g.id, WorkerId: workerID})
	}
}

// refreshIfStale reloads the job before a report is judged stale: two
// activations of one job grain can coexist for a moment after a topology
// change (protoactor #799), and the one holding an old copy must not refuse
// — and so lose — a report the store says is current. The store's
// conditional writes still fence whatever is really stale.
func (g *jobGrain) refreshIfStale(ctx actor.Context, workerID string, attempt int32) {
	if !g.current(workerID, attempt) {
		g.load(ctx)
	}
}

// current reports whether a worker's report belongs to the live attempt.
func (g *jobGrain) current(workerID string, attempt int32) bool {
	return g.job.Status == persistence.StatusRunning && g.job.WorkerID == workerID && int32(g.job.Attempts) == attempt
}

func (g *jobGrain) started(ctx actor.Context, m *messages.JobStarted) *messages.Reply {
	g.refreshIfStale(ctx, m.WorkerId, m.Attempt)
	if !g.current(m.WorkerId, m.Attempt) {
		g.deps.Metrics.FencedReports.WithLabelValues("started").Inc()
		return fail(messages.CodeStale, "attempt %d on %s is not current", m.Attempt, m.WorkerId)
	}
	// The lane is kept here and written with the attempt's end (Finish.Lane,
	// Reschedule.Lane), or on its own laneSaveAfter from now if the attempt
	// runs that long: nothing needs it durable before. What reads the
	// stored lane: GET /jobs/{id} and the list (shown, from laneSaveAfter
	// on); the attempts log (written with the end); the reconciler, which
	// wakes a running job with no stored lane 2×AssignAuditAfter after its
	// claim (it has one by then); a new activation's unconfirmed() (lane
	// empty: ask the worker). The live view needs only the worker. So a
	// hub that dies between job_started and the lane's write leaves the
	// lane unknown in the store, and that costs one job_query: the job's
	// next activation asks the worker (AssignAuditAfter after the claim)
	// whether it runs the attempt, as for any attempt whose start it never
	// heard of; "running" settles it and the job goes on under the same
	// attempt — never run twice, never lost (the claim, not the lane, is
	// the record of who runs it). The lane stays unknown for that attempt.
	if g.job.Lane == "" && m.Lane != "" {
		g.job.Lane, g.laneUnsaved = m.Lane, int(m.Attempt)
		if g.laneSave == nil {
			g.laneSave = g.timers.After(laneSaveAfter, &laneTick{attempt: int(m.Attempt)})
		}
	}
	if m.Attempt == 1 && g.waitSeen != m.Attempt {
		// Once per activation: a re-sent job_started is not a second wait.
		g.waitSeen = m.Attempt
		g.deps.Metrics.QueueWait.Observe(g.deps.Clock().Sub(g.job.CreatedAt).Seconds())
	}
	g.stopAudit()
	return ok(nil)
}

// saveLane writes the unsaved lane of attempt on its own: the attempt ran
// laneSaveAfter without ending (or it is about to end by the hub's own
// decision, which cannot carry it: flushLane). A failed write is tried
// again later; a lost one (the attempt moved on) reloads.
func (g *jobGrain) saveLane(ctx actor.Context, attempt int) {
	if g.laneUnsaved == 0 || g.laneUnsaved != attempt || !g.current(g.job.WorkerID, int32(attempt)) {
		return
	}
	rctx := deadline.Within(g.deps.Timing.GrainTimeout)
	err := g.deps.Jobs.SetLane(rctx, g.id, attempt, g.job.Lane)
	switch {
	case err == nil:
		g.laneSaved()
	case errors.Is(err, persistence.ErrConflict), errors.Is(err, persistence.ErrNotFound):
		g.laneSaved()
		g.load(ctx)
	default:
		g.log.Warn("saving the lane failed; trying again", slog.Any("err", err))
		if g.laneSave == nil {
			g.laneSave = g.timers.After(storeRetry, &laneTick{attempt: attempt})
		}
	}
}

// flushLane saves an unsaved lane before a transition that cannot carry
// it (a requeue, an end under AnyAttempt): rare paths, one write more.
func (g *jobGrain) flushLane(ctx actor.Context) {
	if g.laneUnsaved != 0 {
		g.saveLane(ctx, g.laneUnsaved)
	}
}

// laneSaved: the store holds the lane, or the attempt ended with it.
func (g *jobGrain) laneSaved() {
	g.laneUnsaved = 0
	if g.laneSave != nil {
		g.laneSave()
		g.laneSave = nil
	}
}

// storedCopy is the job as the store holds it while attempt runs, for a
// store to compute the attempt's end from instead of reading the row (one
// round trip on MariaDB, not two: persistence.Finish.From); the store
// checks the row is still as the copy says.
func (g *jobGrain) storedCopy(attempt int) *persistence.Job {
	from := g.job
	if g.unsavedLane(attempt) != "" {
		from.Lane = "" // as stored: the claim cleared it
	}
	return &from
}

// unsavedLane is the lane to write with the end of attempt, "" when the
// store has it already (or it is another attempt's).
func (g *jobGrain) unsavedLane(attempt int) string {
	if g.laneUnsaved != 0 && g.laneUnsaved == attempt {
		return g.job.Lane
	}
	return ""
}

// endedAt is a reported end's finished_at: when the link's hub read the
// worker's report, if it says, else now. A worker's reports reach its link
// in the order it freed their lanes, while this turn comes after the log's
// done sentinel is stored and, with several hubs, after a hop across the
// cluster, which differ from job to job. A stamp outside the attempt
// (another hub's clock off from this one's) is not taken: an end is never
// before its start, nor after this turn.
func (g *jobGrain) endedAt(reportedUnixNs int64) time.Time {
	now := g.deps.Clock()
	if reportedUnixNs <= 0 {
		return now
	}
	if read := time.Unix(0, reportedUnixNs); read.After(g.job.StartedAt) && read.Before(now) {
		return read
	}
	return now
}

func (g *jobGrain) finished(ctx actor.Context, m *messages.JobFinished) *messages.Reply {
	g.refreshIfStale(ctx, m.WorkerId, m.Attempt)
	if !g.current(m.WorkerId, m.Attempt) {
		if g.job.Status.Final() && g.job.WorkerID == m.WorkerId && int32(g.job.Attempts) == m.Attempt {
			// A re-sent report of what is stored (ack again), or the
			// worker's end of an attempt the hub ended while it ran it
			// (end): its lane is free now, and so is the slot end kept. A
			// slot freed already makes the release a no-op.
			Send(ctx, g.cl, m.WorkerId, KindWorker, &messages.WorkerRelease{JobId: g.id, Attempt: m.Attempt})
			return ok(nil)
		}
		g.deps.Metrics.FencedReports.WithLabelValues("finished").Inc()
		g.log.Warn("stale report refused", slog.String("worker_id", m.WorkerId), slog.Int("attempt", int(m.Attempt)),
			slog.String("status", string(g.job.Status)), slog.Int("current_attempt", g.job.Attempts))
		return fail(messages.CodeStale, "attempt %d on %s is not current", m.Attempt, m.WorkerId)
	}
	if !m.Succeeded && m.Reason == persistence.ReasonRejected {
		return g.rejected(ctx, m)
	}
	if g.retryable(m) {
		return g.retryLater(ctx, m)
	}
	// The worker's own report says its lane is free: the slot goes back
	// to the scheduler now, not one store write later, so the lane's next
	// job is placed while this end is written — the write is most of the
	// time from a freed lane to its next job. The end itself is still
	// acknowledged (to the link, so to the worker) only once it is durable;
	// a write that fails leaves the job running here and the report is sent
	// again, but the lane, which the worker has freed, is not held for it.
	//
	// The end is stamped before the slot goes: whatever the freed lane (or
	// profile) runs next is claimed after this job's finished_at, never
	// before it, however this turn is delayed between the two.
	at := g.freedAt // freed ahead (JobLaneFreed): the lane's next job may be claimed since
	if g.freed != int(m.Attempt) {
		at = g.endedAt(m.ReportedUnixNs)
		g.free(ctx, int(m.Attempt), at)
	}
	f := persistence.Finish{Status: persistence.StatusSucceeded, Result: m.Result, Assets: m.Assets, At: at}
	if !m.Succeeded {
		f = persistence.Finish{Status: persistence.StatusFailed, Reason: m.Reason, Error: m.Error, Result: m.Result, Assets: m.Assets, At: at}
		if m.Reason == persistence.ReasonCanceled {
			f.Status = persistence.StatusCanceled
		}
	}
	if err := g.finish(ctx, int(m.Attempt), f, slotFreed); err != nil {
		return fail(messages.CodeStore, "%v", err)
	}
	if !m.Succeeded {
		// The link kept the log open in case of a retry (logpipe.End's
		// KeepOpen); there is none, so end it. A log already ended is left.
		if lr := g.deps.LogRoute; lr != nil {
			lr().CloseLog(ctx, g.id)
		}
	}
	// The link only needs the verdict: no whole job crosses the cluster
	// per finished attempt.
	return ok(nil)
}

// rejected: the worker refused the assignment (no free lane after all, or it
// is draining). The job never ran, so the claim is rolled back — attempt
// returned — and the job queued again, not failed.
func (g *jobGrain) rejected(ctx actor.Context, m *messages.JobFinished) *messages.Reply {
	rctx := deadline.Within(g.deps.Timing.GrainTimeout)
	err := g.deps.Jobs.Unclaim(rctx, g.id, m.WorkerId, int(m.Attempt))
	if err != nil {
		return fail(messages.CodeStore, "roll back rejected claim: %v", err)
	}
	g.deps.Metrics.AssignmentsRejected.Inc()
	g.log.Info("worker rejected the job; queued again", slog.String("worker_id", m.WorkerId), slog.String("error", m.Error))
	// Queued again (load enqueues it) before its slot goes: the scheduler
	// hears of the job before the state push that frees the slot, so the
	// freed slot is not given to a job of lower priority meanwhile. The
	// slot is released even when the read fails (the next wake enqueues).
	g.load(ctx)
	Send(ctx, g.cl, m.WorkerId, KindWorker, &messages.WorkerRelease{JobId: g.id, Attempt: m.Attempt, Rejected: true})
	return ok(nil)
}

// finish writes a final state fenced by attempt and frees the slot, unless
// slotKept (see end): then the scheduler is told the job ended (its
// tenant's count, its profile) and the worker grain keeps the slot.
func (g *jobGrain) finish(ctx actor.Context, attempt int, f persistence.Finish, slot endSlot) error {
	if f.At.IsZero() {
		f.At = g.deps.Clock()
	}
	f.Hub = g.deps.HubID
	if attempt == persistence.AnyAttempt {
		g.flushLane(ctx) // AnyAttempt cannot say whose lane it is
	} else {
		f.Lane = g.unsavedLane(attempt)
		f.From = g.storedCopy(attempt)
	}
	prev := g.job
	rctx := deadline.Within(g.deps.Timing.GrainTimeout)
	took := prometheus.NewTimer(g.deps.Metrics.StoreWrites.Finish)
	j, err := g.deps.Jobs.Finish(rctx, g.id, attempt, f)
	took.ObserveDuration()
	if err != nil {
		if errors.Is(err, persistence.ErrConflict) {
			g.load(ctx)
		}
		return fmt.Errorf("finish job %s: %w", g.id, err)
	}
	g.laneSaved()
	g.job = j
	g.arm(ctx)
	g.deps.Metrics.JobsFinished.WithLabelValues(string(j.Status), j.Reason).Inc()
	if prev.Status == persistence.StatusRunning && !j.StartedAt.IsZero() {
		g.deps.Metrics.JobDuration.WithLabelValues(metricMode(j.Mode)).Observe(j.FinishedAt.Sub(j.StartedAt).Seconds())
	}
	g.log.Debug("job final", slog.String("status", string(j.Status)), slog.String("reason", j.Reason))
	switch prev.Status {
	case persistence.StatusRunning:
		switch {
		case g.freed == prev.Attempts: // freed ahead of the write (finished)
		case slot == slotKept:
			g.sched(ctx, &messages.SchedRemove{JobId: g.id, Lane: j.Lane})
		default:
			g.release(ctx, prev.WorkerID, prev.Attempts, j.Lane)
		}
	case persistence.StatusQueued, persistence.StatusScheduled:
		g.sched(ctx, &messages.SchedRemove{JobId: g.id})
	}
	return nil
}

// free lets go of the running attempt's worker slot ahead of its end's
// write (see finished), once per attempt; at is the end's finished_at.
func (g *jobGrain) free(ctx actor.Context, attempt int, at time.Time) {
	if g.job.Status != persistence.StatusRunning || g.job.Attempts != attempt || g.freed == attempt {
		return
	}
	g.freed, g.freedAt = attempt, at
	g.release(ctx, g.job.WorkerID, attempt, g.job.Lane)
}

// release frees the slot that attempt holds on workerID: the worker grain
// frees it and hands the scheduler this job's SchedRemove in the same
// state push (its tenant's max_running frees, lane is its profile's warm
// one).
func (g *jobGrain) release(ctx actor.Context, workerID string, attempt int, lane string) {
	Send(ctx, g.cl, workerID, KindWorker, &messages.WorkerRelease{JobId: g.id, Attempt: int32(attempt), Final: true, Lane: lane})
}

// endSlot is what a job's end does with its running attempt's worker slot.
type endSlot bool

const (
	// slotKept: the worker may still run the attempt (a cancel, a
	// deadline). The slot stays taken until the worker reports the
	// attempt's end (finished acks it and releases the slot), stops
	// listing it (the worker grain's prune, at its next report from
	// SlotPruneAfter on) or is lost: the lane is busy until the job has
	// stopped, and a job placed on it before would be rejected, queued
	// again and placed there again, over and over while the lane stops.
	slotKept endSlot = true
	// slotFreed: nothing runs the attempt any more (the worker reported
	// its end, or was lost), or there is none (a queued job).
	slotFreed endSlot = false
)

// end is the hub's own decision (cancel, deadline, lost worker): it ends the
// current attempt whatever it is, tells the worker to stop, and closes the
// log so followers are not left waiting for a worker that will not report.
func (g *jobGrain) end(ctx actor.Context, f persistence.Finish, slot endSlot) {
	prev := g.job
	if err := g.finish(ctx, persistence.AnyAttempt, f, slot); err != nil {
		g.log.Warn("could not end job", slog.Any("err", err))
		return
	}
	if prev.Status == persistence.StatusRunning {
		Send(ctx, g.cl, prev.WorkerID, KindWorker, &messages.WorkerCancelJob{JobId: g.id, Attempt: int32(prev.Attempts)})
	}
	if lr := g.deps.LogRoute; lr != nil {
		lr().CloseLog(ctx, g.id)
	}
}

func (g *jobGrain) cancel(ctx actor.Context) *messages.Reply {
	if g.job.Status.Final() {
		return &messages.Reply{Ok: false, Code: string(messages.CodeConflict), Message: fmt.Sprintf("job %s is already %s", g.id, g.job.Status), Json: g.jobJSON()}
	}
	g.end(ctx, persistence.Finish{Status: persistence.StatusCanceled, Reason: persistence.ReasonCanceled, Error: "canceled by request"}, slotKept)
	if !g.job.Status.Final() {
		return fail(messages.CodeUnavailable, "job %s could not be canceled now", g.id)
	}
	return ok(g.jobJSON())
}

// workerLost: the worker stayed away past the grace. Retry while attempts
// remain (ours; the source only fails the job), else fail it.
func (g *jobGrain) workerLost(ctx actor.Context, m *messages.JobWorkerLost) {
	if g.job.Status != persistence.StatusRunning || g.job.WorkerID != m.WorkerId ||
		(m.Attempt != 0 && int32(g.job.Attempts) != m.Attempt) {
		return
	}
	if g.job.Attempts < g.job.MaxAttempts {
		g.flushLane(ctx) // the attempts log keeps the lost attempt's lane
		rctx := deadline.Within(g.deps.Timing.GrainTimeout)
		err := g.deps.Jobs.Requeue(rctx, g.id, g.job.Attempts)
		if err == nil {
			g.log.Warn("worker lost; job queued again", slog.String("worker_id", m.WorkerId), slog.Int("attempt", g.job.Attempts))
			attempt := int32(g.job.Attempts)
			g.load(ctx) // queued again before the slot goes (see rejected)
			Send(ctx, g.cl, m.WorkerId, KindWorker, &messages.WorkerRelease{JobId: g.id, Attempt: attempt})
			return
		}
		g.log.Warn("requeue after worker loss failed", slog.Any("err", err))
	}
	g.log.Warn("worker lost; job failed", slog.String("worker_id", m.WorkerId))
	g.end(ctx, persistence.Finish{Status: persistence.StatusFailed, Reason: persistence.ReasonWorkerLost,
		Error: fmt.Sprintf("worker %s lost the job (gone past %s, or restarted without it)", m.WorkerId, g.deps.Timing.OrphanGrace)}, slotFreed)
}

func (g *jobGrain) jobJSON() []byte {
	b, _ := json.Marshal(g.job)
	return b
}
