package supervise

import (
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/require"
)

// stillWheel is a wheel whose turns the test makes (its own timer never
// armed).
func stillWheel(start time.Time) *wheel { return &wheel{start: start, armed: true} }

// turnTo turns w to now and returns the ids of what fired, in order.
func turnTo(w *wheel, now time.Time) []int {
	w.mu.Lock()
	due := w.turn(now, nil)
	w.mu.Unlock()
	ids := make([]int, 0, len(due))
	for _, e := range due {
		ids = append(ids, e.msg.(int))
	}
	return ids
}

func TestWheelFiresEachTimerAtItsTickNeverBefore(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	w := stillWheel(t0)
	// Due times within a turn, beyond one (5.12 s) and several, and two
	// sharing a tick (2 and 5: they fire in the order they were armed);
	// armed out of order.
	at := map[int]time.Duration{1: 1500 * time.Millisecond, 2: 1003 * time.Millisecond, 3: 7 * time.Second,
		4: 12*time.Second + 5*time.Millisecond, 5: 1009 * time.Millisecond, 6: 30 * time.Second}
	for _, id := range []int{3, 5, 1, 6, 2, 4} {
		w.addAt(&timer{msg: id}, t0.Add(at[id]))
	}
	require.Equal(t, 6, w.n)
	fired := map[int]time.Duration{}
	var order []int
	for now := time.Duration(0); now <= 31*time.Second; now += time.Millisecond {
		for _, id := range turnTo(w, t0.Add(now)) {
			require.NotContains(t, fired, id, "a timer fires once")
			require.GreaterOrEqual(t, now, at[id], "timer %d fired before it was due", id)
			require.Less(t, now-at[id], wheelTick, "timer %d fired more than a tick late", id)
			fired[id] = now
			order = append(order, id)
		}
	}
	require.Equal(t, []int{5, 2, 1, 3, 4, 6}, order)
	require.Zero(t, w.n)
}

func TestWheelRemovedTimerNeverFires(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	w := stillWheel(t0)
	var es []*timer
	for i := range 5 {
		e := &timer{msg: i}
		es = append(es, e)
		w.addAt(e, t0.Add(2*time.Second)) // one slot: a list of five
	}
	w.remove(es[0])
	w.remove(es[2])
	w.remove(es[4])
	w.remove(es[2]) // twice is harmless
	require.Equal(t, 2, w.n)
	require.Equal(t, []int{1, 3}, turnTo(w, t0.Add(3*time.Second)))
	w.remove(es[1]) // after it fired: harmless
	require.Zero(t, w.n)
}

// A process stopped for longer than a turn of the wheel: every timer due
// meanwhile fires at the next turn, once, and the later ones keep their
// time.
func TestWheelCatchesUpAfterAStall(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	w := stillWheel(t0)
	for i := range 40 {
		w.addAt(&timer{msg: i}, t0.Add(time.Duration(i+1)*time.Second))
	}
	got := turnTo(w, t0.Add(20*time.Second+time.Millisecond))
	require.Len(t, got, 20)
	require.ElementsMatch(t, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19}, got)
	require.Empty(t, turnTo(w, t0.Add(20500*time.Millisecond)))
	require.Equal(t, []int{20}, turnTo(w, t0.Add(21*time.Second)))
	require.Equal(t, 19, w.n)
}

// TestTimersOnTheWheel: an actor's one-off timers of a second or more
// are the wheel's: they fire once, not before they are due, and a stopped
// one never does; a repeating one beside them keeps the runtime's heap;
// the wheel stops turning once it holds no timer.
func TestTimersOnTheWheel(t *testing.T) {
	system := actor.NewActorSystem()
	got, ready := make(chan int, 64), make(chan *Timers, 1)
	pid := system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return &timedActor{got: got, ready: ready} }))
	ts := <-ready
	onWheel := func() int {
		timerWheel.mu.Lock()
		defer timerWheel.mu.Unlock()
		return timerWheel.n
	}
	before := onWheel()

	began := time.Now()
	stopped := ts.After(time.Second, &tick{n: 1})
	ts.After(time.Second, &tick{n: 2})
	ts.SendAfter(1100*time.Millisecond, pid, &tick{n: 4})
	require.Equal(t, before+3, onWheel())
	stopped()
	require.Equal(t, before+2, onWheel(), "a stopped timer leaves the wheel")
	ts.Every(time.Second, &tick{n: 3})
	ts.After(999*time.Millisecond, &tick{n: 5})
	require.Equal(t, before+2, onWheel(), "repeating and shorter timers are the runtime's")

	seen := map[int]int{}
	for seen[3] < 2 || seen[2] == 0 || seen[4] == 0 || seen[5] == 0 {
		select {
		case n := <-got:
			require.NotEqual(t, 1, n, "a stopped timer fired")
			if n != 5 {
				require.GreaterOrEqual(t, time.Since(began), time.Second, "a timer fired before it was due")
			}
			seen[n]++
		case <-time.After(10 * time.Second):
			t.Fatalf("a timer did not fire: %v", seen)
		}
	}
	require.Equal(t, 1, seen[2], "a one-off timer fires once")
	require.Equal(t, 1, seen[4])
	require.EqualValues(t, 1, LiveTimersIn(system, "test_timed"), "the repeating one stays armed")
	require.NoError(t, system.Root.StopFuture(pid).Wait())
	require.EqualValues(t, 0, LiveTimersIn(system, "test_timed"))
	require.Eventually(t, func() bool {
		timerWheel.mu.Lock()
		defer timerWheel.mu.Unlock()
		return !timerWheel.armed
	}, 5*time.Second, 10*time.Millisecond, "the wheel stops turning once it holds no timer")
}
