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
