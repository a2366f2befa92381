package grains

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"

	"github.com/paprika-hub/paprika/actors/supervise"
	"github.com/paprika-hub/paprika/internal/backoff"
	"github.com/paprika-hub/paprika/messages"
)

// reply answers a request; a no-op when there is no sender (a plain Send).
// A request sent as a call (its call id set, messages.Called) is answered
// with that id, to the caller itself; any other to its sender (a future).
// r is the answer's own: reply may write its call id.
func reply(ctx actor.Context, r *messages.Reply) {
	to := ctx.Sender()
	if to == nil {
		return
	}
	if c, isCall := ctx.Message().(messages.Called); isCall && c.GetCall() != 0 {
		if r.Call == 0 {
			r.Call = c.GetCall()
		} else {
			r = r.Answering(c.GetCall())
		}
		ctx.Send(to, r)
		return
	}
	ctx.Respond(r)
}

// Respond is reply for the actors outside this package that answer a
// grain's call (the worker link answering ConnSend).
func Respond(ctx actor.Context, r *messages.Reply) { reply(ctx, r) }

// Answered hands an answer to a call of the actor whose timers these are
// (supervise.Timers.Call) and ticks of its call sweep; true when msg was
// one of those, which the actor then handles no further. A Reply that
// answers no pending call — late, after its call timed out — is dropped
// here too: with a future, it went to a future that had stopped.
func Answered(t *supervise.Timers, msg interface{}) bool {
	switch m := msg.(type) {
	case *messages.Reply:
		if t != nil {
			t.Answer(m.Call, m)
		}
		return true
	case *supervise.CallSweep:
		if t != nil {
			t.Sweep()
		}
		return true
	}
	return false
}

// answersCalls is the cluster's identity lookup when it knows which
// members answer a call by its id (membership.Lookup.AnswersCalls).
type answersCalls interface{ AnswersCalls(address string) bool }

// callable reports whether a request to pid may go as a call: the member
// there answers calls by their id. One that does not (an older version)
// is asked through a future.
func callable(cl *cluster.Cluster, pid *actor.PID) bool {
	if cl == nil {
		return false
	}
	if a, ok := cl.Config.IdentityLookup.(answersCalls); ok {
		return a.AnswersCalls(pid.Address)
	}
	return false
}

// Request sends msg to pid and runs cont on the actor's turn with its
// answer, or with the error of none within timeout: as a call
// (supervise.Timers.Call) when msg can carry a call id and the member at
// pid answers by it, else through a future (Timers.Reenter).
func Request(ctx actor.Context, t *supervise.Timers, cl *cluster.Cluster, pid *actor.PID, msg interface{},
	timeout time.Duration, cont func(res interface{}, err error)) {
	if c, ok := msg.(messages.Called); ok && callable(cl, pid) {
		id := c.GetCall()
		if id == 0 {
			id = supervise.NewCallID()
			c.SetCall(id)
		}
		t.Call(ctx, pid, msg, id, timeout, cont)
		return
	}
	t.Reenter(ctx, ctx.RequestFuture(pid, msg, timeout), cont)
}

func ok(json []byte) *messages.Reply { return &messages.Reply{Ok: true, Json: json} }

func fail(code messages.Code, format string, args ...any) *messages.Reply {
	return messages.Fail(code, format, args...)
}

// ErrString describes a failed call: its error, or the refusal.
func ErrString(err error, r *messages.Reply) string {
	if err != nil {
		return err.Error()
	}
	if r != nil {
		return r.Code + ": " + r.Message
	}
	return "no reply"
}

// RefOf is the wire form of pid.
func RefOf(pid *actor.PID) *messages.Ref {
	if pid == nil {
		return nil
	}
	return &messages.Ref{Address: pid.Address, Id: pid.Id}
}

func pidOf(r *messages.Ref) *actor.PID {
	if r == nil || r.Id == "" {
		return nil
	}
	return actor.NewPID(r.Address, r.Id)
}

// RememberPID caches the activation a grain named as its own in a message
// (SchedEnqueue.job; ConnSend.job, for the link in actors/link), so the
// next message to it needs no identity lookup — a round trip to the
// identity's owner hub. A stale entry costs what any stale cache entry
// does: a call's failed attempt removes it and looks up afresh; the cache
// is emptied on each topology change, and an entry dropped when its
// activation ends (membership).
func RememberPID(cl *cluster.Cluster, identity, kind string, r *messages.Ref) {
	if pid := pidOf(r); pid != nil && identity != "" && cl != nil {
		cl.PidCache.Set(identity, kind, pid)
	}
}

func samePID(a, b *actor.PID) bool {
	return a != nil && b != nil && a.Address == b.Address && a.Id == b.Id
}

// Send delivers msg to a grain without waiting for an answer. The PID
// comes from the cluster's cache (an activation on first use); a message to
// a grain that has just moved is lost, so callers use it only where a later
// message or a sweep repairs the loss (state pushes, cancels), and
// GrainCall elsewhere.
func Send(ctx actor.SenderContext, cl *cluster.Cluster, identity, kind string, msg interface{}) {
	if pid, ok := cl.PidCache.Get(identity, kind); ok {
		countMessage(cl.ActorSystem, kind, opSend, pid)
		ctx.Send(pid, msg)
		return
	}
	pid := cl.Get(identity, kind)
	if pid == nil {
		return
	}
	countMessage(cl.ActorSystem, kind, opLookup, pid)
	countMessage(cl.ActorSystem, kind, opSend, pid)
	cl.PidCache.Set(identity, kind, pid)
	ctx.Send(pid, msg)
}

// quickAttempt bounds one attempt of a grain call. protoactor waits the
// whole timeout on a PID of a member that just died; with short attempts
// and a fresh lookup each time, a call finds the grain's new home as soon
// as the topology has dropped the dead member.
const quickAttempt = 2 * time.Second

// callRetry spaces the attempts of a grain call (protoactor's own retry
// backoff is nanoseconds): a fresh lookup finds a moved grain within a
// few hundred milliseconds of the topology change.
var callRetry = backoff.Policy{Base: 100 * time.Millisecond, Max: time.Second}

// GrainCall is one request from inside an actor's turn to a grain,
// anywhere in the cluster. The turn never waits: the answer comes back as a
// continuation on the caller's own mailbox (ReenterAfter), so the actor
// keeps handling its other messages meanwhile; a failed attempt is retried
// by a timer message to the caller (which hands *GrainCall to run) until
// the deadline, each time with a fresh PID lookup. The continuation is
// dropped when the incarnation that asked has stopped or restarted: its
// state is gone, and the next one rebuilds from the store.
type GrainCall struct {
	cl             *cluster.Cluster
	identity, kind string
	msg            interface{}
	deadline       time.Time
	once           bool // one attempt only (not idempotent, or long-running)
	timers         *supervise.Timers
	done           func(*messages.Reply, error)
	tries          int
	began          time.Time
	system         *actor.ActorSystem
}

// Ask starts a grain call of at most timeout, in short attempts, from the
// actor whose timers are t; done runs on that actor's turn. The actor
// hands a *GrainCall it receives to its Run (the retry).
func Ask(ctx actor.Context, t *supervise.Timers, cl *cluster.Cluster, identity, kind string, msg interface{},
	timeout time.Duration, done func(*messages.Reply, error)) {
	now := time.Now()
	c := &GrainCall{cl: cl, identity: identity, kind: kind, msg: msg, deadline: now.Add(timeout), timers: t, done: done,
		began: now, system: ctx.ActorSystem()}
	c.Run(ctx)
}

// AskOnce is Ask in a single attempt of timeout: for a call whose retries
// are the caller's own.
func AskOnce(ctx actor.Context, t *supervise.Timers, cl *cluster.Cluster, identity, kind string, msg interface{},
	timeout time.Duration, done func(*messages.Reply, error)) {
	now := time.Now()
	c := &GrainCall{cl: cl, identity: identity, kind: kind, msg: msg, deadline: now.Add(timeout), timers: t, done: done, once: true,
		began: now, system: ctx.ActorSystem()}
	c.Run(ctx)
}

// Run makes one attempt; the actor calls it again when the retry timer
// delivers the call to it.
func (c *GrainCall) Run(ctx actor.Context) {
	c.tries++
	left := time.Until(c.deadline)
	attempt := left
	if !c.once {
		attempt = min(left, quickAttempt)
	}
	if attempt <= 0 {
		c.finish(nil, fmt.Errorf("%s/%s: %w", c.kind, c.identity, actor.ErrTimeout))
		return
	}
	if pid, ok := c.cl.PidCache.Get(c.identity, c.kind); ok {
		c.request(ctx, pid, attempt)
		return
	}
	// The lookup may wait on an activation on another member: it runs
	// beside the actor, bounded by the lookup's own activation timeout,
	// and its answer comes back through a future like any reply.
	system := ctx.ActorSystem()
	found := actor.NewFuture(system, attempt)
	go func() {
		if pid := c.cl.Get(c.identity, c.kind); pid != nil {
			system.Root.Send(found.PID(), pid)
		}
	}()
	c.timers.Reenter(ctx, found, func(res interface{}, err error) {
		pid, _ := res.(*actor.PID)
		if pid == nil {
			c.retry(ctx, fmt.Errorf("no activation of %s/%s: %w", c.kind, c.identity, err))
			return
		}
		countMessage(c.system, c.kind, opLookup, pid)
		c.cl.PidCache.Set(c.identity, c.kind, pid)
		c.request(ctx, pid, time.Until(c.deadline))
	})
}

func (c *GrainCall) request(ctx actor.Context, pid *actor.PID, timeout time.Duration) {
	if !c.once {
		timeout = min(timeout, quickAttempt)
	}
	countMessage(c.system, c.kind, opRequest, pid)
	// A retry sends the same message, with the call id of the first
	// attempt: a late answer to that one answers the retry as well (a
	// retried call is idempotent), and the message, once sent, is never
	// written again.
	Request(ctx, c.timers, c.cl, pid, c.msg, max(timeout, time.Millisecond), func(res interface{}, err error) {
		r, isReply := res.(*messages.Reply)
		if err == nil && !isReply {
			err = fmt.Errorf("%s/%s answered %T", c.kind, c.identity, res)
		}
		if err != nil {
			c.cl.PidCache.Remove(c.identity, c.kind)
			c.retry(ctx, err)
			return
		}
		c.finish(r, nil)
	})
}

func (c *GrainCall) retry(ctx actor.Context, err error) {
	left := time.Until(c.deadline)
	if c.once || left <= 0 {
		c.finish(nil, err)
		return
	}
	c.timers.After(min(callRetry.Delay(c.tries-1), left), c)
}

func (c *GrainCall) finish(r *messages.Reply, err error) {
	observeCall(c.system, c.kind, c.began)
	if c.done != nil {
		c.done(r, err)
	}
}

// outsideRetry spaces the attempts of a call from outside the actors.
var outsideRetry = backoff.Policy{Base: 20 * time.Millisecond, Max: 500 * time.Millisecond}

// requestGrain calls a grain from outside any actor (HTTP handlers, the
// hub's assembly): the caller's goroutine waits, bounded by timeout.
func requestGrain(cl *cluster.Cluster, identity, kind string, msg interface{}, timeout time.Duration) (*messages.Reply, error) {
	defer observeCall(cl.ActorSystem, kind, time.Now())
	res, err := cl.Request(identity, kind, msg,
		cluster.WithTimeout(timeout),
		cluster.WithRetryCount(4),
		cluster.WithRetryAction(func(i int) int {
			time.Sleep(outsideRetry.Delay(i)) // not an actor turn: a caller's goroutine
			return i + 1
		}))
	if err != nil {
		return nil, err
	}
	r, ok := res.(*messages.Reply)
	if !ok {
		return nil, errors.New("unexpected reply type")
	}
	return r, nil
}

// Call is a request to a grain from outside the actors, with a bounded
// timeout and retry backoff.
func Call(cl *cluster.Cluster, identity, kind string, msg interface{}, timeout time.Duration) (*messages.Reply, error) {
	return requestGrain(cl, identity, kind, msg, timeout)
}

// CallContext is Call bounded by ctx as well: the call's timeout shrinks to
// ctx's deadline, and when ctx ends first CallContext returns ctx.Err() at
// once. protoactor's grain calls take no context.Context (its
// cluster.WithContext is an actor.SenderContext), so the call runs on a
// goroutine of its own, which a cancelled ctx leaves to end by its timeout.
func CallContext(ctx context.Context, cl *cluster.Cluster, identity, kind string, msg interface{}, timeout time.Duration) (*messages.Reply, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if dl, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(dl))
	}
	type result struct {
		r   *messages.Reply
		err error
	}
	done := make(chan result, 1) // the goroutine never blocks on a gone caller
	go func() {
		r, err := Call(cl, identity, kind, msg, timeout)
		done <- result{r, err}
	}()
	select {
	case res := <-done:
		return res.r, res.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
