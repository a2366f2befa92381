package supervise

import (
	"slices"
	"sync"
	"time"
)

// A one-off timer of at least wheelMin goes on the process's timer wheel
// instead of the runtime's timer heap. A job's life arms such timers —
// its deadline, its queued timeout, the audit of its assignment, the
// sweep of its calls, its lane's write — and nearly every one is stopped
// long before it would fire. On the runtime's heap each is a time.Timer
// allocated, pushed and sifted in under its P's lock, and taken out
// again; on the wheel, arming is linking the timer into the slot of its
// tick and stopping is unlinking it: no allocation beyond the timer's
// own, no heap. The price is resolution: a wheel timer fires up to
// wheelTick late, which a timer of a second or more does not notice.
// What nearly always fires stays on the runtime's heap, where each fires
// at its own time: an idle timeout (a finished job grain's passivation —
// on the wheel, a tick's worth of sends to cold mailboxes at once cost
// more than the arming saved, measured) and a repeating timer; so does
// a shorter one (a push round, a retry backoff, an activation's first
// wait).
const (
	wheelMin   = time.Second
	wheelTick  = 10 * time.Millisecond
	wheelSlots = 512 // one turn: 5.12 s; a longer timer waits out its turns in its slot
)

// wheel is a hashed timing wheel: slot i holds the timers due at the
// ticks i, i+wheelSlots, … It turns on a runtime timer of its own, armed
// a tick ahead while it holds a timer and left unarmed when it holds
// none (the next timer arms it): no goroutine of its own outlives its
// turn, and an idle process pays nothing for it.
type wheel struct {
	mu    sync.Mutex
	start time.Time // tick 0
	done  int64     // the last tick whose slot was fired
	slots [wheelSlots]*timer
	n     int         // timers on the wheel
	ticks *time.Timer // the turn's timer
	armed bool        // ticks is armed (or its turn runs)
	due   []*timer    // a turn's timers to fire, kept for the next turn (turns never overlap)
}

// timerWheel is the process's wheel: every actor system's timers share it.
var timerWheel = &wheel{start: time.Now()}

// tickAt is the tick a timer due at t fires at: the first tick not
// before t.
func (w *wheel) tickAt(t time.Time) int64 {
	return int64((t.Sub(w.start) + wheelTick - 1) / wheelTick)
}

// add puts e on the wheel to fire after d. The caller holds e's set's
// lock.
func (w *wheel) add(e *timer, d time.Duration) { w.addAt(e, time.Now().Add(d)) }

// addAt puts e on the wheel to fire at the first tick not before at.
func (w *wheel) addAt(e *timer, at time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	tick := max(w.tickAt(at), w.done+1)
	e.due = tick
	slot := &w.slots[tick%wheelSlots]
	e.wprev, e.wnext = nil, *slot
	if *slot != nil {
		(*slot).wprev = e
	}
	*slot = e
	e.wheeled = true
	w.n++
	if !w.armed {
		w.armed = true
		if w.ticks == nil {
			w.ticks = time.AfterFunc(wheelTick, w.step)
		} else {
			w.ticks.Reset(wheelTick)
		}
	}
}

// remove takes e off the wheel if it is still there (not fired, or taken
// by a turn of the wheel that will find it stopped). The caller holds
// e's set's lock.
func (w *wheel) remove(e *timer) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if e.wheeled {
		w.unlinkLocked(e)
	}
}

func (w *wheel) unlinkLocked(e *timer) {
	if e.wprev != nil {
		e.wprev.wnext = e.wnext
	} else {
		w.slots[e.due%wheelSlots] = e.wnext
	}
	if e.wnext != nil {
		e.wnext.wprev = e.wprev
	}
	e.wprev, e.wnext, e.wheeled = nil, nil, false
	w.n--
}

// step is one turn of the wheel: it fires what is due, then arms the
// next turn if the wheel still holds a timer. The next turn is armed
// only after this one's fires, so turns never overlap.
func (w *wheel) step() {
	w.mu.Lock()
	due := w.turn(time.Now(), w.due[:0])
	w.mu.Unlock()
	for _, e := range due {
		e.fire()
	}
	clear(due)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.due = due
	if w.n == 0 {
		w.armed = false
		return
	}
	w.ticks.Reset(wheelTick)
}

// turn takes the timers due by now off the wheel, appended to due in
// tick order. The caller holds the wheel's lock.
func (w *wheel) turn(now time.Time, due []*timer) []*timer {
	reached := int64(now.Sub(w.start) / wheelTick)
	// A long stall (the process stopped) is caught up in one turn of the
	// wheel: each slot is visited once, and all that is due in it fires.
	if reached-w.done > wheelSlots {
		w.done = reached - wheelSlots
	}
	for tick := w.done + 1; tick <= reached; tick++ {
		from := len(due)
		for e := w.slots[tick%wheelSlots]; e != nil; {
			next := e.wnext
			if e.due <= reached {
				w.unlinkLocked(e)
				due = append(due, e)
			}
			e = next
		}
		// A slot lists its newest first: timers due at one tick fire in
		// the order they were armed.
		slices.Reverse(due[from:])
	}
	w.done = max(w.done, reached)
	return due
}
