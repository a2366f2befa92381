package supervise

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// BenchmarkTimersArmStop is one timer of a job's life: armed, then
// stopped before it fires (a deadline or an audit the job outran), on
// the runtime's timer heap (a delay under wheelMin) and on the wheel,
// with 50,000 others armed on the wheel meanwhile (a hub flat out holds
// tens of thousands).
func BenchmarkTimersArmStop(b *testing.B) {
	for _, tc := range []struct {
		name string
		d    time.Duration
	}{{"runtime", wheelMin - time.Millisecond}, {"wheel", time.Hour}} {
		b.Run(tc.name, func(b *testing.B) {
			system := actor.NewActorSystem()
			ready := make(chan *Timers, 1)
			pid := system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor {
				return &timedActor{got: make(chan int, 1), ready: ready}
			}))
			defer system.Root.Stop(pid)
			ts := <-ready
			msg := &tick{}
			for range 50_000 {
				// Spread over a minute as a hub's are (none fires in the run).
				ts.After(time.Minute+time.Duration(rand.IntN(60_000))*time.Millisecond, msg)
			}
			defer ts.StopAll()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				ts.After(tc.d, msg)()
			}
		})
	}
}

// busyActor counts its messages and answers on done after n, with a 30 s
// idle timeout armed the whole time, kept either by Idle or by protoactor's
// SetReceiveTimeout (which resets its timer on every message).
type busyActor struct {
	n, seen  int
	done     chan struct{}
	protoact bool
	idle     *Idle
}

func (a *busyActor) Receive(ctx actor.Context) {
	if a.idle.Skip(ctx.Message()) {
		return
	}
	switch ctx.Message().(type) {
	case *actor.Started:
		if a.protoact {
			ctx.SetReceiveTimeout(30 * time.Second)
			return
		}
		a.idle = NewIdle(NewTimers(ctx, "bench_idle"))
		a.idle.Set(30 * time.Second)
	case *tick:
		if a.seen++; a.seen == a.n {
			close(a.done)
		}
	}
}

// BenchmarkIdleBusy: the cost per message of an idle timeout on a busy
// actor — Idle (a clock read a message) against protoactor's receive
// timeout (a timer stop and reset a message).
func BenchmarkIdleBusy(b *testing.B) {
	for _, tc := range []struct {
		name     string
		protoact bool
	}{{"idle", false}, {"protoactor", true}} {
		b.Run(tc.name, func(b *testing.B) {
			system := actor.NewActorSystem()
			a := &busyActor{n: b.N, done: make(chan struct{}), protoact: tc.protoact}
			pid := system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return a }))
			defer system.Root.Stop(pid)
			msg := &tick{}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				system.Root.Send(pid, msg)
			}
			<-a.done
		})
	}
}
