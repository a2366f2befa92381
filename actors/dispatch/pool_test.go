package dispatch

import (
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// eventually waits up to 5 s for cond.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// A turn goes to the goroutine the last turn left idle, not to a new one.
// The idle count rises just before that goroutine parks on its receive,
// so a turn scheduled in that instant rightly starts a new goroutine
// rather than wait: the test asks that reuse happens, not that every try
// wins that race. A pool that never reused would fail all tries.
func TestPoolReusesIdleGoroutine(t *testing.T) {
	p := New(300, 1) // one kept goroutine: a new one ends after its turn
	defer p.Close()
	done := make(chan struct{})
	p.Schedule(func() { close(done) })
	<-done
	const tries = 50
	for try := range tries {
		eventually(t, "one goroutine to idle", func() bool { return p.Idle() == 1 })
		release := make(chan struct{})
		running := make(chan struct{})
		p.Schedule(func() { close(running); <-release })
		<-running
		reused := p.Idle() == 0
		close(release)
		if reused {
			eventually(t, "the goroutine to idle again", func() bool { return p.Idle() == 1 })
			return
		}
		t.Logf("try %d: the turn ran on a new goroutine (the idle one had not parked yet)", try)
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("no turn of %d ran on the idle goroutine", tries)
}

// Turns that block never make another turn wait, however many there are,
// and no more than maxIdle goroutines stay once they are done.
func TestPoolNeverQueuesBehindBlockedTurns(t *testing.T) {
	const maxIdle, turns = 3, 50
	p := New(300, maxIdle)
	defer p.Close()
	var started sync.WaitGroup
	started.Add(turns)
	release := make(chan struct{})
	for range turns {
		p.Schedule(func() { started.Done(); <-release })
	}
	all := make(chan struct{})
	go func() { started.Wait(); close(all) }()
	select {
	case <-all:
	case <-time.After(5 * time.Second):
		t.Fatal("turns waited behind blocked turns")
	}
	close(release)
	eventually(t, "maxIdle goroutines left idle", func() bool { return p.Idle() == maxIdle })
	time.Sleep(20 * time.Millisecond)
	if got := p.Idle(); got != maxIdle {
		t.Fatalf("idle goroutines = %d, want %d", got, maxIdle)
	}
}

// Close ends the idle goroutines (goleak checks none is left), and a turn
// scheduled after it still runs.
func TestPoolClose(t *testing.T) {
	p := New(300, 8)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		p.Schedule(wg.Done)
	}
	wg.Wait()
	p.Close()
	eventually(t, "idle goroutines to end", func() bool { return p.Idle() == 0 })
	ran := make(chan struct{})
	p.Schedule(func() { close(ran) })
	select {
	case <-ran:
	case <-time.After(5 * time.Second):
		t.Fatal("a turn scheduled after Close did not run")
	}
	p.Close() // twice is fine
}

type collector struct {
	mu  sync.Mutex
	got []int
}

func (c *collector) Receive(ctx actor.Context) {
	if n, ok := ctx.Message().(int); ok {
		c.mu.Lock()
		c.got = append(c.got, n)
		c.mu.Unlock()
	}
}

// Actors on the pool keep their mailbox's guarantees: each actor's
// messages in the order sent, one at a time, across many turns.
func TestPoolRunsActorsInOrder(t *testing.T) {
	p := New(7, 2) // a short turn: many turns per actor
	defer p.Close()
	system := actor.NewActorSystem()
	defer system.Shutdown()
	const actors, msgs = 20, 500
	cs := make([]*collector, actors)
	pids := make([]*actor.PID, actors)
	for i := range cs {
		c := &collector{}
		cs[i] = c
		pids[i] = system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return c }, actor.WithDispatcher(p)))
	}
	for n := range msgs {
		for _, pid := range pids {
			system.Root.Send(pid, n)
		}
	}
	for i, pid := range pids {
		if err := system.Root.PoisonFuture(pid).Wait(); err != nil {
			t.Fatalf("stop actor %d: %v", i, err)
		}
		c := cs[i]
		c.mu.Lock()
		if len(c.got) != msgs {
			t.Fatalf("actor %d got %d messages, want %d", i, len(c.got), msgs)
		}
		for n, v := range c.got {
			if v != n {
				t.Fatalf("actor %d: message %d is %d (out of order)", i, n, v)
			}
		}
		c.mu.Unlock()
	}
}
