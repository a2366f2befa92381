package persistence

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"
)

// These functions are the job state machine every JobStore shares. Each
// checks the condition of one JobStore transition against the current row
// and, when it holds, applies the change to j in place; when it does not,
// it leaves j alone and returns an error wrapping ErrConflict.
// The caller runs them inside its own atomic section (a mutex in package
// memory, a bbolt Update transaction in package bolt). The SQL store
// expresses the same conditions in its WHERE clauses and, when an UPDATE
// matches nothing, runs these on the row it reads back, so its errors read
// like the embedded stores'. They live here, beside the contract, so that
// no store imports another one to get them.

// MaxListLimit and DefaultListLimit bound ListQuery.Limit.
const (
	MaxListLimit     = 1000
	DefaultListLimit = 50
)

// ListLimit returns the page size q asks for: DefaultListLimit for 0, an
// error outside 0..MaxListLimit.
func ListLimit(q ListQuery) (int, error) {
	switch {
	case q.Limit == 0:
		return DefaultListLimit, nil
	case q.Limit < 0 || q.Limit > MaxListLimit:
		return 0, fmt.Errorf("list jobs: limit %d outside 1..%d", q.Limit, MaxListLimit)
	}
	return q.Limit, nil
}

// PrepareNew validates and completes a job for JobStore.Create: it assigns
// an id (NewJobID) and created_at (now) when they are empty, sets status
// queued, converts times to UTC and rejects malformed JSON.
func PrepareNew(j Job, now time.Time) (Job, error) {
	if j.Status != "" && j.Status != StatusQueued && j.Status != StatusScheduled {
		return j, fmt.Errorf("create job %s: status %q: a new job is queued or scheduled", j.ID, j.Status)
	}
	if (j.Status == StatusScheduled) != !j.RunAt.IsZero() {
		return j, fmt.Errorf("create job %s: a new job is scheduled exactly when it has a run_at", j.ID)
	}
	if j.WorkerID != "" {
		return j, fmt.Errorf("create job %s: a new job has no worker", j.ID)
	}
	if j.Priority < MinPriority || j.Priority > MaxPriority {
		return j, fmt.Errorf("create job %s: priority %d is out of range %d..%d", j.ID, j.Priority, MinPriority, MaxPriority)
	}
	if len(j.Tenant) > MaxTenantBytes {
		return j, fmt.Errorf("create job %s: tenant is %d bytes, over %d", j.ID, len(j.Tenant), MaxTenantBytes)
	}
	if len(j.Params) > 0 && !json.Valid(j.Params) {
		return j, fmt.Errorf("create job %s: params are not valid JSON", j.ID)
	}
	if len(j.Result) > 0 && !json.Valid(j.Result) {
		return j, fmt.Errorf("create job %s: result is not valid JSON", j.ID)
	}
	if j.ID == "" {
		j.ID = NewJobID()
	}
	if j.Status != StatusScheduled {
		j.Status = StatusQueued
	}
	if err := j.RetryBackoff.Check(); err != nil {
		return j, fmt.Errorf("create job %s: %w", j.ID, err)
	}
	j.RunAt = UTC(j.RunAt)
	j.AttemptsLog = nil
	j.WaitingFor = "" // computed when served, never stored
	if j.CreatedAt.IsZero() {
		j.CreatedAt = now
	}
	j.CreatedAt = UTC(j.CreatedAt)
	j.StartedAt = UTC(j.StartedAt)
	j.FinishedAt = UTC(j.FinishedAt)
	return CloneJob(j), nil
}

// ApplyClaim applies JobStore.Claim: queued and unassigned → running on
// workerID, attempts+1, started_at=at (now when zero), lane cleared.
func ApplyClaim(j *Job, workerID string, at time.Time) error {
	if workerID == "" {
		return fmt.Errorf("claim job %s: empty worker id", j.ID)
	}
	if j.Status != StatusQueued || j.WorkerID != "" {
		return fmt.Errorf("claim job %s: %s on %q: %w", j.ID, j.Status, j.WorkerID, ErrConflict)
	}
	j.Status = StatusRunning
	j.WorkerID = workerID
	j.Attempts++
	j.StartedAt = UTC(orNow(at))
	j.Lane = ""
	return nil
}

// ApplyUnclaim applies JobStore.Unclaim: running on workerID at attempt →
// queued, unassigned, attempts-1, started_at and lane cleared.
func ApplyUnclaim(j *Job, workerID string, attempt int) error {
	if j.Status != StatusRunning || j.WorkerID != workerID || j.Attempts != attempt {
		return fmt.Errorf("unclaim job %s (worker %s, attempt %d): %s on %q at attempt %d: %w",
			j.ID, workerID, attempt, j.Status, j.WorkerID, j.Attempts, ErrConflict)
	}
	j.Status = StatusQueued
	j.WorkerID = ""
	j.Attempts--
	j.StartedAt = time.Time{}
	j.Lane = ""
	return nil
}

// ApplySetLane applies JobStore.SetLane: running at attempt → lane recorded.
func ApplySetLane(j *Job, attempt int, lane string) error {
	if err := requireRunning(j, "set lane of", attempt); err != nil {
		return err
	}
	j.Lane = lane
	return nil
}

// ApplyRequeue applies JobStore.Requeue: running at attempt → queued and
// unassigned. The attempt stays counted (it was used); started_at and lane
// are cleared.
func ApplyRequeue(j *Job, attempt int) error {
	if err := requireRunning(j, "requeue", attempt); err != nil {
		return err
	}
	endAttempt(j, Finish{Status: StatusFailed, Reason: ReasonWorkerLost})
	j.Status = StatusQueued
	j.WorkerID = ""
	j.StartedAt = time.Time{}
	j.Lane = ""
	return nil
}

// ApplyFinish applies JobStore.Finish: a non-final job → f.Status. With a real attempt (not
// AnyAttempt) the job must be running at that attempt, so a
// worker whose attempt was requeued cannot finish the next one.
// finished_at is f.At, or now when zero.
func ApplyFinish(j *Job, attempt int, f Finish) error {
	if !f.Status.Final() {
		return fmt.Errorf("finish job %s: status %q is not final", j.ID, f.Status)
	}
	if len(f.Result) > 0 && !json.Valid(f.Result) {
		return fmt.Errorf("finish job %s: result is not valid JSON", j.ID)
	}
	if j.Status.Final() {
		return fmt.Errorf("finish job %s: already %s: %w", j.ID, j.Status, ErrConflict)
	}
	if attempt != AnyAttempt {
		if err := requireRunning(j, "finish", attempt); err != nil {
			return err
		}
		recordLane(j, f.Lane)
	}
	f.At = UTC(orNow(f.At))
	if j.Status == StatusRunning {
		endAttempt(j, f)
	}
	j.Status = f.Status
	j.Reason = f.Reason
	j.Error = f.Error
	j.Result = bytes.Clone(f.Result)
	j.Assets = slices.Clone(f.Assets)
	j.FinishedAt = UTC(orNow(f.At))
	return nil
}

// recordLane sets the lane of j's running attempt, checked by the caller,
// when none is stored: one written on its own earlier (SetLane) stays.
func recordLane(j *Job, lane string) {
	if lane != "" && j.Lane == "" {
		j.Lane = lane
	}
}

func requireRunning(j *Job, op string, attempt int) error {
	if j.Status != StatusRunning || j.Attempts != attempt {
		return fmt.Errorf("%s job %s at attempt %d: %s at attempt %d: %w",
			op, j.ID, attempt, j.Status, j.Attempts, ErrConflict)
	}
	return nil
}

// CloneJob returns a deep copy of j, so a stored job shares no slice or map
// with its caller.
func CloneJob(j Job) Job {
	j.Params = bytes.Clone(j.Params)
	j.Result = bytes.Clone(j.Result)
	j.Assets = slices.Clone(j.Assets)
	j.Labels = maps.Clone(j.Labels)
	j.AttemptsLog = slices.Clone(j.AttemptsLog)
	if j.RetryBackoff != nil {
		b := *j.RetryBackoff
		j.RetryBackoff = &b
	}
	return j
}

// UTC returns t in UTC without its monotonic reading; the zero time stays
// zero.
func UTC(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.UTC()
}

func orNow(t time.Time) time.Time {
	if t.IsZero() {
		return time.Now()
	}
	return t
}
