package messages

// A Called message is a request an actor sends as a call
// (supervise.Timers.Call): its call id names the caller's pending call,
// and the callee's Reply carries it back (Reply.call), so the answer is a
// plain message to the caller instead of a reply to a future. A request
// without an id (0) is answered as before, to its sender.
type Called interface {
	GetCall() uint64
	// SetCall sets the id; only before the message is sent: a sent
	// message is the callee's to read.
	SetCall(id uint64)
}

// SetCall sets the call id (Called).
func (x *WorkerAssign) SetCall(id uint64) { x.Call = id }

// SetCall sets the call id (Called).
func (x *WorkerConnected) SetCall(id uint64) { x.Call = id }

// SetCall sets the call id (Called).
func (x *JobFinished) SetCall(id uint64) { x.Call = id }

// SetCall sets the call id (Called).
func (x *ConnSend) SetCall(id uint64) { x.Call = id }

// SetCall sets the call id (Called).
func (x *SchedPickSession) SetCall(id uint64) { x.Call = id }

// Answering is r as the answer to call: r itself when it carries that
// id, else a copy that does. One reply may answer several callers (the
// waiters of one assignment), and a message once sent is never written
// again.
func (r *Reply) Answering(call uint64) *Reply {
	if r.Call == call {
		return r
	}
	return &Reply{Ok: r.Ok, Code: r.Code, Message: r.Message, Json: r.Json, PlacedReported: r.PlacedReported, Call: call}
}
