package supervise

import (
	"errors"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/require"
)

// question is a call's request; answer carries its id back.
type question struct {
	id    uint64
	quiet bool // the callee keeps silent
}

type answer struct {
	id     uint64
	sender *actor.PID // the sender the callee saw
}

// callee answers each question to its sender, unless told to keep quiet.
func callee(ctx actor.Context) {
	if q, ok := ctx.Message().(*question); ok && !q.quiet {
		ctx.Send(ctx.Sender(), &answer{id: q.id, sender: ctx.Sender()})
	}
}

// outcome is what one call's continuation got.
type outcome struct {
	id  uint64
	res interface{}
	err error
}

// callMany asks the caller actor to make calls to peer.
type callMany struct {
	peer    *actor.PID
	n       int
	quiet   bool
	timeout time.Duration
}

// callerActor makes calls and reports each continuation on out; it
// routes answers and sweeps to its Timers as an actor of the hub does.
type callerActor struct {
	timers *Timers
	ready  chan *Timers
	out    chan outcome
	late   chan bool // what Answer said of an answer after the call ended
}

func (a *callerActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		a.timers = NewTimers(ctx, "test_caller")
		a.ready <- a.timers
	case *actor.Stopping:
		a.timers.StopAll()
	case *callMany:
		for range m.n {
			id := NewCallID()
			a.timers.Call(ctx, m.peer, &question{id: id, quiet: m.quiet}, id, m.timeout, func(res interface{}, err error) {
				a.out <- outcome{id: id, res: res, err: err}
			})
		}
	case *pendingQ:
		m.n <- a.timers.Pending()
	case *answer:
		if !a.timers.Answer(m.id, m) {
			a.late <- true
		}
	case *CallSweep:
		a.timers.Sweep()
	}
}

// pendingQ asks the caller how many calls wait (Pending is the actor's).
type pendingQ struct{ n chan int }

func pending(system *actor.ActorSystem, pid *actor.PID) int {
	q := &pendingQ{n: make(chan int, 1)}
	system.Root.Send(pid, q)
	return <-q.n
}

func startCaller(t *testing.T, system *actor.ActorSystem) (*actor.PID, *callerActor) {
	t.Helper()
	a := &callerActor{ready: make(chan *Timers, 1), out: make(chan outcome, 256), late: make(chan bool, 256)}
	pid := system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return a }))
	<-a.ready
	return pid, a
}

func TestCallIsAnsweredToTheCallerItself(t *testing.T) {
	system := actor.NewActorSystem()
	peer := system.Root.Spawn(actor.PropsFromFunc(callee))
	pid, a := startCaller(t, system)

	system.Root.Send(pid, &callMany{peer: peer, n: 50, timeout: 10 * time.Second})
	seen := map[uint64]bool{}
	for range 50 {
		o := <-a.out
		require.NoError(t, o.err)
		ans := o.res.(*answer)
		require.Equal(t, o.id, ans.id, "each continuation gets its own call's answer")
		require.True(t, ans.sender.Equal(pid), "the callee answers the caller's own PID, not a future's: %s", ans.sender)
		require.NotZero(t, o.id)
		require.False(t, seen[o.id], "call ids are not reused")
		seen[o.id] = true
	}
	require.Zero(t, pending(system, pid))
	require.EqualValues(t, 0, LiveTimersIn(system, "test_caller"), "the sweep is armed only while a call waits")

	// Fifty calls waiting share one sweep timer.
	silent := system.Root.Spawn(actor.PropsFromFunc(callee))
	system.Root.Send(pid, &callMany{peer: silent, n: 50, quiet: true, timeout: time.Hour})
	require.Equal(t, 50, pending(system, pid))
	require.EqualValues(t, 1, LiveTimersIn(system, "test_caller"))
	require.NoError(t, system.Root.StopFuture(pid).Wait())
	require.EqualValues(t, 0, LiveTimersIn(system, "test_caller"))
}

func TestCallTimesOutAndItsLateAnswerIsDropped(t *testing.T) {
	system := actor.NewActorSystem()
	silent := system.Root.Spawn(actor.PropsFromFunc(callee))
	pid, a := startCaller(t, system)

	began := time.Now()
	system.Root.Send(pid, &callMany{peer: silent, n: 3, quiet: true, timeout: 50 * time.Millisecond})
	for range 3 {
		o := <-a.out
		require.True(t, errors.Is(o.err, actor.ErrTimeout), "got %v", o.err)
		require.Nil(t, o.res)
		require.GreaterOrEqual(t, time.Since(began), 50*time.Millisecond, "not before its timeout")
		// The answer that comes now finds no call.
		system.Root.Send(pid, &answer{id: o.id})
		require.True(t, <-a.late)
	}
	require.Zero(t, pending(system, pid))
	select {
	case o := <-a.out:
		t.Fatalf("a continuation ran twice: %+v", o)
	case <-time.After(20 * time.Millisecond):
	}
}

func TestCallsEndWithTheirIncarnation(t *testing.T) {
	system := actor.NewActorSystem()
	silent := system.Root.Spawn(actor.PropsFromFunc(callee))
	pid, a := startCaller(t, system)

	system.Root.Send(pid, &callMany{peer: silent, n: 2, quiet: true, timeout: time.Hour})
	require.Eventually(t, func() bool { return LiveTimersIn(system, "test_caller") == 1 }, time.Second, time.Millisecond)
	require.NoError(t, system.Root.StopFuture(pid).Wait())
	require.Zero(t, a.timers.Pending(), "a stopped incarnation's calls are dropped") // stopped: no turn runs now
	require.False(t, a.timers.Answer(1, nil))
	require.EqualValues(t, 0, LiveTimersIn(system, "test_caller"), "and so is their sweep")
	select {
	case o := <-a.out:
		t.Fatalf("a continuation of a stopped incarnation ran: %+v", o)
	case <-time.After(20 * time.Millisecond):
	}
}
