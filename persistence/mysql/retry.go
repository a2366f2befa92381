package mysql

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/paprika-hub/paprika/persistence"
)

// addJobRetries adds persistence.Job.RunAt, RetryBackoff and AttemptsLog
// (migration 3). Rows from before it were never delayed and have no log.
// Each statement is one atomic ALTER with IF NOT EXISTS, harmless to run
// again after a crash before its schema_migrations row.
var addJobRetries = []string{
	"ALTER TABLE jobs ADD COLUMN IF NOT EXISTS run_at DATETIME(6) NULL",
	"ALTER TABLE jobs ADD COLUMN IF NOT EXISTS retry_backoff VARCHAR(255) NULL",
	"ALTER TABLE jobs ADD COLUMN IF NOT EXISTS attempts_log LONGTEXT NULL",
}

// retryColumns are the migration-3 columns of a row as scanned.
type retryColumns struct {
	runAt   sql.NullTime
	backoff sql.NullString
	log     sql.NullString
}

func (r *retryColumns) decode(j *persistence.Job) error {
	if r.runAt.Valid {
		j.RunAt = persistence.UTC(r.runAt.Time)
	}
	if r.backoff.Valid {
		j.RetryBackoff = new(persistence.RetryBackoff)
		if err := json.Unmarshal([]byte(r.backoff.String), j.RetryBackoff); err != nil {
			return fmt.Errorf("job %s: decode retry_backoff: %w", j.ID, err)
		}
	}
	if r.log.Valid {
		if err := json.Unmarshal([]byte(r.log.String), &j.AttemptsLog); err != nil {
			return fmt.Errorf("job %s: decode attempts_log: %w", j.ID, err)
		}
	}
	return nil
}

// encodeRetry is the migration-3 columns of j as written, in jobColumns'
// order; its times are truncated as stored (micro).
func encodeRetry(j *persistence.Job) ([]any, error) {
	j.RunAt = micro(j.RunAt)
	for i := range j.AttemptsLog {
		a := &j.AttemptsLog[i]
		a.QueuedAt, a.StartedAt, a.FinishedAt = micro(a.QueuedAt), micro(a.StartedAt), micro(a.FinishedAt)
	}
	backoff, err := encodeJSON(j.RetryBackoff, j.RetryBackoff == nil)
	if err != nil {
		return nil, fmt.Errorf("encode retry_backoff: %w", err)
	}
	log, err := encodeAttemptsLog(j.AttemptsLog)
	if err != nil {
		return nil, fmt.Errorf("encode attempts_log: %w", err)
	}
	return []any{nullTime(j.RunAt), backoff, log}, nil
}

// mutateSQL writes every column a transition may change.
const mutateSQL = "UPDATE jobs SET status = ?, reason = ?, `error` = ?, worker_id = ?, lane = ?, attempts = ?, " +
	"max_attempts = ?, started_at = ?, finished_at = ?, result = ?, assets = ?, run_at = ?, retry_backoff = ?, " +
	"attempts_log = ?, updated_at = UTC_TIMESTAMP(6) WHERE id = ?"

// mutate runs a transition that needs the row to compute its change (the
// attempts log): the row is read under its lock (SELECT … FOR UPDATE),
// apply — the shared persistence.Apply* — changes it in Go, and the
// result is written back, all in one transaction. That is as many round
// trips as an UPDATE and its read back, and the condition is the embedded
// stores' own code. A deadlock victim runs again.
func (s *JobStore) mutate(ctx context.Context, op, id string, apply func(*persistence.Job) error) (persistence.Job, error) {
	if err := s.usable(); err != nil {
		return persistence.Job{}, fmt.Errorf("%s job %s: %w", op, id, err)
	}
	if s.oneTrip {
		return s.transact(ctx, txReq{op: op, id: id, apply: apply}, mutateRowSize)
	}
	for try := 1; ; try++ {
		j, err := s.tryMutate(ctx, op, id, apply)
		if err == nil || !retryable(err) || try == maxTxTries || ctx.Err() != nil {
			return j, err
		}
	}
}

func (s *JobStore) tryMutate(ctx context.Context, op, id string, apply func(*persistence.Job) error) (persistence.Job, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return persistence.Job{}, s.fail(ctx, err, "%s job %s: begin", op, id)
	}
	defer func() { _ = tx.Rollback() }() // a no-op after Commit
	j, err := scanJob(tx.QueryRowContext(ctx, "SELECT "+jobColumns+" FROM jobs WHERE id = ? FOR UPDATE", id))
	if err == sql.ErrNoRows {
		return persistence.Job{}, fmt.Errorf("%s job %s: %w", op, id, persistence.ErrNotFound)
	}
	if err != nil {
		return persistence.Job{}, s.fail(ctx, err, "%s job %s: read", op, id)
	}
	if err := apply(&j); err != nil {
		return persistence.Job{}, err
	}
	if len(j.Reason) > maxReasonLen {
		return persistence.Job{}, fmt.Errorf("%s job %s: reason is %d bytes, at most %d", op, id, len(j.Reason), maxReasonLen)
	}
	j.StartedAt, j.FinishedAt = micro(j.StartedAt), micro(j.FinishedAt)
	j.Error = clipError(j.Error)
	args, err := mutateArgs(&j)
	if err != nil {
		return persistence.Job{}, fmt.Errorf("%s job %s: %w", op, id, err)
	}
	args = append(args, id)
	if _, err := tx.ExecContext(ctx, mutateSQL, args...); err != nil {
		return persistence.Job{}, s.fail(ctx, err, "%s job %s", op, id)
	}
	if err := tx.Commit(); err != nil {
		// As in updateAndGet: the caller reads the job again before acting.
		return persistence.Job{}, s.fail(ctx, err, "%s job %s: commit", op, id)
	}
	return j, nil
}

// mutateArgs is the SET values of mutateSQL for j, in order; the times of
// its attempts log are truncated as stored.
func mutateArgs(j *persistence.Job) ([]any, error) {
	assets, err := encodeJSON(j.Assets, len(j.Assets) == 0)
	if err != nil {
		return nil, fmt.Errorf("encode assets: %w", err)
	}
	retry, err := encodeRetry(j)
	if err != nil {
		return nil, err
	}
	args := []any{string(j.Status), j.Reason, j.Error, nullString(j.WorkerID), j.Lane, j.Attempts, j.MaxAttempts,
		nullTime(j.StartedAt), nullTime(j.FinishedAt), nullJSON(j.Result), assets}
	return append(args, retry...), nil
}

// Promote queues a scheduled job (persistence.ApplyPromote).
func (s *JobStore) Promote(ctx context.Context, id string) (persistence.Job, error) {
	return s.mutate(ctx, "promote", id, persistence.ApplyPromote)
}

// Reschedule ends a running attempt that is tried again later
// (persistence.ApplyReschedule).
func (s *JobStore) Reschedule(ctx context.Context, id string, attempt int, r persistence.Reschedule) (persistence.Job, error) {
	if len(r.Lane) > maxLaneLen {
		return persistence.Job{}, fmt.Errorf("reschedule job %s: lane is %d bytes, at most %d", id, len(r.Lane), maxLaneLen)
	}
	if r.At.IsZero() {
		r.At = time.Now() // fixed here, so the way from the row writes the same
	}
	apply := func(j *persistence.Job) error { return persistence.ApplyReschedule(j, attempt, r) }
	if r.From != nil && usableFrom(r.From, id, attempt) {
		j, err := s.rescheduleFrom(ctx, id, attempt, r.From, apply)
		if !errors.Is(err, errFromStale) {
			return j, err
		}
	}
	return s.mutate(ctx, "reschedule", id, apply)
}

// rescheduleFrom is Reschedule computed from the caller's copy of the row
// (see finishFrom): one conditional UPDATE in the batch's round trip.
func (s *JobStore) rescheduleFrom(ctx context.Context, id string, attempt int, from *persistence.Job,
	apply func(*persistence.Job) error) (persistence.Job, error) {
	j := persistence.CloneJob(*from)
	if err := apply(&j); err != nil {
		return persistence.Job{}, err
	}
	retry, err := encodeRetry(&j) // run_at, retry_backoff, attempts_log
	if err != nil {
		return persistence.Job{}, fmt.Errorf("reschedule job %s: %w", id, err)
	}
	args := append([]any{retry[0], retry[2]}, fromArgs(id, attempt, from)...)
	return s.updateAndGet(ctx, txReq{op: "reschedule", id: id, query: rescheduleFromSQL, args: args, check: fromCheck(apply)})
}

// Revive queues a failed job again (persistence.ApplyRevive).
func (s *JobStore) Revive(ctx context.Context, id string, at time.Time) (persistence.Job, error) {
	return s.mutate(ctx, "revive", id, func(j *persistence.Job) error { return persistence.ApplyRevive(j, at) })
}
