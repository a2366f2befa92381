package messages

import "slices"

// The words of the wire contract that are values rather than frame types:
// job modes, step and session ops, driver names. They travel in
// worker-link frames (assign_job's mode, session_command's command.op,
// hello's capabilities.drivers) and in the HTTP API (POST /jobs, POST
// /sessions/{id}/commands, macro steps), so the hub's validation, the
// scheduler and the workers' drivers all spell them from here.

// Job modes (API.md, "Job modes").
const (
	// ModeNoop emits log lines and sleeps; it runs on any lane.
	ModeNoop = "noop"
	// ModeFetch loads one page; it needs a chromium lane.
	ModeFetch = "fetch"
	// ModeMacro runs a list of step ops; it needs a chromium lane.
	ModeMacro = "macro"
)

// Modes lists every job mode, in the order API.md and error messages name
// them.
var Modes = []string{ModeNoop, ModeFetch, ModeMacro}

// Step ops: the op of a macro step and of a session command (API.md, POST
// /sessions/{id}/commands). The hub checks a command's op against these
// before forwarding it; the worker's driver runs them.
const (
	OpNavigate   = "navigate"
	OpClick      = "click"
	OpType       = "type"
	OpWait       = "wait"
	OpScreenshot = "screenshot"
	OpText       = "text"
	OpEval       = "eval"
)

// StepOps lists every step op, in the order API.md and error messages name
// them.
var StepOps = []string{OpNavigate, OpClick, OpType, OpWait, OpScreenshot, OpText, OpEval}

// IsStepOp reports whether op is one of StepOps.
func IsStepOp(op string) bool { return slices.Contains(StepOps, op) }

// Drivers a worker announces in hello (Capabilities.Drivers). The hub
// places fetch and macro jobs, and sessions, only on a worker that
// announces DriverChromium.
const (
	// DriverSimulated runs noop jobs without a browser.
	DriverSimulated = "simulated"
	// DriverChromium runs every mode on headless Chromium lanes.
	DriverChromium = "chromium"
)

// ModeDriver is the driver a worker must announce to run a job of mode:
// "" for noop (any lane), DriverChromium for every other mode. The
// scheduler's filter and the hub's waiting_for both read it, so "which
// workers can run this" has one answer.
func ModeDriver(mode string) string {
	if mode == ModeNoop || mode == "" {
		return ""
	}
	return DriverChromium
}

// Session lifecycle ops: session_command ops only the hub sends and the
// worker handles itself, never a driver (see Frame.SessionID). Users cannot
// send them: they are not step ops.
const (
	// OpOpen reserves a lane for the session; the result is {"lane": URL}.
	OpOpen = "open"
	// OpClose frees the session's lane.
	OpClose = "close"
	// OpTargets lists the lane browser's targets as its /json/list does
	// (the hub's /sessions/{id}/json/list rewrites their URLs).
	OpTargets = "cdp_targets"
	// OpProtocol answers the lane browser's /json/protocol, compacted (the
	// hub's /sessions/{id}/json/protocol; the hub keeps it per browser
	// version, so the link carries it once per version).
	OpProtocol = "cdp_protocol"
)

// Lane states a worker reports in hello and heartbeat (Frame.LaneStates)
// and GET /workers shows per lane ("lanes": [{"lane", "state"}]).
const (
	// LaneIdle: free, its browser (if started) clean for the next user.
	LaneIdle = "idle"
	// LaneJob: a job runs on the lane (its cleanup included).
	LaneJob = "job"
	// LaneSession: an interactive session holds the lane (its cleanup
	// included).
	LaneSession = "session"
	// LaneRestarting: the lane's browser is being started or restarted
	// (after a cleanup that failed or could not be verified, or for a lane
	// marked suspect); the lane takes no work until it is up.
	LaneRestarting = "restarting"
)

// LaneStates lists every lane state, in the order error messages name them.
var LaneStates = []string{LaneIdle, LaneJob, LaneSession, LaneRestarting}

// IsLaneState reports whether s is one of LaneStates.
func IsLaneState(s string) bool { return slices.Contains(LaneStates, s) }

// Sessions, as the HTTP API shows them.
const (
	// SessionIDPrefix starts every session id ("s-" and hex), which no job
	// id (26 upper-case base32 characters) does: a session's downloads
	// share the asset store with the jobs' assets, under the session id.
	SessionIDPrefix = "s-"
)
