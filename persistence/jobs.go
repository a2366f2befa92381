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
)

// Final reports whether no transition leaves s.
func (s Status) Final() bool {
	return s == StatusSucceeded || s == StatusFailed || s == StatusCanceled
}

// Valid reports whether s is one of the five statuses.
func (s Status) Valid() bool {
	switch s {
	case StatusQueued, StatusRunning, StatusSucceeded, StatusFailed, StatusCanceled:
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
	// Status is queued, running, succeeded, failed or canceled.
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
	// WaitingFor names what no alive worker has but the job needs ("a
	// worker with a chromium lane"), for a queued job only. The hub
	// computes it when it serves the job; it is never stored.
	WaitingFor string `json:"waiting_for,omitempty"`
	// TimeoutS is the hard deadline in seconds, counted from CreatedAt.
	TimeoutS int `json:"timeout_s"`
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

// Deadline is when the job must be final: created_at + timeout_s. It is
// counted from creation, not from start, so a job cannot outlive its caller's
// budget by waiting in the queue.
func (j *Job) Deadline() time.Time {
	return j.CreatedAt.Add(time.Duration(j.TimeoutS) * time.Second)
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
}

// Finish describes a transition to a final state.
type Finish struct {
	Status Status // succeeded, failed or canceled
	Reason string
	Error  string
	Result json.RawMessage
	Assets []string
	At     time.Time
}

// AnyAttempt disables the attempt fence of Finish: the hub's own decisions
// (cancel, deadline, reconciliation) end whichever attempt is current.
const AnyAttempt = -1

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
	Close() error
}
