package supervise

import (
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// callIDs numbers calls process-wide. An id is never used twice, so the
// late answer to a call of an incarnation that restarted (same PID, fresh
// Timers) never matches a call of the next one.
var callIDs atomic.Uint64

// NewCallID is a fresh call id; never 0, which means "no call".
func NewCallID() uint64 { return callIDs.Add(1) }

// pendingCall is one call waiting for its answer.
type pendingCall struct {
	deadline time.Time
	cont     func(res interface{}, err error)
}

// CallSweep is the tick of an actor's pending calls: the actor hands it to
// its Timers' Sweep, which times out the calls past their deadline.
type CallSweep struct{}

// Call sends msg to pid as a call of this incarnation, with the actor as
// its sender: cont runs on a turn of the actor with the answer the actor
// hands to Answer under id, or with actor.ErrTimeout when none came within
// timeout. msg carries id for its callee to send back with the answer
// (messages.Called). The answer is a plain message to the actor itself:
// unlike a request through a future (Reenter), a call spawns and registers
// no future process, arms no timer of its own — one sweep timer, armed
// while any call waits, serves all of an actor's calls — and takes no
// system message to resume. Like a continuation through Reenter, cont is
// dropped when the incarnation stops or restarts first: its state is
// gone.
func (t *Timers) Call(ctx actor.Context, pid *actor.PID, msg interface{}, id uint64, timeout time.Duration, cont func(res interface{}, err error)) {
	if t.Stopped() {
		return
	}
	if t.calls == nil {
		t.calls = make(map[uint64]pendingCall)
	}
	due := time.Now().Add(timeout)
	t.calls[id] = pendingCall{deadline: due, cont: cont}
	ctx.Request(pid, msg)
	t.armSweep(due)
}

// Answer runs the continuation of this incarnation's call id with res, on
// the current turn; false when no call waits under id (0, an answer that
// came after its call timed out, or one to an earlier incarnation).
func (t *Timers) Answer(id uint64, res interface{}) bool {
	c, ok := t.calls[id] // ids are never 0
	if !ok {
		return false
	}
	delete(t.calls, id)
	if len(t.calls) == 0 {
		t.stopSweep() // armed only while a call waits
	}
	c.cont(res, nil)
	return true
}

// Pending is how many calls of this incarnation wait for their answer.
func (t *Timers) Pending() int { return len(t.calls) }

// Sweep times out the calls past their deadline (the actor received a
// CallSweep) and arms the sweep of the next.
func (t *Timers) Sweep() {
	t.sweepStop, t.sweepAt = nil, time.Time{} // this is its tick
	now := time.Now()
	var due []pendingCall
	for id, c := range t.calls {
		if !now.Before(c.deadline) {
			due = append(due, c)
			delete(t.calls, id)
		}
	}
	for _, c := range due {
		c.cont(nil, actor.ErrTimeout) // may make a new call (a retry)
	}
	var next time.Time
	for _, c := range t.calls {
		if next.IsZero() || c.deadline.Before(next) {
			next = c.deadline
		}
	}
	if !next.IsZero() {
		t.armSweep(next)
	}
}

// armSweep makes sure a sweep comes by due. The armed one stays while it
// comes no later: the calls of a busy actor share one timer, re-armed
// when it fires or the last call is answered, not one per call.
func (t *Timers) armSweep(due time.Time) {
	if t.sweepStop != nil && !t.sweepAt.After(due) {
		return
	}
	t.stopSweep()
	t.sweepAt = due
	t.sweepStop = t.After(max(time.Until(due), 0), &CallSweep{})
}

// stopSweep stops the armed sweep, if any.
func (t *Timers) stopSweep() {
	if t.sweepStop != nil {
		t.sweepStop()
		t.sweepStop, t.sweepAt = nil, time.Time{}
	}
}
