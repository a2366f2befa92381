package supervise

import (
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/require"
)

type tick struct{ n int }

// timedActor arms timers on start and reports each tick on got.
type timedActor struct {
	got    chan int
	timers *Timers
	ready  chan *Timers
}

func (a *timedActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		a.timers = NewTimers(ctx, "test_timed")
		a.ready <- a.timers
	case *actor.Stopping:
		a.timers.StopAll()
	case *tick:
		a.got <- m.n
	}
}

func TestTimersAreOwnedByTheirIncarnation(t *testing.T) {
	system := actor.NewActorSystem()
	got, ready := make(chan int, 64), make(chan *Timers, 1)
	pid := system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return &timedActor{got: got, ready: ready} }))
	ts := <-ready
	base := LiveTimers("test_timed")

	once := ts.After(10*time.Millisecond, &tick{n: 1})
	require.Equal(t, base+1, LiveTimers("test_timed"))
	require.Equal(t, 1, <-got)
	require.Eventually(t, func() bool { return LiveTimers("test_timed") == base }, time.Second, time.Millisecond,
		"a timer that fired is not live")
	once() // stopping a fired timer is harmless

	stopped := ts.After(time.Hour, &tick{n: 2})
	stopped()
	stopped()
	require.Equal(t, base, LiveTimers("test_timed"))

	ts.Every(5*time.Millisecond, &tick{n: 3})
	for i := 0; i < 3; i++ {
		require.Equal(t, 3, <-got)
	}
	require.Equal(t, base+1, LiveTimers("test_timed"), "a repeating timer is one timer")

	ts.After(time.Hour, &tick{n: 4})
	require.NoError(t, system.Root.StopFuture(pid).Wait())
	require.Equal(t, base, LiveTimers("test_timed"), "stopping the actor stops its timers")
	require.True(t, ts.Stopped())
	ts.After(time.Millisecond, &tick{n: 5}) // refused: the incarnation is gone
	require.Equal(t, base, LiveTimers("test_timed"))
	for len(got) > 0 {
		require.Equal(t, 3, <-got, "only ticks of the repeating timer from before the stop")
	}
	time.Sleep(20 * time.Millisecond)
	require.Empty(t, got, "no tick after the stop")
}

// reenterActor asks a silent peer and records whether its continuation ran.
type reenterActor struct {
	timers *Timers
	ran    chan struct{}
	ready  chan *Timers
}

type ask struct{ peer *actor.PID }

func (a *reenterActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		a.timers = NewTimers(ctx, "test_reenter")
		a.ready <- a.timers
	case *ask:
		a.timers.Reenter(ctx, ctx.RequestFuture(m.peer, "ping", 50*time.Millisecond), func(interface{}, error) {
			close(a.ran)
		})
	}
}

func TestReenterDropsTheContinuationOfAStoppedIncarnation(t *testing.T) {
	system := actor.NewActorSystem()
	silent := system.Root.Spawn(actor.PropsFromFunc(func(actor.Context) {}))
	for _, stop := range []bool{false, true} {
		ran, ready := make(chan struct{}), make(chan *Timers, 1)
		pid := system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return &reenterActor{ran: ran, ready: ready} }))
		ts := <-ready
		system.Root.Send(pid, &ask{peer: silent})
		if stop {
			time.Sleep(10 * time.Millisecond) // the request is out
			ts.StopAll()                      // as Stopping or Restarting would
		}
		select {
		case <-ran:
			require.False(t, stop, "a stopped incarnation's continuation must not run")
		case <-time.After(500 * time.Millisecond):
			require.True(t, stop, "the continuation runs once the request times out")
		}
	}
}

// TestTimersRingUnderChurn: timers armed, fired and stopped (twice) in
// any interleaving keep the set true: each short one fires once, the
// stopped ones never, the count is what is left, and StopAll empties it.
func TestTimersRingUnderChurn(t *testing.T) {
	system := actor.NewActorSystem()
	got, ready := make(chan int, 4096), make(chan *Timers, 1)
	pid := system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return &timedActor{got: got, ready: ready} }))
	ts := <-ready
	base := LiveTimersIn(system, "test_timed")

	const n = 500 // hour-long timers, and as many short ones among them
	long := make([]Stop, 0, n)
	for i := 0; i < n; i++ {
		long = append(long, ts.After(time.Hour, &tick{n: -1}))
		// Short ones fire (and leave the ring) while others are armed and stopped.
		ts.After(time.Duration(i%4)*time.Millisecond, &tick{n: i})
		if i%2 == 1 {
			long[i-1]()
			long[i-1]()
		}
	}
	fired := map[int]bool{}
	for len(fired) < n {
		select {
		case k := <-got:
			require.NotEqual(t, -1, k, "a stopped or hour-long timer fired")
			require.False(t, fired[k], "timer %d fired twice", k)
			fired[k] = true
		case <-time.After(5 * time.Second):
			t.Fatalf("%d of %d short timers fired", len(fired), n)
		}
	}
	require.Eventually(t, func() bool { return LiveTimersIn(system, "test_timed") == base+n/2 }, time.Second, time.Millisecond,
		"only the hour-long ones not stopped are live")

	require.NoError(t, system.Root.StopFuture(pid).Wait())
	require.Equal(t, base, LiveTimersIn(system, "test_timed"), "StopAll empties the ring")
	for _, stop := range long {
		stop() // after StopAll: harmless
	}
	require.Equal(t, base, LiveTimersIn(system, "test_timed"))
	require.Empty(t, got, "no tick after the stop")
}
