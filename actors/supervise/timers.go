package supervise

import (
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// Timers are the timers of one actor incarnation. protoactor's timers are
// plain time.AfterFunc: they outlive the actor that armed them and, after a
// restart (same PID, fresh struct), fire into the next incarnation, which
// re-arms its own from the store — so every tick would come twice. Here
// each timer is tracked from arming until it fires or is stopped, and the
// actor calls StopAll in Stopping and Restarting. A one-off timer of a
// second or more runs on the process's timer wheel (wheel.go); a shorter
// one, a repeating one and an idle timeout on the runtime's heap. The
// incarnation's calls (Call) live here too: they end with it.
type Timers struct {
	kind string
	self *actor.PID
	send func(pid *actor.PID, msg interface{})
	// The counts this set moves (its kind's, process-wide and in its actor
	// system), looked up once: an actor arms a timer on most turns.
	kindCount, sysCount *atomic.Int64

	mu      sync.Mutex
	live    timer // sentinel of the ring of armed timers
	stopped bool  // StopAll ran: the incarnation is gone

	// The calls waiting for their answer (Call), and the one sweep timer
	// that times them out: actor-confined, read and written on its turns.
	calls     map[uint64]pendingCall
	sweepStop Stop
	sweepAt   time.Time
}

// timer is one armed timer, on its set's ring from arming until it fires
// (once) or is stopped. One struct carries what a closure chain and a
// map entry carried: a job's life arms several timers, and each closure,
// captured variable and map slot was an allocation of its own.
type timer struct {
	set        *Timers
	tm         *time.Timer // a runtime timer; nil for one on the wheel
	pid        *actor.PID
	msg        interface{}
	every      time.Duration // >0: repeats
	prev, next *timer        // the set's ring; nil once off it

	// On the timer wheel (wheel.go), under the wheel's lock: its slot's
	// list, and the tick it fires at.
	wheeled      bool
	due          int64
	wprev, wnext *timer
}

// Stop cancels one timer; safe to call after it fired, and twice.
type Stop func()

// liveTimers counts armed timers per actor kind, process-wide: what a
// restart test reads, and what the live-timers gauge reports.
var liveTimers sync.Map // kind → *atomic.Int64

func liveCounter(kind string) *atomic.Int64 {
	if c, ok := liveTimers.Load(kind); ok {
		return c.(*atomic.Int64)
	}
	c, _ := liveTimers.LoadOrStore(kind, new(atomic.Int64))
	return c.(*atomic.Int64)
}

// LiveTimers reports how many timers of actors of kind are armed now, in
// this process.
func LiveTimers(kind string) int64 { return liveCounter(kind).Load() }

// systemKind keys the per-actor-system counts.
type systemKind struct {
	sys  *actor.ActorSystem
	kind string
}

// liveBySystem counts armed timers per actor system and kind: a test with
// several hubs in one process (or the leftovers of an earlier test's
// stopped hub, whose one-shot timers still fire) reads its own hub's.
var liveBySystem sync.Map // systemKind → *atomic.Int64

func systemCounter(sys *actor.ActorSystem, kind string) *atomic.Int64 {
	k := systemKind{sys, kind}
	if c, ok := liveBySystem.Load(k); ok {
		return c.(*atomic.Int64)
	}
	c, _ := liveBySystem.LoadOrStore(k, new(atomic.Int64))
	return c.(*atomic.Int64)
}

// LiveTimersIn reports how many timers of actors of kind in actor system
// sys are armed now.
func LiveTimersIn(sys *actor.ActorSystem, kind string) int64 {
	return systemCounter(sys, kind).Load()
}

// count moves the live counts of t's kind by d.
func (t *Timers) count(d int64) {
	t.kindCount.Add(d)
	t.sysCount.Add(d)
}

// NewTimers returns the timer set of the actor whose context this is; kind
// names it in LiveTimers.
func NewTimers(ctx actor.Context, kind string) *Timers {
	root := ctx.ActorSystem().Root
	t := &Timers{kind: kind, self: ctx.Self(), send: func(pid *actor.PID, msg interface{}) { root.Send(pid, msg) },
		kindCount: liveCounter(kind), sysCount: systemCounter(ctx.ActorSystem(), kind)}
	t.live.prev, t.live.next = &t.live, &t.live
	return t
}

// After sends msg to the actor itself once, after d.
func (t *Timers) After(d time.Duration, msg interface{}) Stop {
	return t.arm(d, t.self, msg, 0, d >= wheelMin)
}

// exactly is After on the runtime's timer heap whatever d: for a timer
// that nearly always fires (an idle timeout), which the wheel would fire
// in bursts of a tick's worth.
func (t *Timers) exactly(d time.Duration, msg interface{}) Stop {
	return t.arm(d, t.self, msg, 0, false)
}

// SendAfter sends msg to pid once, after d.
func (t *Timers) SendAfter(d time.Duration, pid *actor.PID, msg interface{}) Stop {
	return t.arm(d, pid, msg, 0, d >= wheelMin)
}

// Every sends msg to the actor itself every d, the first time after d.
func (t *Timers) Every(d time.Duration, msg interface{}) Stop { return t.arm(d, t.self, msg, d, false) }

// noStop is the Stop of a timer refused because its set stopped.
func noStop() {}

// arm starts one timer: msg to pid after d, then every `every` if that is
// above zero; on the timer wheel or the runtime's heap.
func (t *Timers) arm(d time.Duration, pid *actor.PID, msg interface{}, every time.Duration, onWheel bool) Stop {
	e := &timer{set: t, pid: pid, msg: msg, every: every}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return noStop
	}
	if onWheel {
		timerWheel.add(e, d)
	} else {
		e.tm = time.AfterFunc(d, e.fire)
	}
	e.prev, e.next = t.live.prev, &t.live
	t.live.prev.next = e
	t.live.prev = e
	t.count(1)
	return e.stop
}

// fire sends the timer's message under the set's lock, so a StopAll that
// returned has no tick still on its way to the mailbox (a send is a
// mailbox post: it never waits).
func (e *timer) fire() {
	t := e.set
	t.mu.Lock()
	defer t.mu.Unlock()
	if e.next == nil {
		return // stopped meanwhile
	}
	if e.every > 0 {
		e.tm.Reset(e.every) // a repeating timer is always a runtime one
	} else {
		t.dropLocked(e)
	}
	t.send(e.pid, e.msg)
}

// stop is the timer's Stop: safe after it fired, and twice.
func (e *timer) stop() {
	t := e.set
	t.mu.Lock()
	defer t.mu.Unlock()
	if e.next != nil {
		e.cancel()
		t.dropLocked(e)
	}
}

// cancel keeps the timer from firing (a fire already on its way finds it
// off the set's ring). The caller holds the set's lock.
func (e *timer) cancel() {
	if e.tm != nil {
		e.tm.Stop()
		return
	}
	timerWheel.remove(e)
}

// StopAll cancels every timer of the set and refuses new ones, and drops
// the calls waiting for an answer: the actor is stopping or restarting.
// Safe on a nil set (an actor stopped before it started).
func (t *Timers) StopAll() {
	if t == nil {
		return
	}
	t.calls = nil // on the actor's turn, like every use of it
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stopped = true
	for e := t.live.next; e != &t.live; e = t.live.next {
		e.cancel()
		t.dropLocked(e)
	}
}

// Reenter is ctx.ReenterAfter for this incarnation: cont runs on the
// actor's turn when fut completes, unless the incarnation has stopped or
// restarted meanwhile (its state is gone; the next one rebuilds from the
// store). A continuation runs outside the receiver middleware, so a panic
// in it is re-raised with its stack in the reason: protoactor logs the
// reason and restarts the actor, and the restart is counted.
func (t *Timers) Reenter(ctx actor.Context, fut actor.Future, cont func(res interface{}, err error)) {
	ctx.ReenterAfter(fut, func(res interface{}, err error) {
		if t.Stopped() {
			return
		}
		defer func() {
			if r := recover(); r != nil {
				panic(fmt.Sprintf("%s: panic in a continuation: %v\n%s", t.kind, r, debug.Stack()))
			}
		}()
		cont(res, err)
	})
}

// Stopped reports whether StopAll ran: a continuation of a request that
// the incarnation made checks it, since its state is gone.
func (t *Timers) Stopped() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.stopped
}

// dropLocked takes e off the ring of armed timers.
func (t *Timers) dropLocked(e *timer) {
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
	t.count(-1)
}
