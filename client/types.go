package client

import (
	"encoding/json"
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

// Statuses lists every job status, in lifecycle order.
var Statuses = []Status{StatusQueued, StatusRunning, StatusSucceeded, StatusFailed, StatusCanceled}

// Final reports whether no transition leaves s.
func (s Status) Final() bool {
	return s == StatusSucceeded || s == StatusFailed || s == StatusCanceled
}

// Reasons a job failed or was canceled (API.md), found in Job.Reason.
const (
	ReasonQueuedTimeout    = "queued_timeout"
	ReasonWorkerLost       = "worker_lost"
	ReasonDeadlineExceeded = "deadline_exceeded"
	ReasonCanceled         = "canceled"
	ReasonLaneError        = "lane_error"
	ReasonJobError         = "job_error"
	ReasonRejected         = "rejected"
)

// Job modes (API.md, "Job modes").
const (
	ModeNoop  = "noop"
	ModeFetch = "fetch"
	ModeMacro = "macro"
)

// Job is the hub's job object. Zero times mean "not yet".
type Job struct {
	// ID is the hub-assigned job id.
	ID string `json:"id"`
	// Mode is noop, fetch or macro.
	Mode string `json:"mode"`
	// Params are the mode's parameters as submitted.
	Params json.RawMessage `json:"params,omitempty"`
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
	// TimeoutS is the hard deadline in seconds, counted from CreatedAt.
	TimeoutS int `json:"timeout_s"`
	// CreatedAt is when the hub accepted the job.
	CreatedAt time.Time `json:"created_at"`
	// StartedAt is when a worker started it; zero while queued.
	StartedAt time.Time `json:"started_at,omitzero"`
	// FinishedAt is when it reached a final status; zero before.
	FinishedAt time.Time `json:"finished_at,omitzero"`
	// Result is the mode's result (see API.md, "Job modes").
	Result json.RawMessage `json:"result,omitempty"`
	// Assets names the files the job stored; fetch them with Client.Asset.
	Assets []string `json:"assets,omitempty"`
	// Labels are the tags given at submit.
	Labels map[string]string `json:"labels,omitempty"`
	// IdempotencyKey is the key the job was submitted with, when the hub
	// reports it.
	IdempotencyKey string `json:"idempotency_key,omitempty"`
}

// SubmitRequest is the body of POST /jobs. Zero TimeoutS and MaxAttempts
// leave the hub's defaults (jobs.default_timeout, jobs.max_attempts).
type SubmitRequest struct {
	// Mode is noop, fetch or macro.
	Mode string `json:"mode"`
	// Params are the mode's parameters; values may be any JSON-encodable
	// value, including json.RawMessage.
	Params map[string]any `json:"params,omitempty"`
	// TimeoutS is the job's hard deadline in seconds from creation.
	TimeoutS int `json:"timeout_s,omitempty"`
	// MaxAttempts bounds how often the job is tried.
	MaxAttempts int `json:"max_attempts,omitempty"`
	// Labels are free key/value tags, also used to match workers.
	Labels map[string]string `json:"labels,omitempty"`
}

// ListOptions filters GET /jobs. Zero values leave the filter out.
type ListOptions struct {
	// Status keeps only jobs in this status.
	Status Status
	// Limit caps the page size (the hub has its own default and maximum).
	Limit int
	// Cursor continues from a previous Page.NextCursor.
	Cursor string
}

// Page is one page of GET /jobs, newest first.
type Page struct {
	// Jobs on this page.
	Jobs []Job `json:"jobs"`
	// NextCursor continues the listing; "" on the last page.
	NextCursor string `json:"next_cursor,omitempty"`
}

// Worker statuses accepted by SetWorkerStatus.
const (
	WorkerActive  = "active"
	WorkerDrain   = "drain"
	WorkerStandby = "standby"
)

// Worker is one entry of GET /workers.
type Worker struct {
	// ID is the worker id (derived from its LAN IP unless given).
	ID string `json:"id"`
	// Hub is the id of the hub holding the worker's link.
	Hub string `json:"hub"`
	// Status is active, drain or standby.
	Status string `json:"status"`
	// Alive is true while heartbeats arrive within the alive window.
	Alive bool `json:"alive"`
	// InFlight counts the jobs running on the worker.
	InFlight int `json:"in_flight"`
	// MaxConcurrent is how many jobs the worker runs at once.
	MaxConcurrent int `json:"max_concurrent"`
	// Lanes is kept as sent (a count or a list of lanes); LaneCount reads
	// either.
	Lanes json.RawMessage `json:"lanes,omitempty"`
	// CPUPct is the CPU use from the last heartbeat.
	CPUPct float64 `json:"cpu_pct"`
	// MemPct is the memory use from the last heartbeat.
	MemPct float64 `json:"mem_pct"`
	// DiskPct is the disk use from the last heartbeat.
	DiskPct float64 `json:"disk_pct"`
	// LastSeen is the time of the last heartbeat.
	LastSeen time.Time `json:"last_seen,omitzero"`
}

// LaneCount is the number of lanes the worker reports, whether the hub sends
// "lanes" as a number or as a list; 0 when absent or unreadable.
func (w Worker) LaneCount() int {
	if len(w.Lanes) == 0 {
		return 0
	}
	var n float64
	if json.Unmarshal(w.Lanes, &n) == nil {
		return int(n)
	}
	var list []json.RawMessage
	if json.Unmarshal(w.Lanes, &list) == nil {
		return len(list)
	}
	return 0
}

// Hub is one entry of GET /hubs. Dead hubs still in the index have Alive
// false.
type Hub struct {
	// ID is the hub's cluster id.
	ID string `json:"id"`
	// Address is where the hub's API answers.
	Address string `json:"address"`
	// Alive is false for recently dead hubs still in the index.
	Alive bool `json:"alive"`
	// Local is true for the hub that answered the request.
	Local bool `json:"local"`
	// StartedAt is when the hub started.
	StartedAt time.Time `json:"started_at,omitzero"`
	// LastSeen is the hub's last heartbeat.
	LastSeen time.Time `json:"last_seen,omitzero"`
}
