package supervise

import "time"

// Idle is an actor's receive timeout, kept by the actor itself. protoactor's
// SetReceiveTimeout is not safe to use: its timer callback runs on the
// timer's goroutine and clears the context's timer field (CancelReceiveTimeout)
// while the mailbox goroutine may be reading that field in the middle of a
// turn — a data race the race detector reports. Here the timer is one of
// the incarnation's Timers and its tick is a message like any other: the
// actor's turn alone reads and writes the Idle.
//
// One timer stays armed while the actor is busy: a turn only notes its time
// (Skip), and a tick that finds a turn since re-arms for what is left, so a
// busy actor costs a clock read per message, not a timer per message.
type Idle struct {
	timers *Timers
	after  time.Duration // 0: off
	last   time.Time     // the last turn: idle time counts from it
	due    time.Time     // when the armed tick fires; zero with none armed
	stop   Stop
	seq    uint64 // the armed tick's; a tick of another is stale
}

// IdleTimeout is the tick of an Idle. It reaches the actor's own handling
// (past Skip) only when the actor has had no other message for the idle
// duration: the actor is idle. The Idle is off after it, as protoactor's
// receive timeout is after it fires; Set arms it again.
type IdleTimeout struct {
	idle *Idle
	seq  uint64
}

// NewIdle returns the idle timeout of the incarnation whose timers these
// are; it is off until Set.
func NewIdle(t *Timers) *Idle { return &Idle{timers: t} }

// Set arms the idle timeout: an IdleTimeout once the actor has had no
// message for d. Zero or less turns it off. Called during a turn, which
// counts as the last message.
func (i *Idle) Set(d time.Duration) {
	if d <= 0 {
		i.Cancel()
		return
	}
	now := time.Now()
	i.after, i.last = d, now
	if i.stop != nil && !i.due.After(now.Add(d)) {
		return // the armed tick comes no later: it re-arms for the rest
	}
	i.arm(now, d)
}

// Cancel turns the idle timeout off.
func (i *Idle) Cancel() {
	i.after = 0
	i.disarm()
}

// Skip is called at the top of every turn with its message: true when the
// actor is to skip it — a tick that is stale, or finds a message since
// (then it re-arms for the rest). A due tick is not skipped: the actor
// handles its IdleTimeout as idle. Any other message restarts the idle
// time. Safe on a nil Idle (an actor before its Started).
func (i *Idle) Skip(msg interface{}) bool {
	if i == nil {
		return false
	}
	t, tick := msg.(*IdleTimeout)
	if !tick {
		if i.after > 0 {
			i.last = time.Now()
		}
		return false
	}
	if t.idle != i || t.seq != i.seq || i.after <= 0 {
		return true // an earlier incarnation's, cancelled, or re-armed since
	}
	i.stop, i.due = nil, time.Time{} // this tick was the armed one
	now := time.Now()
	if left := i.after - now.Sub(i.last); left > 0 {
		i.arm(now, left)
		return true
	}
	i.after = 0
	return false
}

// arm replaces the armed tick with one after d.
func (i *Idle) arm(now time.Time, d time.Duration) {
	i.disarm()
	i.due = now.Add(d)
	i.stop = i.timers.exactly(d, &IdleTimeout{idle: i, seq: i.seq})
}

// disarm stops the armed tick; one already in the mailbox is made stale.
func (i *Idle) disarm() {
	if i.stop != nil {
		i.stop()
		i.stop = nil
	}
	i.due = time.Time{}
	i.seq++
}
