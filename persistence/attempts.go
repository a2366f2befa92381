package persistence

import (
	"fmt"
	"math"
	"time"
	"unicode/utf8"
)

// Attempt is one ended attempt of a job, as its attempts log keeps it
// (Job.AttemptsLog; the API's job object shows it as is).
type Attempt struct {
	// Attempt is the attempt number (Job.Attempts when it ran).
	Attempt int `json:"attempt"`
	// WorkerID and Lane are where it ran.
	WorkerID string `json:"worker_id"`
	Lane     string `json:"lane"`
	// Hub is the hub that recorded its end ("" when unknown: a worker-lost
	// requeue).
	Hub string `json:"hub"`
	// QueuedAt is when the attempt began to wait for a lane; StartedAt when
	// a worker took it; FinishedAt when it ended.
	QueuedAt   time.Time `json:"queued_at"`
	StartedAt  time.Time `json:"started_at"`
	FinishedAt time.Time `json:"finished_at"`
	// Status is how the attempt ended (succeeded, failed or canceled), and
	// Reason and Error why.
	Status Status `json:"status"`
	Reason string `json:"reason"`
	Error  string `json:"error"`
}

// Bounds of the attempts log: the latest MaxAttemptsLog entries are kept,
// each error cut to MaxAttemptError bytes (the job's own Error keeps the
// whole last one).
const (
	MaxAttemptsLog  = 100
	MaxAttemptError = 2048
)

// RetryBackoff is a job's retry schedule: the n-th retry waits
// min(BaseS·n⁴, MaxS) seconds, give or take RetryJitter. That is River's
// default with BaseS = 1; a small BaseS makes fast retries (tests, cheap
// jobs), MaxS bounds the wait of late attempts.
type RetryBackoff struct {
	BaseS float64 `json:"base_s"`
	MaxS  float64 `json:"max_s"`
}

// Bounds of RetryBackoff (POST /jobs validates against them).
const (
	MinRetryBaseS = 0.001
	MaxRetryWaitS = 30 * 24 * 3600
	// RetryJitter is the relative spread of a retry's wait (±10 %, as River):
	// failures of many jobs at once do not come back at one instant.
	RetryJitter = 0.1
)

// Check validates a schedule; nil is valid (the hub's default).
func (b *RetryBackoff) Check() error {
	if b == nil {
		return nil
	}
	if math.IsNaN(b.BaseS) || b.BaseS < MinRetryBaseS || b.BaseS > MaxRetryWaitS {
		return fmt.Errorf("retry_backoff.base_s %v is out of range %v..%d", b.BaseS, MinRetryBaseS, MaxRetryWaitS)
	}
	if math.IsNaN(b.MaxS) || b.MaxS < b.BaseS || b.MaxS > MaxRetryWaitS {
		return fmt.Errorf("retry_backoff.max_s %v is out of range base_s..%d", b.MaxS, MaxRetryWaitS)
	}
	return nil
}

// Wait is the wait before retry n (n ≥ 1, the attempt that failed) with
// jitter u in [-1, 1]: min(BaseS·n⁴, MaxS) · (1 + u·RetryJitter).
func (b RetryBackoff) Wait(n int, u float64) time.Duration {
	n = max(n, 1)
	s := min(b.BaseS*math.Pow(float64(n), 4), b.MaxS)
	s *= 1 + max(-1, min(u, 1))*RetryJitter
	return time.Duration(s * float64(time.Second))
}

// Reschedule describes the end of an attempt that is tried again after a
// wait (JobStore.Reschedule).
type Reschedule struct {
	// RunAt is when the next attempt is due.
	RunAt  time.Time
	Reason string
	Error  string
	At     time.Time // when the attempt ended; now when zero
	Hub    string
	// Lane is the lane the attempt ran on, recorded when none is stored
	// yet (as Finish.Lane).
	Lane string
	// From is the caller's copy of the running job, a hint as
	// Finish.From is.
	From *Job
}

// ApplyPromote applies JobStore.Promote: scheduled → queued (its run_at
// came; the caller decides when).
func ApplyPromote(j *Job) error {
	if j.Status != StatusScheduled {
		return fmt.Errorf("promote job %s: %s, not scheduled: %w", j.ID, j.Status, ErrConflict)
	}
	j.Status = StatusQueued
	return nil
}

// ApplyReschedule applies JobStore.Reschedule: running at attempt →
// scheduled at r.RunAt, unassigned. The attempt stays counted and goes to
// the attempts log as failed with r's reason.
func ApplyReschedule(j *Job, attempt int, r Reschedule) error {
	if r.RunAt.IsZero() {
		return fmt.Errorf("reschedule job %s: no run_at", j.ID)
	}
	if err := requireRunning(j, "reschedule", attempt); err != nil {
		return err
	}
	recordLane(j, r.Lane)
	endAttempt(j, Finish{Status: StatusFailed, Reason: r.Reason, Error: r.Error, At: r.At, Hub: r.Hub})
	j.Status = StatusScheduled
	j.RunAt = UTC(r.RunAt)
	j.WorkerID = ""
	j.StartedAt = time.Time{}
	j.Lane = ""
	return nil
}

// ApplyRevive applies JobStore.Revive: failed → queued, due at (now when
// zero), so its deadline and queued timeout count afresh. The attempts
// already made stay counted; max_attempts rises to attempts+1 when it was
// used up (River's JobRetry does the same), so exactly one more try is
// allowed. The last failure stays in the attempts log.
func ApplyRevive(j *Job, at time.Time) error {
	if j.Status != StatusFailed {
		return fmt.Errorf("revive job %s: %s, not failed: %w", j.ID, j.Status, ErrConflict)
	}
	j.Status = StatusQueued
	j.RunAt = UTC(orNow(at))
	j.MaxAttempts = max(j.MaxAttempts, j.Attempts+1)
	j.Reason, j.Error = "", ""
	j.Result, j.Assets = nil, nil
	j.WorkerID, j.Lane = "", ""
	j.StartedAt, j.FinishedAt = time.Time{}, time.Time{}
	return nil
}

// endAttempt appends the running attempt of j, ended as f says, to its
// attempts log, keeping the latest MaxAttemptsLog entries.
func endAttempt(j *Job, f Finish) {
	a := Attempt{Attempt: j.Attempts, WorkerID: j.WorkerID, Lane: j.Lane, Hub: f.Hub,
		QueuedAt: j.queuedAt(), StartedAt: j.StartedAt, FinishedAt: UTC(orNow(f.At)),
		Status: f.Status, Reason: f.Reason, Error: clip(f.Error, MaxAttemptError)}
	if len(j.AttemptsLog) >= MaxAttemptsLog {
		j.AttemptsLog = append(j.AttemptsLog[:0:0], j.AttemptsLog[len(j.AttemptsLog)-MaxAttemptsLog+1:]...)
	}
	j.AttemptsLog = append(j.AttemptsLog, a)
}

// queuedAt is when the running attempt began to wait: the later of the
// job's ReadyAt and the end of the attempt before (a worker-lost requeue
// queues the next attempt at once).
func (j *Job) queuedAt() time.Time {
	t := j.ReadyAt()
	if n := len(j.AttemptsLog); n > 0 && j.AttemptsLog[n-1].FinishedAt.After(t) {
		t = j.AttemptsLog[n-1].FinishedAt
	}
	return t
}

// clip cuts s to at most n bytes at a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}
