package grains

import (
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/paprika-hub/paprika/internal/deadline"
	"github.com/paprika-hub/paprika/messages"
	"github.com/paprika-hub/paprika/persistence"
)

// DefaultRetryBaseS is the default retry schedule's base: the n-th retry
// waits n⁴ seconds (River's default), capped by Timing.RetryBackoffMax.
const DefaultRetryBaseS = 1.0

// defaultRetryBackoffMax stands in for an unset Timing.RetryBackoffMax.
const defaultRetryBackoffMax = time.Hour

// promoteRetry: queuing a due job failed on the store; try again.
type promoteRetry struct{}

// RetryWait is the wait before the attempt after attempt n failed: the
// job's own schedule, else the default (DefaultRetryBaseS, capped at
// maxWait), with jitter u in [-1, 1] (persistence.RetryBackoff.Wait).
func RetryWait(b *persistence.RetryBackoff, maxWait time.Duration, n int, u float64) time.Duration {
	if maxWait <= 0 {
		maxWait = defaultRetryBackoffMax
	}
	p := persistence.RetryBackoff{BaseS: DefaultRetryBaseS, MaxS: maxWait.Seconds()}
	if b != nil {
		p = *b
	}
	return p.Wait(n, u)
}

// retryable reports whether a worker's failure report is tried again: a
// job_error or lane_error the handler did not call permanent, with
// attempts left. Cancels, rejections, deadlines and permanent failures are
// final.
func (g *jobGrain) retryable(m *messages.JobFinished) bool {
	if m.Succeeded || m.Permanent {
		return false
	}
	if m.Reason != persistence.ReasonJobError && m.Reason != persistence.ReasonLaneError {
		return false
	}
	return g.job.Attempts < g.job.MaxAttempts
}

// retryLater ends the failed attempt and schedules the next one after its
// backoff: the job is scheduled (with its run_at) in the store, and the
// scheduler holds it until then — a message, never a sleep.
func (g *jobGrain) retryLater(ctx actor.Context, m *messages.JobFinished) *messages.Reply {
	now := g.deps.Clock()
	wait := RetryWait(g.job.RetryBackoff, g.deps.Timing.RetryBackoffMax, g.job.Attempts, rand.Float64()*2-1)
	prev := g.job
	rctx := deadline.Within(g.deps.Timing.GrainTimeout)
	j, err := g.deps.Jobs.Reschedule(rctx, g.id, int(m.Attempt), persistence.Reschedule{
		RunAt: now.Add(wait), Reason: m.Reason, Error: m.Error, At: now, Hub: g.deps.HubID, Lane: g.unsavedLane(int(m.Attempt)),
		From: g.storedCopy(int(m.Attempt))})
	if err != nil {
		if errors.Is(err, persistence.ErrConflict) {
			g.load(ctx)
		}
		return fail(messages.CodeStore, "reschedule job %s: %v", g.id, err)
	}
	g.laneSaved()
	g.job = j
	g.deps.Metrics.JobRetries.Inc()
	g.log.Info("attempt failed; retrying after its backoff", slog.Int("attempt", prev.Attempts),
		slog.String("reason", m.Reason), slog.Duration("wait", wait), slog.Time("run_at", j.RunAt))
	Send(ctx, g.cl, prev.WorkerID, KindWorker, &messages.WorkerRelease{JobId: g.id, Attempt: int32(prev.Attempts)})
	g.arm(ctx) // holds it with the scheduler until run_at
	return ok(nil)
}

// armScheduled arms a scheduled job: one not due yet is held by the
// scheduler (the grain may passivate meanwhile); a due one is queued in
// the store, and true tells arm to go on as for a queued job.
func (g *jobGrain) armScheduled(ctx actor.Context, now time.Time) bool {
	// Not due by this hub's clock: held again (a scheduler on a hub whose
	// clock runs ahead holds it a little longer, redueAfter, so the two
	// never bounce it in a tight loop).
	if g.job.RunAt.After(now) {
		g.idle.Set(g.deps.Timing.IdlePassivate)
		g.enqueue(ctx)
		return false
	}
	rctx := deadline.Within(g.deps.Timing.GrainTimeout)
	j, err := g.deps.Jobs.Promote(rctx, g.id)
	if err != nil {
		if errors.Is(err, persistence.ErrConflict) {
			g.load(ctx) // it moved on (canceled, or another activation queued it)
			return false
		}
		g.log.Warn("queuing a due job failed; trying again", slog.Any("err", err))
		g.idle.Cancel() // stay, or the retry dies with the activation
		g.timers.After(storeRetry, &promoteRetry{})
		return false
	}
	g.job = j
	return true
}

// revive is POST /jobs/{id}/retry: a failed job runs again under a new
// attempt, due now (a fresh deadline and queued timeout); max_attempts
// grows to allow it (persistence.ApplyRevive).
func (g *jobGrain) revive(ctx actor.Context) *messages.Reply {
	if g.job.Status != persistence.StatusFailed {
		return &messages.Reply{Ok: false, Code: string(messages.CodeConflict),
			Message: fmt.Sprintf("job %s is %s, not failed", g.id, g.job.Status), Json: g.jobJSON()}
	}
	rctx := deadline.Within(g.deps.Timing.GrainTimeout)
	j, err := g.deps.Jobs.Revive(rctx, g.id, g.deps.Clock())
	if err != nil {
		if errors.Is(err, persistence.ErrConflict) {
			g.load(ctx)
			return &messages.Reply{Ok: false, Code: string(messages.CodeConflict),
				Message: fmt.Sprintf("job %s is %s, not failed", g.id, g.job.Status), Json: g.jobJSON()}
		}
		return fail(messages.CodeUnavailable, "retry job %s: %v", g.id, err)
	}
	g.job = j
	g.log.Info("failed job queued again by request", slog.Int("attempts", j.Attempts), slog.Int("max_attempts", j.MaxAttempts))
	g.arm(ctx)
	return ok(g.jobJSON())
}

// wakeMissedScheduled wakes scheduled jobs whose run_at passed more than
// the re-drive age ago (a scheduler whose store read failed when it was
// rebuilt never held them), so none waits for ever; it returns how many.
func (r *reconciler) wakeMissedScheduled(ctx actor.Context, now time.Time) int {
	n := 0
	cutoff := now.Add(-r.deps.Timing.RedriveMinAge)
	r.eachJob(persistence.StatusScheduled, 10000, func(j persistence.Job) bool {
		if j.RunAt.Before(cutoff) {
			Send(ctx, r.deps.Cluster(), j.ID, KindJob, &messages.JobEnsure{})
			n++
		}
		return true
	})
	return n
}
