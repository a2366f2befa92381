package grains

import (
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/actors/supervise"
	"github.com/paprika-hub/paprika/messages"
)

// answerer answers every WorkerAssign as a grain does.
func answerer(ctx actor.Context) {
	if _, isAssign := ctx.Message().(*messages.WorkerAssign); isAssign {
		reply(ctx, ok(nil))
	}
}

// requestTo has the inbox send msg to pid as a request of its own.
type requestTo struct {
	pid *actor.PID
	msg interface{}
}

// inbox records the replies that reach it as plain messages.
type inbox struct{ got chan *messages.Reply }

func (b *inbox) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *requestTo:
		ctx.Request(m.pid, m.msg)
	case *messages.Reply:
		b.got <- m
	}
}

// TestReplyAnswersACallByItsID: a request carrying a call id is answered
// with that id, to the caller's own PID; one without (a future's) is
// answered to its sender as before.
func TestReplyAnswersACallByItsID(t *testing.T) {
	system := actor.NewActorSystem()
	callee := system.Root.Spawn(actor.PropsFromFunc(answerer))
	b := &inbox{got: make(chan *messages.Reply, 1)}
	caller := system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return b }))

	system.Root.Send(caller, &requestTo{pid: callee, msg: &messages.WorkerAssign{JobId: "j", Call: 7}})
	select {
	case r := <-b.got:
		require.True(t, r.Ok)
		require.EqualValues(t, 7, r.Call, "the answer names the call")
	case <-time.After(5 * time.Second):
		t.Fatal("no answer reached the caller")
	}

	res, err := system.Root.RequestFuture(callee, &messages.WorkerAssign{JobId: "j"}, 5*time.Second).Result()
	require.NoError(t, err)
	require.Zero(t, res.(*messages.Reply).Call, "a request without a call id is answered through its future")
}

func TestAnsweredTakesAnswersAndSweepsOnly(t *testing.T) {
	require.True(t, Answered(nil, &messages.Reply{Call: 3}), "a late answer is taken, and dropped")
	require.True(t, Answered(nil, &supervise.CallSweep{}))
	require.False(t, Answered(nil, &messages.WorkerAssign{}))
}
