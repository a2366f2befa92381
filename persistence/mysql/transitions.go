package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/paprika-hub/paprika/persistence"
)

// The conditional UPDATEs of the transitions. Each WHERE clause is the
// condition of the persistence.Apply* function of the same name; each SET
// list is its change.
const (
	claimSQL = `UPDATE jobs SET status = 'running', worker_id = ?, attempts = attempts + 1,
		started_at = ?, lane = '', updated_at = UTC_TIMESTAMP(6)
		WHERE id = ? AND status = 'queued' AND worker_id IS NULL`
	unclaimSQL = `UPDATE jobs SET status = 'queued', worker_id = NULL, attempts = attempts - 1,
		started_at = NULL, lane = '', updated_at = UTC_TIMESTAMP(6)
		WHERE id = ? AND status = 'running' AND worker_id = ? AND attempts = ?`
	setLaneSQL = `UPDATE jobs SET lane = ?, updated_at = UTC_TIMESTAMP(6)
		WHERE id = ? AND status = 'running' AND attempts = ?`
)

// maxTxTries bounds the runs of a statement or transaction the server
// rolled back as a deadlock victim.
const maxTxTries = 3

// Claim is the claim of record: queued and unassigned → running on
// workerID, attempts+1, started_at=at (now when zero). The UPDATE and the
// read of the claimed job share one transaction.
func (s *JobStore) Claim(ctx context.Context, id, workerID string, at time.Time) (persistence.Job, error) {
	if err := s.usable(); err != nil {
		return persistence.Job{}, fmt.Errorf("claim job %s: %w", id, err)
	}
	// The shared state machine on a queued placeholder checks the
	// arguments and normalizes at exactly as the embedded stores do.
	p := persistence.Job{ID: id, Status: persistence.StatusQueued}
	if err := persistence.ApplyClaim(&p, workerID, at); err != nil {
		return persistence.Job{}, err
	}
	if len(workerID) > maxWorkerIDLen {
		return persistence.Job{}, fmt.Errorf("claim job %s: worker id is %d bytes, at most %d", id, len(workerID), maxWorkerIDLen)
	}
	check := func(j *persistence.Job) error { return persistence.ApplyClaim(j, workerID, at) }
	return s.updateAndGet(ctx, txReq{op: "claim", id: id, query: claimSQL, args: []any{workerID, micro(p.StartedAt), id}, check: check})
}

// Unclaim rolls back a claim whose send failed: running on workerID at
// attempt → queued, unassigned, attempts-1, started_at and lane cleared.
func (s *JobStore) Unclaim(ctx context.Context, id, workerID string, attempt int) error {
	if err := s.usable(); err != nil {
		return fmt.Errorf("unclaim job %s: %w", id, err)
	}
	check := func(j *persistence.Job) error { return persistence.ApplyUnclaim(j, workerID, attempt) }
	return s.condUpdate(ctx, txReq{op: "unclaim", id: id, query: unclaimSQL, args: []any{id, workerID, attempt}, check: check})
}

// SetLane records the lane of a running attempt.
func (s *JobStore) SetLane(ctx context.Context, id string, attempt int, lane string) error {
	if err := s.usable(); err != nil {
		return fmt.Errorf("set lane of job %s: %w", id, err)
	}
	if len(lane) > maxLaneLen {
		return fmt.Errorf("set lane of job %s: lane is %d bytes, at most %d", id, len(lane), maxLaneLen)
	}
	check := func(j *persistence.Job) error { return persistence.ApplySetLane(j, attempt, lane) }
	// A lane written on its own rides the next transaction
	// (WithFinishWait): nobody waits on it.
	return s.condUpdate(ctx, txReq{op: "set lane of", id: id, query: setLaneSQL, args: []any{lane, id, attempt}, check: check, ride: true})
}

// Requeue puts a running attempt back in the queue; the attempt stays
// counted.
func (s *JobStore) Requeue(ctx context.Context, id string, attempt int) error {
	if err := s.usable(); err != nil {
		return fmt.Errorf("requeue job %s: %w", id, err)
	}
	// The attempt goes to the attempts log, computed from the row: mutate.
	_, err := s.mutate(ctx, "requeue", id, func(j *persistence.Job) error { return persistence.ApplyRequeue(j, attempt) })
	return err
}

// Finish ends a non-final job. With a real attempt (not
// persistence.AnyAttempt) the job must be running at that attempt. The
// UPDATE and the read of the finished job share one transaction.
func (s *JobStore) Finish(ctx context.Context, id string, attempt int, f persistence.Finish) (persistence.Job, error) {
	if err := s.usable(); err != nil {
		return persistence.Job{}, fmt.Errorf("finish job %s: %w", id, err)
	}
	// As in Claim: the placeholder run validates f (final status, JSON
	// result) and gives finished_at (now when zero) and copies.
	p := persistence.Job{ID: id, Status: persistence.StatusQueued}
	if err := persistence.ApplyFinish(&p, persistence.AnyAttempt, f); err != nil {
		return persistence.Job{}, err
	}
	if len(p.Reason) > maxReasonLen {
		return persistence.Job{}, fmt.Errorf("finish job %s: reason is %d bytes, at most %d", id, len(p.Reason), maxReasonLen)
	}
	if len(f.Lane) > maxLaneLen {
		return persistence.Job{}, fmt.Errorf("finish job %s: lane is %d bytes, at most %d", id, len(f.Lane), maxLaneLen)
	}
	// The ended attempt goes to the attempts log, computed from the
	// caller's copy where it is the row (finishFrom), else from the row
	// (mutate); f.At is fixed here so a retried transaction writes the
	// same.
	f.At = p.FinishedAt
	if f.From != nil && attempt != persistence.AnyAttempt && usableFrom(f.From, id, attempt) {
		j, err := s.finishFrom(ctx, id, attempt, f)
		if !errors.Is(err, errFromStale) {
			return j, err
		}
	}
	return s.mutate(ctx, "finish", id, func(j *persistence.Job) error { return persistence.ApplyFinish(j, attempt, f) })
}

// fromFence is the condition of a transition computed from the caller's
// copy of a running job (Finish.From, Reschedule.From): the row is still
// as the copy says in everything the change is computed from — the
// attempt (status, attempts, worker and started_at say which claim it is,
// so its attempts log and ready time are those of the claim) and the lane
// stored. Its arguments are fromArgs'.
const fromFence = " WHERE id = ? AND status = 'running' AND attempts = ? AND worker_id = ? AND lane = ? AND started_at = ?"

// finishFromSQL ends a running attempt with the values finishFrom computed
// from Finish.From.
const finishFromSQL = "UPDATE jobs SET status = ?, reason = ?, `error` = ?, lane = ?, finished_at = ?, result = ?, assets = ?, " +
	"attempts_log = ?, updated_at = UTC_TIMESTAMP(6)" + fromFence

// rescheduleFromSQL ends a running attempt that is tried again later with
// the values rescheduleFrom computed from Reschedule.From.
const rescheduleFromSQL = "UPDATE jobs SET status = 'scheduled', run_at = ?, worker_id = NULL, started_at = NULL, lane = '', " +
	"attempts_log = ?, updated_at = UTC_TIMESTAMP(6)" + fromFence

// usableFrom reports whether from is a copy of id running at attempt,
// which a change may be computed from.
func usableFrom(from *persistence.Job, id string, attempt int) bool {
	return from.ID == id && from.Status == persistence.StatusRunning && from.Attempts == attempt &&
		from.WorkerID != "" && !from.StartedAt.IsZero()
}

// fromArgs are fromFence's arguments for from.
func fromArgs(id string, attempt int, from *persistence.Job) []any {
	return []any{id, attempt, from.WorkerID, from.Lane, micro(from.StartedAt)}
}

// fromCheck explains a transition computed from a copy that matched no
// row: apply's own error on the row as it is, or errFromStale where apply
// would have changed it (the row differs from the copy).
func fromCheck(apply func(*persistence.Job) error) func(*persistence.Job) error {
	return func(cur *persistence.Job) error {
		c := persistence.CloneJob(*cur)
		if err := apply(&c); err != nil {
			return err
		}
		return errFromStale
	}
}

// errFromStale: the row is not as Finish.From says (or From is not a
// running attempt's copy); the end is computed from the row instead.
var errFromStale = errors.New("finish: the row is not as the caller's copy says")

// finishFrom is Finish computed from the caller's copy of the row: one
// conditional UPDATE, which batches with the other transitions in one
// round trip, instead of the row read under its lock and written back
// whole (mutate: a second round trip for its whole batch). f.From is
// usable (usableFrom).
func (s *JobStore) finishFrom(ctx context.Context, id string, attempt int, f persistence.Finish) (persistence.Job, error) {
	from := f.From
	apply := func(j *persistence.Job) error { return persistence.ApplyFinish(j, attempt, f) }
	j := persistence.CloneJob(*from)
	if err := apply(&j); err != nil {
		return persistence.Job{}, err
	}
	j.FinishedAt, j.Error = micro(j.FinishedAt), clipError(j.Error)
	assets, err := encodeJSON(j.Assets, len(j.Assets) == 0)
	if err != nil {
		return persistence.Job{}, fmt.Errorf("finish job %s: encode assets: %w", id, err)
	}
	retry, err := encodeRetry(&j)
	if err != nil {
		return persistence.Job{}, fmt.Errorf("finish job %s: %w", id, err)
	}
	attemptsLog := retry[len(retry)-1]
	check := fromCheck(apply)
	args := append([]any{string(j.Status), j.Reason, j.Error, j.Lane, nullTime(j.FinishedAt), nullJSON(j.Result), assets, attemptsLog},
		fromArgs(id, attempt, from)...)
	// An end rides the next transaction a claim leads (WithFinishWait):
	// its lane is free already, and what waits on the write is the
	// worker's ack.
	return s.updateAndGet(ctx, txReq{op: "finish", id: id, query: finishFromSQL, args: args, check: check, ride: true})
}

// updateAndGet runs r's conditional UPDATE and reads the job back in one
// transaction (batched with others when it can), so
// the job returned is the one this call wrote: the UPDATE's row lock keeps
// other writers out until the commit. A transaction the server rolled back
// as a deadlock victim runs again.
func (s *JobStore) updateAndGet(ctx context.Context, r txReq) (persistence.Job, error) {
	if s.oneTrip {
		return s.transact(ctx, r, condSize(r.query, r.args))
	}
	var (
		out persistence.Job
		err error
	)
	for try := 1; ; try++ {
		out, err = s.tryUpdateAndGet(ctx, r.op, r.id, r.check, r.query, r.args...)
		if err == nil || !retryable(err) || try == maxTxTries || ctx.Err() != nil {
			return out, err
		}
	}
}

func (s *JobStore) tryUpdateAndGet(ctx context.Context, op, id string, check func(*persistence.Job) error, query string, args ...any) (persistence.Job, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return persistence.Job{}, s.fail(ctx, err, "%s job %s: begin", op, id)
	}
	defer func() { _ = tx.Rollback() }() // a no-op after Commit
	if err := s.update(ctx, tx, op, id, check, query, args...); err != nil {
		return persistence.Job{}, err
	}
	j, err := getJob(ctx, tx, id)
	if err != nil {
		return persistence.Job{}, s.fail(ctx, err, "%s job %s: read back", op, id)
	}
	if err := tx.Commit(); err != nil {
		// The commit's answer was lost with the connection: the transition
		// may or may not have happened. The caller sees ErrUnavailable and
		// reads the job again before deciding anything.
		return persistence.Job{}, s.fail(ctx, err, "%s job %s: commit", op, id)
	}
	return j, nil
}

// condUpdate is a transition that returns no job: one conditional UPDATE,
// batched with others when the connection allows multi-statement trips.
func (s *JobStore) condUpdate(ctx context.Context, r txReq) error {
	if s.oneTrip {
		_, err := s.transact(ctx, r, condSize(r.query, r.args))
		return err
	}
	return s.update(ctx, s.db, r.op, r.id, r.check, r.query, r.args...)
}

// update runs one conditional UPDATE of job id. When it matches no row, it
// reads the job: a missing job is persistence.ErrNotFound; otherwise the
// condition was lost, persistence.ErrConflict, explained by check (the
// transition's persistence.Apply*) on the job as it is now.
func (s *JobStore) update(ctx context.Context, q querier, op, id string, check func(*persistence.Job) error, query string, args ...any) error {
	res, err := q.ExecContext(ctx, query, args...)
	if err != nil {
		return s.fail(ctx, err, "%s job %s", op, id)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return s.fail(ctx, err, "%s job %s", op, id)
	}
	if n > 0 {
		return nil
	}
	cur, err := getJob(ctx, q, id)
	if err != nil {
		return s.fail(ctx, err, "%s job %s", op, id)
	}
	if err := check(&cur); err != nil {
		return err
	}
	// The job moved back into a state that allows the transition between
	// the UPDATE and this read; the UPDATE still lost.
	return fmt.Errorf("%s job %s: changed concurrently: %w", op, id, persistence.ErrConflict)
}

var (
	_ querier = (*sql.DB)(nil)
	_ querier = (*sql.Tx)(nil)
)
