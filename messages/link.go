package messages

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	"unicode/utf8"

	"github.com/paprika-hub/paprika/internal/credential"
	"github.com/paprika-hub/paprika/internal/jsonenc"
	"github.com/paprika-hub/paprika/persistence"
)

// Frame types of the worker link (API.md, "Worker link"). Every frame is a
// JSON text message with a "type" field; the other fields depend on it.
const (
	// Worker → hub.
	TypeHello         = "hello"
	TypeHeartbeat     = "heartbeat"
	TypeJobStarted    = "job_started"
	TypeJobLog        = "job_log"
	TypeJobDone       = "job_done"
	TypeJobFailed     = "job_failed"
	TypeSessionResult = "session_result"
	// TypeJobStatus answers job_query: whether the worker holds the
	// assignment (State is one of the JobState* values).
	TypeJobStatus = "job_status"
	// TypeLeaving says the worker takes no more work: it drains, or it
	// stops. The hub places nothing more on it over this link and answers
	// leave_ack (no fields of its own either way).
	TypeLeaving = "leaving"

	// Hub → worker.
	TypeWelcome        = "welcome"
	TypeAssignJob      = "assign_job"
	TypeCancelJob      = "cancel_job"
	TypeSessionCommand = "session_command"
	TypeDrain          = "drain"
	// TypeJobAck confirms that the hub stored a job's final frame; until it
	// arrives the worker keeps the job's frames and re-sends them after a
	// reconnect, so a result is never lost with a socket.
	TypeJobAck = "job_ack"
	// TypeJobQuery asks whether the worker holds an assignment (job id and
	// attempt) the hub could not confirm it delivered. The worker answers
	// job_status; when it does not hold it, it also refuses that attempt
	// from then on, so the hub may hand the job to another worker without
	// any risk of a late assign_job running it a second time.
	TypeJobQuery = "job_query"
	// TypeTunnelOpen asks the worker to open a CDP tunnel (TunnelID) to
	// the lane of its open session SessionID: it dials the lane's DevTools
	// socket (the browser, or the page Target when set) and a dedicated
	// WebSocket to its hub, GET /workers/{id}/tunnels/{tunnel_id}, and
	// splices the two. A socket per tunnel, not frames on the link: a
	// 20 MB screenshot must not hold up heartbeats and logs behind it, and
	// TCP gives each tunnel its own backpressure.
	TypeTunnelOpen = "tunnel_open"
	// TypeLiveOpen asks the worker for a screencast of the lane running
	// job JobID or session SessionID (live.go): it dials a dedicated
	// socket GET /workers/{id}/live/{LiveID} and streams the page's frames.
	TypeLiveOpen = "live_open"
	// TypeLaneSkip tells the worker which of its lanes health-aware
	// placement skips (SkipLanes; absent or empty: none), so that its lane
	// pool takes a healthy free lane first: the hub counts a sick lane as
	// taken, but only the worker picks the lane a job runs on. Sent when
	// the set changes and on a new link that has any; a worker starts each
	// link with none. An older worker logs it as unknown and keeps the link.
	TypeLaneSkip = "lane_skip"
	// TypeLeaveAck answers leaving. It comes after every assign_job the
	// hub sent on the link before, so a stopping worker that has read it
	// has answered each of them before its close frame: an assignment
	// never crosses the close unanswered (which the hub, after the worker's
	// restart, could only take for a lost attempt).
	TypeLeaveAck = "leave_ack"
	// TypeRelink answers hello, instead of welcome, when the worker's
	// grain lives on another hub of the cluster and hello's hub_urls
	// lists that hub: HubURL is that entry, as the worker wrote it. The
	// hub accepts nothing on the link and closes it; the worker links to
	// HubURL at once, so its socket and its grain share a hub and the
	// grain's frames to the link are local messages. Only a worker that
	// sent hub_urls is ever told to relink.
	TypeRelink = "relink"
	// TypeError answers a malformed or unknown frame; the link stays open.
	TypeError = "error"
)

// MaxFrameBytes bounds one frame; a longer one is refused by the reader.
const MaxFrameBytes = 1 << 20

// maxLanes bounds a worker's lane count as announced (max_concurrent,
// lane_urls), and the entries of a running list.
const maxLanes = 10000

// SessionSlotPrefix starts the key of a session's lane among a worker's
// reservations ("session:<id>"), the one kind of entry of a running list
// that is not a job id.
const SessionSlotPrefix = "session:"

// Bounds of the text a worker puts in its reports: a frame is capped as a
// whole (MaxFrameBytes), these keep one field from filling the job object
// or the registry.
const (
	// MaxErrorBytes bounds a report's error text; a worker cuts a longer
	// one (TruncateError) rather than have the report refused.
	MaxErrorBytes = 8 << 10
	maxURLBytes   = 2 << 10
	// MaxHubURLs bounds hello's hub_urls.
	MaxHubURLs = 32
)

// TruncateError cuts s to MaxErrorBytes, on a rune boundary.
func TruncateError(s string) string {
	if len(s) <= MaxErrorBytes {
		return s
	}
	const mark = " …(cut)"
	cut := MaxErrorBytes - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}

// Frame is the union of every worker-link frame. Only the fields of its Type
// are set; encoding omits the rest, so each frame on the wire carries just
// what API.md lists for it.
type Frame struct {
	Type string `json:"type"`

	// hello
	WorkerID     string        `json:"worker_id,omitempty"`
	LanIP        string        `json:"lan_ip,omitempty"`
	Version      string        `json:"version,omitempty"`
	Capabilities *Capabilities `json:"capabilities,omitempty"`
	// HubURLs (hello) is every hub URL the worker was given, as given:
	// it says the worker follows a relink to one of them. A worker sends
	// none on a link it took by following one, so it is never sent on.
	HubURLs []string `json:"hub_urls,omitempty"`

	// heartbeat (and hello, so a reconnecting worker reports at once)
	Stats   *Stats   `json:"stats,omitempty"`
	Running []string `json:"running,omitempty"`
	// LaneURLs (heartbeat only) was the worker's lane list as in hello's
	// capabilities.lane_urls, sent when a lane's address changed. Workers
	// no longer send it and hubs ignore it (GET /workers shows lane states,
	// never addresses); it is still decoded and bounded, so an older
	// worker's heartbeat is not refused.
	LaneURLs []string `json:"lane_urls,omitempty"`
	// LaneStates (hello and heartbeat) is every lane's state, one of
	// LaneStates, indexed by lane; a heartbeat carries it only when it
	// changed since the worker last reported it (absent means unchanged).
	LaneStates []string `json:"lane_states,omitempty"`
	// LaneHealth (hello and heartbeat) is every lane's browser health,
	// indexed by lane (health.go); like LaneStates it is sent only when it
	// changed, at most every HealthReportGap (absent means unchanged).
	LaneHealth []LaneHealth `json:"lane_health,omitempty"`

	// job frames
	JobID    string          `json:"job_id,omitempty"`
	Attempt  int             `json:"attempt,omitempty"`
	Lane     string          `json:"lane,omitempty"`
	Seq      int64           `json:"seq,omitempty"`
	Line     string          `json:"line,omitempty"`
	Result   json.RawMessage `json:"result,omitempty"`
	Assets   []string        `json:"assets,omitempty"`
	Reason   string          `json:"reason,omitempty"`
	Error    string          `json:"error,omitempty"`
	Mode     string          `json:"mode,omitempty"` // assign_job: one of Modes
	Params   json.RawMessage `json:"params,omitempty"`
	Deadline int64           `json:"deadline_unix_ms,omitempty"`
	// Permanent (job_failed): the handler called the failure final
	// (worker.Permanent), so the hub does not retry it whatever
	// max_attempts allows; absent, a job_error follows max_attempts.
	Permanent bool `json:"permanent,omitempty"`

	// sessions: the hub sends session_command with Command = {"op": ...}:
	// op "open" (OpOpen) reserves a lane for the session (result {"lane":
	// URL}), "close" (OpClose) frees it, any other op (StepOps: navigate,
	// click, type, wait, screenshot, text, eval — the macro step ops) runs
	// on that lane. The worker answers each with session_result carrying
	// the same CommandID: OK with Result, or Error.
	SessionID string          `json:"session_id,omitempty"`
	CommandID string          `json:"command_id,omitempty"`
	Command   json.RawMessage `json:"command,omitempty"`
	OK        bool            `json:"ok,omitempty"`

	// tunnel_open: the tunnel's id (TunnelID) and, for a page-level
	// tunnel, the lane's target id (Target); SessionID names the session.
	TunnelID string `json:"tunnel_id,omitempty"`
	Target   string `json:"target,omitempty"`

	// live_open: the screencast's id; JobID or SessionID names the lane.
	LiveID string `json:"live_id,omitempty"`

	// job_status: State, and how long the worker process has run, so the
	// hub can tell "never got it" from "restarted since, and forgot it"
	// without comparing clocks across machines.
	State    string `json:"state,omitempty"`
	UptimeMS int64  `json:"uptime_ms,omitempty"`

	// lane_skip: the lanes placement skips, ascending by lane.
	SkipLanes []LaneSkip `json:"skip_lanes,omitempty"`

	// welcome
	HeartbeatIntervalMS int64  `json:"heartbeat_interval_ms,omitempty"`
	AliveWindowMS       int64  `json:"alive_window_ms,omitempty"`
	HubID               string `json:"hub_id,omitempty"`

	// relink: the hub URL to link to, one of hello's hub_urls.
	HubURL string `json:"hub_url,omitempty"`

	// error
	Code    string `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
}

// States of a job_status answer.
const (
	// JobStateRunning: the worker runs the attempt (or holds its final frames
	// until job_ack); it will report it.
	JobStateRunning = "running"
	// JobStateUnknown: the worker never got the attempt, or already had its
	// end acknowledged. Either way it will never run it now.
	JobStateUnknown = "unknown"
)

// Capabilities is what a worker announces in hello.
type Capabilities struct {
	MaxConcurrent int      `json:"max_concurrent"`
	LaneURLs      []string `json:"lane_urls,omitempty"`
	BrowserURL    string   `json:"browser_url,omitempty"`
	Drivers       []string `json:"drivers,omitempty"`
	// Modes declares the job modes this worker runs (the worker library's
	// registered handlers, built-in ones included). A worker that sends
	// none runs the built-in modes its Drivers allow (ModeDriver).
	Modes []ModeDecl `json:"modes,omitempty"`
}

// ModeDecl is one job mode a worker declares in hello.
type ModeDecl struct {
	// Name is the mode as jobs name it (ValidModeName).
	Name string `json:"name"`
	// Lane is what a job of this mode needs of its lane: LaneNeedChromium
	// (a headless Chromium lane), or "" (a lane slot, no browser).
	Lane string `json:"lane,omitempty"`
	// Schema is an optional JSON Schema of the mode's params, checked by
	// the hub at POST /jobs; at most MaxModeSchemaBytes.
	Schema json.RawMessage `json:"schema,omitempty"`
}

// What a declared mode may need of its lane (ModeDecl.Lane).
const (
	// LaneNeedNone: a lane slot only; the handler runs without a browser.
	LaneNeedNone = ""
	// LaneNeedChromium: the handler drives the lane's headless Chromium.
	LaneNeedChromium = DriverChromium
)

// Bounds of hello's declared modes.
const (
	// MaxModes bounds how many modes one worker may declare.
	MaxModes = 64
	// MaxModeNameBytes bounds a mode's name.
	MaxModeNameBytes = 64
	// MaxModeSchemaBytes bounds one declared mode's JSON Schema.
	MaxModeSchemaBytes = 64 << 10
)

// ValidModeName reports whether name may name a job mode: 1..64 bytes of
// a-z 0-9 . _ - starting with a letter or digit.
func ValidModeName(name string) bool {
	if name == "" || len(name) > MaxModeNameBytes {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case (c == '.' || c == '_' || c == '-') && i > 0:
		default:
			return false
		}
	}
	return true
}

// checkModes bounds and checks hello's declared modes: valid, unique
// names, a known lane need, a schema that is a JSON object within bounds.
func checkModes(modes []ModeDecl) error {
	if len(modes) > MaxModes {
		return fmt.Errorf("capabilities.modes has %d entries, limit %d", len(modes), MaxModes)
	}
	seen := make(map[string]bool, len(modes))
	for i, m := range modes {
		if !ValidModeName(m.Name) {
			return fmt.Errorf("capabilities.modes[%d].name %.80q: use 1-%d of a-z 0-9 . _ - starting with a letter or digit", i, m.Name, MaxModeNameBytes)
		}
		if seen[m.Name] {
			return fmt.Errorf("capabilities.modes[%d].name %q declared twice", i, m.Name)
		}
		seen[m.Name] = true
		if m.Lane != LaneNeedNone && m.Lane != LaneNeedChromium {
			return fmt.Errorf("capabilities.modes[%d].lane %.80q is not one of \"\", %q", i, m.Lane, LaneNeedChromium)
		}
		if len(m.Schema) > MaxModeSchemaBytes {
			return fmt.Errorf("capabilities.modes[%d].schema has %d bytes, limit %d", i, len(m.Schema), MaxModeSchemaBytes)
		}
		if len(m.Schema) > 0 {
			var obj map[string]json.RawMessage
			if err := json.Unmarshal(m.Schema, &obj); err != nil {
				return fmt.Errorf("capabilities.modes[%d].schema is not a JSON object", i)
			}
		}
	}
	return nil
}

// Stats is a worker's host reading, sent with every heartbeat.
type Stats struct {
	InFlight int     `json:"in_flight"`
	CPUPct   float64 `json:"cpu_pct"`
	MemPct   float64 `json:"mem_pct"`
	DiskPct  float64 `json:"disk_pct"`
	// ShmFreeMB is /dev/shm's free space in MiB; absent when the worker's
	// driver does not measure it (the simulated one).
	ShmFreeMB *int64 `json:"shm_free_mb,omitempty"`
}

// Errors returned by DecodeFrame; callers answer them with an error frame.
var (
	ErrMalformed   = errors.New("malformed frame")
	ErrUnknownType = errors.New("unknown frame type")
)

var knownTypes = map[string]bool{
	TypeHello: true, TypeHeartbeat: true, TypeJobStarted: true, TypeJobLog: true,
	TypeJobDone: true, TypeJobFailed: true, TypeSessionResult: true,
	TypeWelcome: true, TypeAssignJob: true, TypeCancelJob: true,
	TypeSessionCommand: true, TypeDrain: true, TypeJobAck: true, TypeError: true,
	TypeJobQuery: true, TypeJobStatus: true, TypeTunnelOpen: true,
	TypeLiveOpen: true, TypeLaneSkip: true, TypeLeaving: true, TypeLeaveAck: true,
	TypeRelink: true,
}

// DecodeFrame parses one frame and checks the fields its type needs. It never
// panics, whatever the input (FuzzDecodeFrame in link_test.go).
func DecodeFrame(data []byte) (Frame, error) {
	var f Frame
	err := DecodeFrameInto(data, &f)
	return f, err
}

// DecodeFrameInto is DecodeFrame into *f, which it overwrites whole (on
// an error too, as DecodeFrame returns). A reader that decodes every
// frame into one Frame of its own allocates none per frame: a hub's
// socket reader hands a log line on as three fields, and copies a frame
// only for the frames that go on whole.
func DecodeFrameInto(data []byte, f *Frame) error {
	*f = Frame{} // also drops slices json would otherwise append into
	if len(data) > MaxFrameBytes {
		return fmt.Errorf("%w: %d bytes, limit %d", ErrMalformed, len(data), MaxFrameBytes)
	}
	if decodeJobLog(data, f) {
		if err := f.validate(); err != nil {
			return fmt.Errorf("%w: %s: %v", ErrMalformed, f.Type, err)
		}
		return nil
	}
	return decodeFrameJSON(data, f)
}

// decodeFrameJSON is DecodeFrameInto by encoding/json, for every frame
// decodeJobLog does not take; *f is zero.
func decodeFrameJSON(data []byte, f *Frame) error {
	if err := json.Unmarshal(data, f); err != nil {
		*f = Frame{}
		return fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if !knownTypes[f.Type] {
		return fmt.Errorf("%w: %q", ErrUnknownType, f.Type)
	}
	if err := f.validate(); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrMalformed, f.Type, err)
	}
	return nil
}

// jobLogHead opens every job_log frame Frame.Encode makes: the type
// first, then the job's fields in the struct's order.
const jobLogHead = `{"type":"job_log"`

// decodeJobLog decodes data into *f (zero) when it is a job_log frame in
// the form Frame.Encode gives it — `{"type":"job_log"` then any of
// "job_id", "attempt", "seq" and "line", in that order, once each, and
// nothing else, not even space — and reports whether it did. Anything
// else is left to encoding/json, so the frame decodes to what
// decodeFrameJSON makes of it either way (FuzzDecodeFrame compares the
// two). Log lines are most of a link's frames, and encoding/json spent
// three fifths of a log-ingesting hub's CPU finding these four fields
// among the Frame's fifty.
func decodeJobLog(data []byte, f *Frame) bool {
	if !bytes.HasPrefix(data, []byte(jobLogHead)) {
		return false
	}
	// The fields go straight into *f (a whole Frame copied in was a tenth
	// of this); a frame not taken leaves it zero again.
	if !scanJobLog(data[len(jobLogHead):], f) {
		*f = Frame{}
		return false
	}
	f.Type = TypeJobLog
	return true
}

// scanJobLog reads what follows jobLogHead into f's job_log fields.
func scanJobLog(p []byte, f *Frame) bool {
	var ok bool
	if p, ok = cutKey(p, `,"job_id":`); ok {
		if f.JobID, p, ok = scanString(p); !ok {
			return false
		}
	}
	if p, ok = cutKey(p, `,"attempt":`); ok {
		var n int64
		if n, p, ok = scanUint(p); !ok {
			return false
		}
		f.Attempt = int(n)
	}
	if p, ok = cutKey(p, `,"seq":`); ok {
		if f.Seq, p, ok = scanUint(p); !ok {
			return false
		}
	}
	if p, ok = cutKey(p, `,"line":`); ok {
		if f.Line, p, ok = scanString(p); !ok {
			return false
		}
	}
	return len(p) == 1 && p[0] == '}'
}

// cutKey returns p after key when p starts with it.
func cutKey(p []byte, key string) ([]byte, bool) {
	if bytes.HasPrefix(p, []byte(key)) {
		return p[len(key):], true
	}
	return p, false
}

// scanString reads the JSON string p starts with and returns it and the
// rest. A string of plain ASCII is taken as it is; one with an escape or
// a non-ASCII byte is handed to encoding/json, so escapes and invalid
// UTF-8 come out as it makes them. false: not a string, or not valid.
func scanString(p []byte) (string, []byte, bool) {
	if len(p) == 0 || p[0] != '"' {
		return "", p, false
	}
	plain := true
	for i := 1; i < len(p); i++ {
		switch c := p[i]; {
		case c == '"':
			if plain {
				return string(p[1:i]), p[i+1:], true
			}
			var s string
			if json.Unmarshal(p[:i+1], &s) != nil {
				return "", p, false
			}
			return s, p[i+1:], true
		case c == '\\':
			plain = false
			i++ // the escaped byte cannot end the string
		case c < 0x20:
			return "", p, false // a control character: not JSON
		case c >= 0x80:
			plain = false
		}
	}
	return "", p, false
}

// scanUint reads the JSON number p starts with, when it is a plain
// non-negative integer of at most 18 digits (no sign, fraction, exponent
// or leading zero), and returns it and the rest.
func scanUint(p []byte) (int64, []byte, bool) {
	i := 0
	var n int64
	for i < len(p) && i < 19 && p[i] >= '0' && p[i] <= '9' {
		n = n*10 + int64(p[i]-'0')
		i++
	}
	switch {
	case i == 0, i > 18, i > 1 && p[0] == '0':
		return 0, p, false
	case i < len(p) && (p[i] == '.' || p[i] == 'e' || p[i] == 'E' || (p[i] >= '0' && p[i] <= '9')):
		return 0, p, false
	}
	return n, p[i:], true
}

func (f *Frame) validate() error {
	switch f.Type {
	case TypeHello:
		if f.Capabilities == nil {
			return errors.New("capabilities missing")
		}
		if f.Capabilities.MaxConcurrent < 0 || f.Capabilities.MaxConcurrent > maxLanes {
			return fmt.Errorf("max_concurrent %d out of range 0..%d", f.Capabilities.MaxConcurrent, maxLanes)
		}
		if f.LanIP != "" && net.ParseIP(f.LanIP) == nil {
			return fmt.Errorf("lan_ip %q is not an IP address", f.LanIP)
		}
		if err := checkURLs(f.Capabilities.LaneURLs); err != nil {
			return err
		}
		if err := checkModes(f.Capabilities.Modes); err != nil {
			return err
		}
		if err := checkLaneStates(f.LaneStates); err != nil {
			return err
		}
		if err := checkHealth(f.LaneHealth, f.Stats); err != nil {
			return err
		}
		if err := checkRunning(f.Running); err != nil {
			return err
		}
		if err := checkHubURLs(f.HubURLs); err != nil {
			return err
		}
	case TypeRelink:
		if f.HubURL == "" {
			return errors.New("hub_url missing")
		}
		if len(f.HubURL) > maxURLBytes {
			return fmt.Errorf("hub_url has %d bytes, limit %d", len(f.HubURL), maxURLBytes)
		}
	case TypeHeartbeat:
		if f.Stats == nil {
			return errors.New("stats missing")
		}
		if len(f.LaneURLs) > maxLanes {
			return fmt.Errorf("lane_urls has %d entries, limit %d", len(f.LaneURLs), maxLanes)
		}
		if err := checkURLs(f.LaneURLs); err != nil {
			return err
		}
		if err := checkLaneStates(f.LaneStates); err != nil {
			return err
		}
		if err := checkHealth(f.LaneHealth, f.Stats); err != nil {
			return err
		}
		if err := checkRunning(f.Running); err != nil {
			return err
		}
	case TypeJobStarted, TypeJobDone, TypeJobFailed, TypeAssignJob, TypeCancelJob, TypeJobAck:
		if f.JobID == "" {
			return errors.New("job_id missing")
		}
		if f.Type == TypeJobFailed && !slices.Contains(persistence.Reasons, f.Reason) {
			return fmt.Errorf("reason %q is not one of %s", f.Reason, strings.Join(persistence.Reasons, ", "))
		}
		if len(f.Error) > MaxErrorBytes {
			return fmt.Errorf("error has %d bytes, limit %d", len(f.Error), MaxErrorBytes)
		}
		if len(f.Lane) > maxURLBytes {
			return fmt.Errorf("lane has %d bytes, limit %d", len(f.Lane), maxURLBytes)
		}
	case TypeJobQuery, TypeJobStatus:
		if f.JobID == "" {
			return errors.New("job_id missing")
		}
		if f.Attempt < 1 {
			return fmt.Errorf("attempt %d: must be 1 or more", f.Attempt)
		}
		if f.Type == TypeJobStatus && f.State != JobStateRunning && f.State != JobStateUnknown {
			return fmt.Errorf("state %q is not one of %s, %s", f.State, JobStateRunning, JobStateUnknown)
		}
	case TypeJobLog:
		if f.JobID == "" {
			return errors.New("job_id missing")
		}
		if f.Seq < 0 {
			return fmt.Errorf("seq %d is negative", f.Seq)
		}
	case TypeSessionResult, TypeSessionCommand:
		if f.SessionID == "" {
			return errors.New("session_id missing")
		}
	case TypeTunnelOpen:
		if f.SessionID == "" {
			return errors.New("session_id missing")
		}
		if s, ok := TunnelSession(f.TunnelID); !ok || s != f.SessionID {
			return fmt.Errorf("tunnel_id %q is not a tunnel of session %q", f.TunnelID, f.SessionID)
		}
		if f.Target != "" && !ValidTarget(f.Target) {
			return fmt.Errorf("target %q: use 1-%d of A-Z a-z 0-9 . _ -", f.Target, maxTargetBytes)
		}
	case TypeLiveOpen:
		return checkLiveOpen(f)
	case TypeLaneSkip:
		return checkLaneSkips(f.SkipLanes)
	}
	return nil
}

// LaneSkip is one lane of a lane_skip frame: its index and why placement
// skips it (one of persistence.HealthSkip*; a worker takes any reason of
// MaxSkipReasonBytes of a-z 0-9 _, so that a reason added later still
// steers an older worker off the lane).
type LaneSkip struct {
	Lane   int    `json:"lane"`
	Reason string `json:"reason"`
}

// MaxSkipReasonBytes bounds a lane_skip entry's reason.
const MaxSkipReasonBytes = 64

// checkLaneSkips bounds a lane_skip list: at most maxLanes entries, lanes
// ascending (so none twice) within 0..maxLanes-1, each with a reason.
func checkLaneSkips(skips []LaneSkip) error {
	if len(skips) > maxLanes {
		return fmt.Errorf("skip_lanes has %d entries, limit %d", len(skips), maxLanes)
	}
	for i, s := range skips {
		if s.Lane < 0 || s.Lane >= maxLanes {
			return fmt.Errorf("skip_lanes[%d].lane %d out of range 0..%d", i, s.Lane, maxLanes-1)
		}
		if i > 0 && s.Lane <= skips[i-1].Lane {
			return fmt.Errorf("skip_lanes[%d].lane %d: lanes must be ascending, each once", i, s.Lane)
		}
		if !validSkipReason(s.Reason) {
			return fmt.Errorf("skip_lanes[%d].reason %.80q: use 1-%d of a-z 0-9 _", i, s.Reason, MaxSkipReasonBytes)
		}
	}
	return nil
}

func validSkipReason(r string) bool {
	if r == "" || len(r) > MaxSkipReasonBytes {
		return false
	}
	for i := 0; i < len(r); i++ {
		if c := r[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// checkURLs bounds the lane addresses a worker reports.
func checkURLs(urls []string) error { return checkURLList("lane_urls", urls, maxLanes) }

// checkHubURLs bounds hello's hub_urls: at most MaxHubURLs, each at most
// maxURLBytes. What they say is only ever compared with the hubs' own
// addresses, never dialled by the hub.
func checkHubURLs(urls []string) error { return checkURLList("hub_urls", urls, MaxHubURLs) }

// checkURLList bounds the list field of a frame: at most limit entries,
// each at most maxURLBytes.
func checkURLList(field string, urls []string, limit int) error {
	if len(urls) > limit {
		return fmt.Errorf("%s has %d entries, limit %d", field, len(urls), limit)
	}
	for i, u := range urls {
		if len(u) > maxURLBytes {
			return fmt.Errorf("%s[%d] has %d bytes, limit %d", field, i, len(u), maxURLBytes)
		}
	}
	return nil
}

// checkLaneStates bounds the lane states a worker reports: no more than a
// worker may have lanes, each one of LaneStates.
func checkLaneStates(states []string) error {
	if len(states) > maxLanes {
		return fmt.Errorf("lane_states has %d entries, limit %d", len(states), maxLanes)
	}
	for i, s := range states {
		if !IsLaneState(s) {
			return fmt.Errorf("lane_states[%d] %q is not one of %s", i, TruncateError(s), strings.Join(LaneStates, ", "))
		}
	}
	return nil
}

// checkRunning bounds a running list: at most maxLanes entries, each a job
// id or a session's slot, ids as the hub hands them out (credential.ValidID:
// 1–64 of A-Z a-z 0-9 _ -). What the worker may hold of it is the hub's
// to decide: it counts only jobs the job store says the worker holds.
func checkRunning(ids []string) error {
	if len(ids) > maxLanes {
		return fmt.Errorf("running has %d entries, limit %d", len(ids), maxLanes)
	}
	for i, id := range ids {
		if !credential.ValidID(strings.TrimPrefix(id, SessionSlotPrefix)) {
			return fmt.Errorf("running[%d] %.80q is not a job id or a session slot", i, id)
		}
	}
	return nil
}

// JobAckFrame renders Frame{Type: TypeJobAck, JobID: jobID, Attempt:
// attempt}.Encode()'s JSON: an ack goes out for every finished job, and
// encoding the whole Frame by reflection for three fields is most of the
// link's encoding work.
func JobAckFrame(jobID string, attempt int) []byte {
	b := make([]byte, 0, 48+len(jobID))
	b = append(b, `{"type":"job_ack"`...)
	if jobID != "" {
		b = append(b, `,"job_id":`...)
		b = jsonenc.AppendString(b, jobID)
	}
	if attempt != 0 {
		b = append(b, `,"attempt":`...)
		b = strconv.AppendInt(b, int64(attempt), 10)
	}
	return append(b, '}')
}

// Encode renders a frame for the wire.
func (f Frame) Encode() ([]byte, error) {
	b, err := json.Marshal(f)
	if err != nil {
		return nil, fmt.Errorf("encode %s frame: %w", f.Type, err)
	}
	return b, nil
}
