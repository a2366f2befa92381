package messages

import "fmt"

// Code is the reason a grain gives for refusing a request, carried in
// Reply.Code across hubs. Callers branch on it (the API maps it onto HTTP
// statuses), so each code is declared once here.
type Code string

// The reply codes of the hub's grains and connections.
const (
	CodeInternal      Code = "internal"        // the actor panicked while handling the request
	CodeUnavailable   Code = "unavailable"     // a store could not be read or written
	CodeStore         Code = "store"           // a job store write failed
	CodeNotFound      Code = "not_found"       // no such job, worker or session
	CodeConflict      Code = "conflict"        // the state forbids it (already final, exists)
	CodeStale         Code = "stale"           // a report of an attempt that is not current
	CodeNotConnected  Code = "not_connected"   // the worker has no live link
	CodeNotActive     Code = "not_active"      // the worker is drained or on standby
	CodeFull          Code = "full"            // every slot of the worker is taken
	CodeUnconfirmed   Code = "unconfirmed"     // the link did not confirm the frame in time
	CodeClosing       Code = "closing"         // the link is closing
	CodeNotMember     Code = "not_member"      // a link refused an assignment from a hub outside its cluster
	CodeBadHello      Code = "bad_hello"       // the hello frame does not decode
	CodeSuperseded    Code = "superseded"      // a newer link of the worker exists
	CodeIDTaken       Code = "id_taken"        // the worker's link is alive: a second one is refused
	CodeBadStatus     Code = "bad_status"      // not a worker status
	CodeOutOfRange    Code = "out_of_range"    // a value outside what is allowed (a cap above the worker's lanes)
	CodeNoCapacity    Code = "no_capacity"     // no worker has a free lane
	CodeClosed        Code = "closed"          // the session is closed
	CodeTimeout       Code = "timeout"         // the worker did not answer in time
	CodeBadCommand    Code = "bad_command"     // a session command that cannot be sent
	CodeCommandFailed Code = "command_failed"  // the worker ran the command and it failed
	CodeTooMany       Code = "too_many"        // a count bound was reached (limits.cdp_tunnels_per_session)
	CodeNotApproved   Code = "not_approved"    // the worker awaits an operator's approval (auth.worker_approval)
	CodeNotHolder     Code = "not_holder"      // a report names work the reporting worker does not hold
	CodeProfileInUse  Code = "profile_in_use"  // another job or session holds the profile (README "Profiles and affinity")
	CodeFrameTooLarge Code = "frame_too_large" // a link frame over messages.MaxFrameBytes; the link closes after it
)

// Is reports whether r is a refusal with code c.
func (c Code) Is(r *Reply) bool { return r != nil && !r.Ok && r.Code == string(c) }

// Fail is a refusal with code c.
func Fail(c Code, format string, args ...any) *Reply {
	return &Reply{Ok: false, Code: string(c), Message: fmt.Sprintf(format, args...)}
}
