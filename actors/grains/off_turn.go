package grains

import (
	"context"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/paprika-hub/paprika/actors/supervise"
)

// offTurnSlack is how much longer than its read's own timeout a
// continuation waits: the read returns (with its context's error) by then.
const offTurnSlack = 250 * time.Millisecond

// offTurnResult carries a read's answer from its goroutine to the future.
type offTurnResult[T any] struct {
	v   T
	err error
}

// offTurn runs read beside the actor, bounded by timeout, and hands what
// it returned to done on the actor's turn: for a store read the actor can
// wait for without holding its mailbox (a worker's report, a hello). The
// actor goes on with its other messages meanwhile, so done must judge the
// answer against the state it finds then. done is dropped when the
// incarnation that asked has stopped or restarted (its state is gone). The
// goroutine belongs to the read: the timeout's context ends it.
func offTurn[T any](ctx actor.Context, t *supervise.Timers, timeout time.Duration,
	read func(context.Context) (T, error), done func(T, error)) {
	system := ctx.ActorSystem()
	fut := actor.NewFuture(system, timeout+offTurnSlack)
	go func() {
		rctx, cancel := context.WithTimeout(context.Background(), timeout)
		v, err := read(rctx)
		cancel()
		system.Root.Send(fut.PID(), &offTurnResult[T]{v: v, err: err})
	}()
	t.Reenter(ctx, fut, func(res interface{}, err error) {
		r, ok := res.(*offTurnResult[T])
		if err == nil && !ok {
			err = fmt.Errorf("off-turn read answered %T", res)
		}
		if err != nil {
			var zero T
			done(zero, err)
			return
		}
		done(r.v, r.err)
	})
}
