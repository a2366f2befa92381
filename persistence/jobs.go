package persistence

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// Status is a job's place in its state machine.
type Status string

// Job statuses (API.md, "Job object").
const (
	StatusQueued    Status = "queued"
	StatusRunning   Status = "running"
	StatusSucceeded Status = "succeeded"
	StatusFailed    Status = "failed"
	StatusCanceled  Status = "canceled"
	// StatusScheduled: the job waits for its run_at (a delayed job, or a
	// retry waiting out its backoff) before it is queued.
	StatusScheduled Status = "scheduled"
)

// Statuses lists every status, in the order a job's life meets them.
var Statuses = []Status{StatusScheduled, StatusQueued, StatusRunning, StatusSucceeded, StatusFailed, StatusCanceled}

// Final reports whether no transition leaves s.
func (s Status) Final() bool {
	return s == StatusSucceeded || s == StatusFailed || s == StatusCanceled
}

// Valid reports whether s is one of Statuses.
func (s Status) Valid() bool {
	switch s {
	case StatusQueued, StatusRunning, StatusSucceeded, StatusFailed, StatusCanceled, StatusScheduled:
		return true
	}
	return false
}

// Reasons a job failed or was canceled (API.md).
const (
	ReasonQueuedTimeout    = "queued_timeout"
	ReasonWorkerLost       = "worker_lost"
	ReasonDeadlineExceeded = "deadline_exceeded"
	ReasonCanceled         = "canceled"
	ReasonLaneError        = "lane_error"
	ReasonJobError         = "job_error"
	ReasonRejected         = "rejected"
)

// Reasons lists every reason, as API.md does.
var Reasons = []string{ReasonQueuedTimeout, ReasonWorkerLost, ReasonDeadlineExceeded, ReasonCanceled,
	ReasonLaneError, ReasonJobError, ReasonRejected}

// Job is one stored job, and the job object of the HTTP API (API.md, "Job
// object"): the hub serves it as stored, and the client SDK decodes it into
// this same type (client.Job), so the two cannot drift apart. Zero times
// mean "not yet".
type Job struct {
	// ID is the hub-assigned job id (NewJobID).
	ID string `json:"id"`
	// Mode is noop, fetch or macro (messages.Modes).
	Mode string `json:"mode"`
	// Params are the mode's parameters as submitted.
	Params json.RawMessage `json:"params"`
	// Status is scheduled, queued, running, succeeded, failed or canceled.
	Status Status `json:"status"`
	// Reason says why a failed or canceled job ended (Reason* constants).
	Reason string `json:"reason,omitempty"`
	// Error is the human-readable failure, if any.
	Error string `json:"error,omitempty"`
	// WorkerID is the worker that runs or ran the job.
	WorkerID string `json:"worker_id,omitempty"`
	// Lane is the browser lane on that worker.
	Lane string `json:"lane,omitempty"`
	// Attempts counts the tries so far.
	Attempts int `json:"attempts"`
	// MaxAttempts bounds the tries.
	MaxAttempts int `json:"max_attempts"`
	// Priority is 0..9 (DefaultPriority when the client gives none): a
	// higher one is placed first, oldest first within one, and a waiting
	// job's effective priority rises with its wait (scheduler.priority_aging).
	Priority int `json:"priority"`
	// Tenant is who the job is for ("" = the default tenant): tenants
	// share scarce lanes by weight (scheduler.tenant_weights) within their
	// quotas (scheduler.tenant_quotas). At most MaxTenantBytes.
	Tenant string `json:"tenant"`
	// WaitingFor names what no alive worker has but the job needs ("a
	// worker with a chromium lane"), for a queued job only. The hub
	// computes it when it serves the job; it is never stored.
	WaitingFor string `json:"waiting_for,omitempty"`
	// TimeoutS is the hard deadline in seconds, counted from RunAt when
	// set, else from CreatedAt (Deadline).
	TimeoutS int `json:"timeout_s"`
	// RunAt is when a scheduled job is due: a delayed job's run_at, or the
	// end of a retry's backoff. Zero for a job never delayed.
	RunAt time.Time `json:"run_at,omitzero"`
	// RetryBackoff is the job's own retry schedule; nil takes the hub's
	// default (attempt⁴ seconds, capped by jobs.retry_backoff_max).
	RetryBackoff *RetryBackoff `json:"retry_backoff,omitempty"`
	// AttemptsLog has one entry per ended attempt, oldest first, at most
	// MaxAttemptsLog (the latest ones).
	AttemptsLog []Attempt `json:"attempts_log,omitempty"`
	// CreatedAt is when the hub accepted the job.
	CreatedAt time.Time `json:"created_at"`
	// StartedAt is when a worker started it; zero while queued.
	StartedAt time.Time `json:"started_at,omitzero"`
	// FinishedAt is when it reached a final status; zero before.
	FinishedAt time.Time `json:"finished_at,omitzero"`
	// Result is the mode's result (API.md, "Job modes").
	Result json.RawMessage `json:"result,omitempty"`
	// Assets names the files the job stored (GET /jobs/{id}/assets/{name};
	// client.Client.Asset).
	Assets []string `json:"assets,omitempty"`
	// Labels are the tags given at submit.
	Labels map[string]string `json:"labels,omitempty"`
	// IdempotencyKey is the key the job was submitted with, if any.
	IdempotencyKey string `json:"idempotency_key,omitempty"`
}

// Job priorities: 0 is the lowest, 9 the highest.
const (
	MinPriority     = 0
	MaxPriority     = 9
	DefaultPriority = 5
)

// MaxTenantBytes bounds a tenant name, whatever limits.max_label_value_bytes
// says (the column and index of the SQL store hold at most this).
const MaxTenantBytes = 1024

// Deadline is when the job must be final: timeout_s after it became due
// (ReadyAt). It is counted from then, not from start, so a job cannot
// outlive its caller's budget by waiting in the queue; a delayed job or a
// retry gets the whole budget from its run_at.
func (j *Job) Deadline() time.Time {
	return j.ReadyAt().Add(time.Duration(j.TimeoutS) * time.Second)
}

// ReadyAt is when the job became (or becomes) due to run: run_at when it
// has one later than its creation, else created_at. Deadline and the
// queued timeout count from it.
func (j *Job) ReadyAt() time.Time {
	if j.RunAt.After(j.CreatedAt) {
		return j.RunAt
	}
	return j.CreatedAt
}

// Errors that callers branch on.
var (
	// ErrNotFound: no job (or object) with that id.
	ErrNotFound = errors.New("not found")
	// ErrConflict: a conditional write lost (the job was not in the state the
	// caller expected: claimed by someone else, already final, stale attempt).
	ErrConflict = errors.New("conflict")
	// ErrUnavailable: the store cannot be reached; the caller may retry later.
	ErrUnavailable = errors.New("store unavailable")
	// ErrBadCursor: a List cursor the store did not hand out (garbage or
	// another store's); the caller's fault, not the store's.
	ErrBadCursor = errors.New("bad cursor")
)

// ListQuery selects jobs for JobStore.List.
type ListQuery struct {
	Status Status // empty = any
	Limit  int    // 1..1000; 0 means 50
	Cursor string // from a previous page's next cursor
	// OldestFirst orders by creation ascending (re-drive, recovery); the
	// default is newest first (the API's listing).
	OldestFirst bool
	// Mode, WorkerID and Reason keep only jobs with that mode, worker_id
	// (the worker of the current or last attempt) and reason; empty = any.
	Mode     string
	WorkerID string
	Reason   string
	// Labels keeps only jobs carrying every one of these labels with the
	// value given; empty = any (see MatchesFilters).
	Labels map[string]string
	// Tenant, when HasTenant, keeps only that tenant's jobs ("" is the
	// default tenant, so a plain string cannot say "any").
	Tenant    string
	HasTenant bool
	// Priority, when not nil, keeps only jobs of that priority (0..9).
	Priority *int
}

// MatchTenantPriority reports whether j passes q's tenant and priority
// filters (the embedded stores' check; the SQL store filters in SQL).
func (q ListQuery) MatchTenantPriority(j Job) bool {
	return (!q.HasTenant || j.Tenant == q.Tenant) && (q.Priority == nil || j.Priority == *q.Priority)
}

// Finish describes a transition to a final state.
type Finish struct {
	Status Status // succeeded, failed or canceled
	Reason string
	Error  string
	Result json.RawMessage
	Assets []string
	At     time.Time
	// Hub is the hub that records the end, for the attempts log.
	Hub string
	// Lane is the lane the attempt ran on, recorded with the end when the
	// job has none stored yet (the job grain writes a short job's lane
	// with its finish, not on its own). Only with a real attempt: the
	// fence says it is that attempt's; AnyAttempt ignores it.
	Lane string
	// From is the caller's copy of the job as stored while the attempt
	// runs (the job grain's, read back from its claim), or nil: a hint. A
	// store that reads the row to compute the end (its attempts log) may
	// compute it from From instead and write it only where the row is
	// still as From says in all the end is computed from; where it is not,
	// the end is computed from the row as without From. Only with a real
	// attempt; AnyAttempt ignores it.
	From *Job
}

// AnyAttempt disables the attempt fence of Finish: the hub's own decisions
// (cancel, deadline, reconciliation) end whichever attempt is current.
const AnyAttempt = -1

// Created is one job's outcome of a create that carried several
// (bolt.JobStore.CreateMany): the job as stored — the new one, or the one
// its idempotency key already named — whether this create made it, or why
// it did not (Err, with Job empty), as Create answers for one job.
type Created struct {
	Job     Job
	Created bool
	Err     error
}

// CreateEach answers jobs one after another through create (a store's
// Create, a hub's Submit): what a caller of several creates does where
// no store write carries them together.
func CreateEach(jobs []Job, create func(Job) (Job, bool, error)) []Created {
	out := make([]Created, len(jobs))
	for i, j := range jobs {
		out[i].Job, out[i].Created, out[i].Err = create(j)
	}
	return out
}

// FailEach answers every one of n jobs with err.
func FailEach(n int, err error) []Created {
	out := make([]Created, n)
	for i := range out {
		out[i].Err = err
	}
	return out
}

// JobStore keeps jobs. Every transition is a conditional write, so two hubs
// (or a hub and a stale worker) racing on one job cannot both win.
type JobStore interface {
	// Create stores a new queued job. With a non-empty IdempotencyKey that
	// already exists, it returns the existing job and created=false.
	Create(ctx context.Context, j Job) (stored Job, created bool, err error)
	Get(ctx context.Context, id string) (Job, error)
	// List returns a page and the cursor of the next one ("" at the end).
	List(ctx context.Context, q ListQuery) (jobs []Job, next string, err error)
	// Claim is the claim of record: queued and unassigned → running on
	// workerID, attempts+1, started_at=at. ErrConflict when it lost.
	Claim(ctx context.Context, id, workerID string, at time.Time) (Job, error)
	// Unclaim rolls back a claim whose send failed: running on workerID at
	// attempt → queued, unassigned, attempts-1. ErrConflict if anything moved.
	Unclaim(ctx context.Context, id, workerID string, attempt int) error
	// SetLane records the lane a running attempt got.
	SetLane(ctx context.Context, id string, attempt int, lane string) error
	// Requeue puts a running attempt back in the queue (a lost worker with
	// attempts left). ErrConflict if the attempt is not current.
	Requeue(ctx context.Context, id string, attempt int) error
	// Finish ends a non-final job. attempt fences stale writers (AnyAttempt
	// for the hub's own decisions). ErrConflict if already final or stale.
	Finish(ctx context.Context, id string, attempt int, f Finish) (Job, error)
	// Promote queues a scheduled job whose time came (ApplyPromote).
	Promote(ctx context.Context, id string) (Job, error)
	// Reschedule ends a running attempt that is tried again after a wait
	// (ApplyReschedule).
	Reschedule(ctx context.Context, id string, attempt int, r Reschedule) (Job, error)
	// Revive queues a failed job again under a new attempt (ApplyRevive).
	Revive(ctx context.Context, id string, at time.Time) (Job, error)
	Close() error
}

// commitWaitOffKey marks a context by WithoutCommitWait.
type commitWaitOffKey struct{}

// WithoutCommitWait returns ctx marking the job store writes made under it
// as ones their caller makes one after another, waiting on each (the
// items of POST /jobs:batch): a store that holds a write back for a commit
// to share (the embedded store's jobs.create_commit_wait) commits it at
// once instead, so a batch is not its items' waits long.
func WithoutCommitWait(ctx context.Context) context.Context {
	return context.WithValue(ctx, commitWaitOffKey{}, true)
}

// CommitWaitOff reports whether ctx was marked by WithoutCommitWait.
func CommitWaitOff(ctx context.Context) bool {
	off, _ := ctx.Value(commitWaitOffKey{}).(bool)
	return off
}
