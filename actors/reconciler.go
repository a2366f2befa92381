package actors

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/scheduler"

	"github.com/paprika-hub/paprika/messages"
	"github.com/paprika-hub/paprika/persistence"
)

// reconciler runs the timed safety nets of DESIGN.md ("Recovery layers"):
// re-drive of queued jobs the event-driven scheduler missed, and the sweep
// that fails jobs whose worker is gone and activates overdue queued jobs so
// their own timers fire. It decides nothing itself: it wakes the job grains,
// which apply the fenced transitions.
type reconciler struct {
	// fixed after construction
	deps *Deps

	// actor-confined state
	log       *slog.Logger
	timers    *scheduler.TimerScheduler
	cancels   []scheduler.CancelFunc
	lastGood  []persistence.WorkerInfo
	lastGoodT time.Time
}

type redriveTick struct{}
type reconcileTick struct{}

// NewReconcilerProps builds the reconciler (one per hub).
func NewReconcilerProps(d *Deps) *actor.Props {
	return actor.PropsFromProducer(func() actor.Actor { return &reconciler{deps: d} },
		actor.WithReceiverMiddleware(recoverMiddleware("reconciler", d)))
}

func (r *reconciler) Receive(ctx actor.Context) {
	switch ctx.Message().(type) {
	case *actor.Started:
		r.log = r.deps.Log.With(slog.String("actor", "reconciler"))
		r.timers = scheduler.NewTimerScheduler(ctx)
		t := r.deps.Timing
		if !t.RedriveDisable {
			r.cancels = append(r.cancels, r.timers.SendRepeatedly(t.RedriveInterval, t.RedriveInterval, ctx.Self(), &redriveTick{}))
		} else {
			r.log.Warn("re-drive disabled (redrive.disable / PAPRIKA_QUEUE_REDRIVE_DISABLE)")
		}
		r.cancels = append(r.cancels, r.timers.SendRepeatedly(t.ReconcileInterval, t.ReconcileInterval, ctx.Self(), &reconcileTick{}))
	case *actor.Stopping:
		for _, c := range r.cancels {
			c()
		}
	case *actor.Restarting:
		for _, c := range r.cancels {
			c()
		}
	case *InjectPanic:
		panic("injected panic in reconciler")
	case *redriveTick:
		r.redrive(ctx)
	case *reconcileTick:
		r.reconcile(ctx)
	}
}

// redrive wakes queued jobs older than the age gate (the submit path may
// still own younger ones), oldest first; each grain enqueues itself and the
// scheduler ignores those it already holds. The claim is still the store's
// conditional update, so a job two hubs re-drive is run once.
func (r *reconciler) redrive(ctx actor.Context) {
	cutoff := r.deps.now().Add(-r.deps.Timing.RedriveMinAge)
	n := 0
	r.eachJob(persistence.StatusQueued, 1000, func(j persistence.Job) bool {
		if j.CreatedAt.After(cutoff) {
			return false // oldest first: the rest are younger
		}
		if j.WorkerID == "" {
			// A job still queued past the age gate may have a grain whose
			// cached PID is stale: look it up afresh.
			r.deps.Cluster().PidCache.Remove(j.ID, KindJob)
			sendGrain(ctx, r.deps.Cluster(), j.ID, KindJob, &messages.JobEnsure{})
			n++
		}
		return true
	})
	if n > 0 {
		r.deps.Metrics.Add("paprika_redrive_jobs_total", int64(n))
		r.log.Info("re-drive woke queued jobs", slog.Int("jobs", n))
	}
}

// fleet reads the fleet-wide worker view: never only this hub's sockets,
// or healthy jobs of other hubs' workers would be failed en masse. A slow
// or failed read reuses the last good view for up to fleet_cache; with
// neither, the sweep is skipped rather than run on an empty view.
func (r *reconciler) fleet() ([]persistence.WorkerInfo, bool) {
	t := r.deps.Timing
	rctx, cancel := context.WithTimeout(context.Background(), t.FleetReadTimeout)
	ws, err := r.deps.Workers.List(rctx)
	cancel()
	now := r.deps.now()
	if err == nil {
		r.lastGood, r.lastGoodT = ws, now
		return ws, true
	}
	r.deps.Metrics.Inc("paprika_fleet_read_errors_total")
	if r.lastGood != nil && now.Sub(r.lastGoodT) <= t.FleetCache {
		r.log.Warn("fleet read failed; using the last good view", slog.Any("err", err), slog.Duration("age", now.Sub(r.lastGoodT)))
		return r.lastGood, true
	}
	r.log.Warn("fleet read failed and no recent view; skipping the sweep", slog.Any("err", err))
	return nil, false
}

func (r *reconciler) reconcile(ctx actor.Context) {
	t := r.deps.Timing
	ws, ok := r.fleet()
	if !ok {
		return
	}
	r.wakeSessions(ctx, ws)
	now := r.deps.now()
	byID := make(map[string]persistence.WorkerInfo, len(ws))
	for _, w := range ws {
		byID[w.ID] = w
	}
	lost := 0
	overdue := 0
	r.eachJob(persistence.StatusRunning, 10000, func(j persistence.Job) bool {
		if now.After(j.Deadline()) {
			// Its grain may have lived on a hub that died: wake it so its
			// deadline fires (forced close) wherever it activates now.
			sendGrain(ctx, r.deps.Cluster(), j.ID, KindJob, &messages.JobEnsure{})
			overdue++
			return true
		}
		if j.Lane == "" && now.Sub(j.StartedAt) > 2*AssignAuditAfter {
			// Claimed but never started: its grain (and its audit timer) may
			// have died with a hub. Waking it re-arms the audit.
			sendGrain(ctx, r.deps.Cluster(), j.ID, KindJob, &messages.JobEnsure{})
		}
		w, known := byID[j.WorkerID]
		if known && w.Connected && now.Sub(w.LastSeen) <= t.AliveWindow {
			return true
		}
		since := j.StartedAt
		if known && w.LastSeen.After(since) {
			since = w.LastSeen
		}
		if now.Sub(since) > t.OrphanGrace {
			sendGrain(ctx, r.deps.Cluster(), j.ID, KindJob, &messages.JobWorkerLost{WorkerId: j.WorkerID, Attempt: int32(j.Attempts)})
			lost++
		}
		return true
	})
	r.eachJob(persistence.StatusQueued, 10000, func(j persistence.Job) bool {
		if now.Sub(j.CreatedAt) <= t.QueuedTimeout && now.Before(j.Deadline()) {
			return false
		}
		sendGrain(ctx, r.deps.Cluster(), j.ID, KindJob, &messages.JobEnsure{})
		overdue++
		return true
	})
	if lost+overdue > 0 {
		r.deps.Metrics.Add("paprika_reconciler_lost_total", int64(lost))
		r.deps.Metrics.Add("paprika_reconciler_overdue_total", int64(overdue))
		r.log.Info("reconciler swept", slog.Int("worker_lost", lost), slog.Int("overdue", overdue), slog.Int("fleet", len(ws)))
	}
}

// wakeSessions activates the grain of every session a worker holds a lane
// for. A session whose grain died with its hub is otherwise woken only by
// its next caller: an abandoned one would never idle out, and the worker
// grain would keep its lane reserved. Woken, the grain resumes from the
// session store (and idles out in time) or, with no record left, frees the
// lane. A live grain ignores the message.
func (r *reconciler) wakeSessions(ctx actor.Context, ws []persistence.WorkerInfo) {
	for _, w := range ws {
		for _, slot := range w.Running {
			if sid, ok := strings.CutPrefix(slot, sessionSlotPrefix); ok {
				sendGrain(ctx, r.deps.Cluster(), sid, KindSession, &messages.SessionEnsure{WorkerId: w.ID})
			}
		}
	}
}

// eachJob visits jobs of one status oldest first until fn returns false.
func (r *reconciler) eachJob(st persistence.Status, limit int, fn func(persistence.Job) bool) {
	cursor, seen := "", 0
	for seen < limit {
		rctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		jobs, next, err := r.deps.Jobs.List(rctx, persistence.ListQuery{Status: st, Limit: 500, Cursor: cursor, OldestFirst: true})
		cancel()
		if err != nil {
			r.log.Warn("job sweep read failed", slog.String("status", string(st)), slog.Any("err", err))
			return
		}
		for _, j := range jobs {
			seen++
			if !fn(j) {
				return
			}
		}
		if next == "" {
			return
		}
		cursor = next
	}
}
