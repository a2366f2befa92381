package client

import (
	"encoding/json"
	"time"

	"github.com/paprika-hub/paprika/persistence"
)

// The job object, its statuses and reasons are the hub's own declarations
// (package persistence, which imports only the standard library), not
// copies: what the hub serves is what the SDK decodes, field for field.

// Status is a job's place in its state machine; Final reports whether no
// transition leaves it.
type Status = persistence.Status

// Job statuses (API.md, "Job object").
const (
	StatusQueued    = persistence.StatusQueued
	StatusRunning   = persistence.StatusRunning
	StatusSucceeded = persistence.StatusSucceeded
	StatusFailed    = persistence.StatusFailed
	StatusCanceled  = persistence.StatusCanceled
	// StatusScheduled: waiting for its run_at (delayed, or a retry's backoff).
	StatusScheduled = persistence.StatusScheduled
)

// Statuses lists every job status, in lifecycle order.
var Statuses = persistence.Statuses

// Reasons a job failed or was canceled (API.md), found in Job.Reason.
const (
	ReasonQueuedTimeout    = persistence.ReasonQueuedTimeout
	ReasonWorkerLost       = persistence.ReasonWorkerLost
	ReasonDeadlineExceeded = persistence.ReasonDeadlineExceeded
	ReasonCanceled         = persistence.ReasonCanceled
	ReasonLaneError        = persistence.ReasonLaneError
	ReasonJobError         = persistence.ReasonJobError
	ReasonRejected         = persistence.ReasonRejected
)

// Job modes (API.md, "Job modes"). Their home is the wire contract,
// messages.Modes; they are spelled here because package messages also
// holds the hub's protobuf messages, and importing it would pull the
// protobuf runtime into every program that uses the SDK.
// TestModesAreTheWireContracts keeps the two equal.
const (
	ModeNoop  = "noop"
	ModeFetch = "fetch"
	ModeMacro = "macro"
)

// Job is the hub's job object. Zero times mean "not yet".
type Job = persistence.Job

// SubmitRequest is the body of POST /jobs. Zero TimeoutS and MaxAttempts
// leave the hub's defaults (jobs.default_timeout, jobs.max_attempts).
type SubmitRequest struct {
	// Mode is noop, fetch, macro or a custom mode a worker declares.
	Mode string `json:"mode"`
	// Params are the mode's parameters; values may be any JSON-encodable
	// value, including json.RawMessage.
	Params map[string]any `json:"params,omitempty"`
	// TimeoutS is the job's hard deadline in seconds from creation, or
	// from its run_at when delayed (each retry: from its own run_at).
	TimeoutS int `json:"timeout_s,omitempty"`
	// MaxAttempts bounds how often the job is tried.
	MaxAttempts int `json:"max_attempts,omitempty"`
	// Labels are free key/value tags, also used to match workers.
	Labels map[string]string `json:"labels,omitempty"`
	// Priority is 0..9 (nil: the hub's default, 5); a higher one is placed
	// first.
	Priority *int `json:"priority,omitempty"`
	// RequireCapacity makes the hub answer 503 no_capacity instead of
	// queuing when no alive worker could run the job.
	RequireCapacity bool `json:"require_capacity,omitempty"`
	// RunAt delays the job until then (nil: at once); DelayS does the same
	// relative to now. Give at most one.
	RunAt  *time.Time `json:"run_at,omitempty"`
	DelayS *float64   `json:"delay_s,omitempty"`
	// RetryBackoff is the job's retry schedule (nil: the hub's default,
	// attempt⁴ seconds capped by jobs.retry_backoff_max).
	RetryBackoff *RetryBackoff `json:"retry_backoff,omitempty"`
	// Tenant is who the job is for ("": the hub's scheduler.tenant_label
	// label, else the default tenant); tenants share lanes by weight.
	Tenant string `json:"tenant,omitempty"`
}

// RetryBackoff is a retry schedule: retry n waits min(BaseS·n⁴, MaxS)
// seconds ±10 %.
type RetryBackoff = persistence.RetryBackoff

// Attempt is one entry of Job.AttemptsLog.
type Attempt = persistence.Attempt

// ListOptions filters GET /jobs. Zero values leave the filter out.
type ListOptions struct {
	// Status keeps only jobs in this status.
	Status Status
	// Limit caps the page size (the hub has its own default and maximum).
	Limit int
	// Cursor continues from a previous Page.NextCursor.
	Cursor string
	// Tenant, when not nil, keeps only that tenant's jobs (a pointer to
	// "" is the default tenant).
	Tenant *string
	// Priority, when not nil, keeps only jobs of that priority (0..9).
	Priority *int
	// Mode, WorkerID and Reason keep only jobs with that mode, worker
	// (worker_id) and reason; Status StatusFailed with Reason
	// persistence.ReasonJobError is the "dead" view.
	Mode     string
	WorkerID string
	Reason   string
	// Labels keeps only jobs carrying every one of these labels.
	Labels map[string]string
}

// ModeInfo is one entry of GET /modes.
type ModeInfo = persistence.ModeInfo

// Page is one page of GET /jobs, newest first.
type Page struct {
	// Jobs on this page.
	Jobs []Job `json:"jobs"`
	// NextCursor continues the listing; "" on the last page.
	NextCursor string `json:"next_cursor,omitempty"`
}

// Worker statuses accepted by SetWorkerStatus (the hub's own,
// persistence.WorkerStatuses).
const (
	WorkerActive  = persistence.WorkerActive
	WorkerDrain   = persistence.WorkerDrain
	WorkerStandby = persistence.WorkerStandby
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
