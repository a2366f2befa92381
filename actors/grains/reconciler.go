package grains

import (
	"context"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/paprika-hub/paprika/actors/supervise"
	"github.com/paprika-hub/paprika/internal/deadline"
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
	timers    *supervise.Timers
	lastGood  []persistence.WorkerInfo
	lastGoodT time.Time
}

type redriveTick struct{}
type reconcileTick struct{}

// NewReconcilerProps builds the reconciler (one per hub).
func NewReconcilerProps(d *Deps) *actor.Props {
	return actor.PropsFromProducer(func() actor.Actor { return &reconciler{deps: d} },
		actor.WithReceiverMiddleware(supervise.Recover("reconciler", d.Log, d.Metrics)))
}

func (r *reconciler) Receive(ctx actor.Context) {
	switch ctx.Message().(type) {
	case *actor.Started:
		r.log = r.deps.Log.With(slog.String("actor", "reconciler"))
		r.timers = supervise.NewTimers(ctx, "reconciler")
		t := r.deps.Timing
		if !t.RedriveDisable {
			r.timers.Every(t.RedriveInterval, &redriveTick{})
		} else {
			r.log.Warn("re-drive disabled (redrive.disable / PAPRIKA_QUEUE_REDRIVE_DISABLE)")
		}
		r.timers.Every(t.ReconcileInterval, &reconcileTick{})
	case *actor.Stopping, *actor.Restarting:
		r.timers.StopAll()
	case *supervise.InjectPanic:
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
	cutoff := r.deps.Clock().Add(-r.deps.Timing.RedriveMinAge)
	n := 0
	r.eachJob(persistence.StatusQueued, 1000, func(j persistence.Job) bool {
		if j.CreatedAt.After(cutoff) {
			return false // oldest first: the rest are younger
		}
		if j.WorkerID == "" {
			// A job still queued past the age gate may have a grain whose
			// cached PID is stale: look it up afresh.
			r.deps.Cluster().PidCache.Remove(j.ID, KindJob)
			Send(ctx, r.deps.Cluster(), j.ID, KindJob, &messages.JobEnsure{})
			n++
		}
		return true
	})
	if n > 0 {
		r.deps.Metrics.RedriveJobs.Add(float64(n))
		r.log.Info("re-drive woke queued jobs", slog.Int("jobs", n))
	}
}

// fleet reads the fleet-wide worker view: never only this hub's sockets,
// or healthy jobs of other hubs' workers would be failed en masse. A slow
// or failed read reuses the last good view for up to fleet_cache; with
// neither, the sweep is skipped rather than run on an empty view.
func (r *reconciler) fleet() ([]persistence.WorkerInfo, bool) {
	t := r.deps.Timing
	rctx := deadline.Within(t.FleetReadTimeout)
	ws, err := r.deps.Workers.List(rctx)
	now := r.deps.Clock()
	if err == nil {
		r.lastGood, r.lastGoodT = ws, now
		return ws, true
	}
	r.deps.Metrics.FleetReadErrors.Inc()
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
	now := r.deps.Clock()
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
			Send(ctx, r.deps.Cluster(), j.ID, KindJob, &messages.JobEnsure{})
			overdue++
			return true
		}
		if j.Lane == "" && now.Sub(j.StartedAt) > 2*AssignAuditAfter {
			// Claimed but never started: its grain (and its audit timer) may
			// have died with a hub. Waking it re-arms the audit.
			Send(ctx, r.deps.Cluster(), j.ID, KindJob, &messages.JobEnsure{})
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
			Send(ctx, r.deps.Cluster(), j.ID, KindJob, &messages.JobWorkerLost{WorkerId: j.WorkerID, Attempt: int32(j.Attempts)})
			lost++
		}
		return true
	})
	r.eachJob(persistence.StatusQueued, 10000, func(j persistence.Job) bool {
		if now.Sub(j.CreatedAt) <= t.QueuedTimeout && now.Before(j.Deadline()) {
			return false
		}
		Send(ctx, r.deps.Cluster(), j.ID, KindJob, &messages.JobEnsure{})
		overdue++
		return true
	})
	overdue += r.wakeMissedScheduled(ctx, now)
	if lost+overdue > 0 {
		r.deps.Metrics.ReconcilerLost.Add(float64(lost))
		r.deps.Metrics.ReconcilerOverdue.Add(float64(overdue))
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
			if sid, ok := slotSession(slot); ok {
				Send(ctx, r.deps.Cluster(), sid, KindSession, &messages.SessionEnsure{WorkerId: w.ID})
			}
		}
	}
}

// eachJob visits jobs of one status oldest first until fn returns false.
func (r *reconciler) eachJob(st persistence.Status, limit int, fn func(persistence.Job) bool) {
	seen := 0
	q := persistence.ListQuery{Status: st, Limit: sweepPage, OldestFirst: true}
	for j, err := range persistence.AllJobs(context.Background(), r.deps.Jobs, q, persistence.PageTimeout(sweepPageTimeout)) {
		if err != nil {
			r.log.Warn("job sweep read failed", slog.String("status", string(st)), slog.Any("err", err))
			return
		}
		if seen++; seen > limit || !fn(j) {
			return
		}
	}
}

// A sweep reads the store in pages of sweepPage jobs, each bounded by
// sweepPageTimeout.
const (
	sweepPage        = 500
	sweepPageTimeout = 10 * time.Second
)
