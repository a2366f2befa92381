package supervise

import (
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/require"
)

type (
	poke      struct{}
	setIdle   struct{ d time.Duration }
	cancelIdl struct{}
)

// idleActor reports each idle it handles with how long it had been
// without a message then.
type idleActor struct {
	timers *Timers
	idle   *Idle
	last   time.Time
	idles  chan time.Duration
}

func (a *idleActor) Receive(ctx actor.Context) {
	if a.idle.Skip(ctx.Message()) {
		return
	}
	switch m := ctx.Message().(type) {
	case *actor.Started:
		a.timers = NewTimers(ctx, "test_idle")
		a.idle = NewIdle(a.timers)
	case *actor.Stopping:
		a.timers.StopAll()
	case *setIdle:
		a.idle.Set(m.d)
	case *cancelIdl:
		a.idle.Cancel()
	case *IdleTimeout:
		a.idles <- time.Since(a.last)
		return
	}
	a.last = time.Now()
}

func spawnIdle(t *testing.T, system *actor.ActorSystem) (*actor.PID, chan time.Duration) {
	idles := make(chan time.Duration, 16)
	pid := system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return &idleActor{idles: idles} }))
	t.Cleanup(func() { _ = system.Root.StopFuture(pid).Wait() })
	return pid, idles
}

func TestIdleFiresOnceAfterTheLastMessage(t *testing.T) {
	system := actor.NewActorSystem()
	pid, idles := spawnIdle(t, system)
	const d = 40 * time.Millisecond
	system.Root.Send(pid, &setIdle{d: d})
	// Busy for several idle durations: no idle meanwhile.
	for range 12 {
		time.Sleep(d / 4)
		system.Root.Send(pid, &poke{})
	}
	require.Empty(t, idles, "idle while messages kept coming")
	quiet := <-idles
	require.GreaterOrEqual(t, quiet, d, "idle before d had passed without a message")
	time.Sleep(3 * d)
	require.Empty(t, idles, "the idle timeout is off once handled, until Set again")

	system.Root.Send(pid, &setIdle{d: d})
	require.GreaterOrEqual(t, <-idles, d, "armed again by Set")
}

func TestIdleCancelAndShorten(t *testing.T) {
	system := actor.NewActorSystem()
	pid, idles := spawnIdle(t, system)
	system.Root.Send(pid, &setIdle{d: 20 * time.Millisecond})
	system.Root.Send(pid, &cancelIdl{})
	time.Sleep(100 * time.Millisecond)
	require.Empty(t, idles, "a cancelled idle timeout never comes, nor its tick")

	// A long one shortened: the short one is what counts.
	system.Root.Send(pid, &setIdle{d: time.Hour})
	system.Root.Send(pid, &setIdle{d: 20 * time.Millisecond})
	select {
	case quiet := <-idles:
		require.GreaterOrEqual(t, quiet, 20*time.Millisecond)
	case <-time.After(30 * time.Second):
		t.Fatal("a shortened idle timeout waited for the long one")
	}
	require.Equal(t, int64(0), LiveTimersIn(system, "test_idle"), "no tick left armed once idle")
}

// TestIdleUnderChurn: many actors whose idle timeouts come due while
// messages arrive — the interleaving that made protoactor's receive
// timeout race the turn (run with -race). Each goes idle exactly once
// (it is off after), no earlier than its duration after its last message.
func TestIdleUnderChurn(t *testing.T) {
	system := actor.NewActorSystem()
	const actors, d = 20, 2 * time.Millisecond
	var wg sync.WaitGroup
	all := make([]chan time.Duration, 0, actors)
	for range actors {
		pid, idles := spawnIdle(t, system)
		all = append(all, idles)
		wg.Add(1)
		go func() {
			defer wg.Done()
			system.Root.Send(pid, &setIdle{d: d})
			for i := range 200 {
				system.Root.Send(pid, &poke{})
				if i%7 == 0 {
					time.Sleep(d)
				}
			}
		}()
	}
	wg.Wait()
	for _, idles := range all {
		select {
		case quiet := <-idles:
			require.GreaterOrEqual(t, quiet, d)
		case <-time.After(30 * time.Second):
			t.Fatal("an actor never went idle")
		}
	}
	time.Sleep(20 * d)
	for _, idles := range all {
		require.Empty(t, idles, "idle twice without a Set between")
	}
}
