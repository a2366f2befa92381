package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/paprika-hub/paprika/messages"
	"github.com/paprika-hub/paprika/persistence"
)

// Driver names accepted in Config.Driver. The hello frame announces them
// (capabilities.drivers) and the hub's pick rule reads them, so they are
// the wire contract's (messages.Driver*).
const (
	// DriverSimulated runs only the noop mode, without a browser; used by
	// tests, benchmarks and `paprika up`.
	DriverSimulated = messages.DriverSimulated
	// DriverChromium drives headless Chromium lanes: package agent/chromium,
	// plugged in through Config.DriverImpl (it imports this package).
	DriverChromium = messages.DriverChromium
)

// Failure reasons reported in job_failed (API.md, job object "reason"):
// the job object's own reasons, declared once in package persistence (which
// imports only the standard library); these say when the agent uses each.
const (
	// ReasonRejected: no free lane, or the worker is draining or stopping.
	ReasonRejected = persistence.ReasonRejected
	// ReasonCanceled: the hub sent cancel_job.
	ReasonCanceled = persistence.ReasonCanceled
	// ReasonDeadlineExceeded: the job's deadline_unix_ms passed.
	ReasonDeadlineExceeded = persistence.ReasonDeadlineExceeded
	// ReasonLaneError: the lane cannot run the job (wrong driver for the
	// mode, driver crash).
	ReasonLaneError = persistence.ReasonLaneError
	// ReasonJobError: the job itself failed (bad params, page error).
	ReasonJobError = persistence.ReasonJobError
	// ReasonWorkerLost: the worker stopped before the job finished.
	ReasonWorkerLost = persistence.ReasonWorkerLost
)

// ErrUnsupportedDriver is returned by New for a driver this build cannot run.
var ErrUnsupportedDriver = errors.New("unsupported driver")

// Driver runs jobs on lanes. Run is called from one goroutine per job, for
// up to Config.Lanes jobs at once, each on a distinct lane.
type Driver interface {
	// Name is the driver's name, announced in hello's capabilities.drivers.
	Name() string
	// LaneURL is the name of lane (0-based) on the worker with the given
	// id, announced in hello's capabilities.lane_urls; its answer when the
	// worker id is set names the lane in job_started and in a session's
	// open result, and so in the job and session objects of the API. It
	// must be stable and must not be a browser's DevTools address: the
	// hub shows it to every API client. It is called from any of the agent's goroutines, at
	// times under the agent's lock: it must answer at once and never call
	// back into the agent.
	LaneURL(workerID string, lane int) string
	// Run executes job on lane. ctx ends at the job's deadline, on
	// cancel_job and when the agent stops; Run must return soon after.
	// emit sends one log line and fails once ctx is done; it is safe for
	// concurrent use. A failure is returned as a *JobError naming its
	// reason; any other error counts as ReasonJobError.
	Run(ctx context.Context, lane int, job Job, emit func(line string) error) (Result, error)
}

// LaneWatcher is implemented by a Driver whose lanes change on their own
// while the agent runs: a lane's browser starts, restarts or exits. The
// agent then reads every lane's state again (LaneStater) and tells the hub
// in a heartbeat's lane_states, so GET /workers shows what each lane does
// now, not what hello said.
type LaneWatcher interface {
	// LaneChanges returns the channel on which the driver signals that one
	// or more lanes changed. The driver sends without blocking into a
	// buffer of one: a burst of changes is one wake-up, and a lane never
	// waits for the agent. The agent is its only reader.
	LaneChanges() <-chan struct{}
}

// LaneStater is implemented by a Driver whose lanes have a state of their
// own besides being held or free: a browser being started or restarted,
// during which the lane takes no work even though no job holds it.
type LaneStater interface {
	// LaneState is messages.LaneRestarting while the lane's browser is
	// being (re)started, else "": the agent's own view (idle, job,
	// session) applies. Any other answer is ignored. It is called under
	// the agent's lock: it must answer at once and never call back into
	// the agent.
	LaneState(lane int) string
}

// Job is what a driver needs to run one assignment.
type Job struct {
	// ID is the job id.
	ID string
	// Attempt is the attempt number the hub gave the assignment.
	Attempt int
	// Mode is the job mode: noop, fetch, macro, or a mode of the worker
	// library's handlers (Config.Modes).
	Mode string
	// Params is the job's params object as sent by the hub (may be empty).
	Params json.RawMessage
	// Deadline is the job's hard deadline; zero when the hub sent none.
	Deadline time.Time
}

// Result is what a successful job reports in job_done.
type Result struct {
	// JSON is the result object; nil is sent as {}.
	JSON json.RawMessage
	// Assets lists the names of the files the job produced.
	Assets []string
}

// JobError is a job failure with the reason reported in job_failed.
type JobError struct {
	// Reason is one of the Reason* constants.
	Reason string
	// Err is the cause; its text becomes job_failed's error.
	Err error
	// Permanent says a job_error is final: job_failed carries permanent
	// true and the hub does not retry it (worker.Permanent). Ignored for
	// the other reasons, which say why the attempt ended, not the job.
	Permanent bool
}

// Error implements error.
func (e *JobError) Error() string { return fmt.Sprintf("%s: %v", e.Reason, e.Err) }

// Unwrap returns the cause.
func (e *JobError) Unwrap() error { return e.Err }

// Fail builds a *JobError with a formatted cause.
func Fail(reason, format string, args ...any) error {
	return &JobError{Reason: reason, Err: fmt.Errorf(format, args...)}
}

// newDriver returns the driver named in the config.
func newDriver(cfg Config) (Driver, error) {
	if cfg.DriverImpl != nil {
		return cfg.DriverImpl, nil
	}
	switch cfg.Driver {
	case DriverSimulated:
		return SimulatedDriver{}, nil
	default:
		return nil, fmt.Errorf("driver %q: %w", cfg.Driver, ErrUnsupportedDriver)
	}
}
