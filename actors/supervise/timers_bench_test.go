package supervise

import (
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// BenchmarkTimersArmStop is one timer of a job's life: armed, then
// stopped before it fires (a deadline or an audit the job outran).
func BenchmarkTimersArmStop(b *testing.B) {
	system := actor.NewActorSystem()
	ready := make(chan *Timers, 1)
	pid := system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor {
		return &timedActor{got: make(chan int, 1), ready: ready}
	}))
	defer system.Root.Stop(pid)
	ts := <-ready
	msg := &tick{}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		ts.After(time.Hour, msg)()
	}
}
