package logpipe

import (
	"context"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"golang.org/x/sync/semaphore"

	"github.com/paprika-hub/paprika/actors/supervise"
	"github.com/paprika-hub/paprika/persistence"
)

// lineBudget bounds the log lines a hub holds in memory between the socket
// readers and the log store. A reader takes a token per line before handing
// it on and the flusher returns them once stored, so when the store falls
// behind the readers stop reading and TCP slows the workers: memory stays
// flat under overload and no line is dropped.
type lineBudget struct{ sem *semaphore.Weighted }

func newLineBudget(n int64) *lineBudget { return &lineBudget{sem: semaphore.NewWeighted(n)} }

// Acquire waits for n tokens or the context.
func (b *lineBudget) Acquire(ctx context.Context, n int64) error { return b.sem.Acquire(ctx, n) }

// Release returns n tokens.
func (b *lineBudget) Release(n int64) {
	if n > 0 {
		b.sem.Release(n)
	}
}

// Router is the hub's handle on its log actors: a router that owns one
// LogStream child per job with lines on this hub, and the flusher.
type Router struct {
	system *actor.ActorSystem
	pid    *actor.PID
	budget *lineBudget
	book   *holderBook
	now    func() time.Time
}

// streamFor asks the router for a job's stream (spawned on first use).
type streamFor struct{ jobID string }

// routeTo hands msg to a job's stream.
type routeTo struct {
	jobID string
	msg   interface{}
}

// toFlusher hands msg to the flusher (fault injection).
type toFlusher struct{ msg interface{} }

// routerDrain flushes every stream, then waits for the flusher.
type routerDrain struct{}

// streamFlushWait bounds the wait for one stream's flush at shutdown.
const streamFlushWait = 2 * time.Second

type logRouterActor struct {
	// fixed after construction
	deps   *Deps
	budget *lineBudget
	book   *holderBook

	// actor-confined state
	flusher *actor.PID
	streams map[string]*actor.PID
	byPID   map[string]string // child PID id → job id
	timers  *supervise.Timers // the ended maps' turn and the drain's continuations
	// ended and endedOld hold the jobs whose log this router ended without
	// a stream (endWithoutStream), for one to two DonePassivate periods:
	// as long as a stream would have stayed up done. A stream woken for
	// one of them meanwhile starts done, so a late line is refused even
	// before the store has the done sentinel.
	ended, endedOld map[string]struct{}
	// endedTick is the turn armed, nil with none. Each turn arms the next,
	// so a turn an earlier incarnation's timer sent just before a restart
	// is passed over: taken, it would age the maps twice as fast for good.
	endedTick *endedTurn
}

// endedTurn ages the ended maps by one DonePassivate period.
type endedTurn struct{ _ byte } // not zero-sized: turns are told apart by address

// Start spawns the router (and its flusher) with spawn, which
// places it under the hub's supervisor.
func Start(system *actor.ActorSystem, d *Deps, spawn func(*actor.Props, string) (*actor.PID, error)) (*Router, error) {
	budget := newLineBudget(max(d.Timing.LogBudgetLines, 1))
	book := newHolderBook(d.Timing.HolderTTL)
	props := actor.PropsFromProducer(func() actor.Actor {
		return &logRouterActor{deps: d, budget: budget, book: book}
	}, actor.WithSupervisor(supervise.Strategy()), actor.WithReceiverMiddleware(supervise.Recover("log_router", d.Log, d.Metrics)),
		actor.WithDispatcher(d.Dispatcher))
	pid, err := spawn(props, "logs")
	if err != nil {
		return nil, err
	}
	return &Router{system: system, pid: pid, budget: budget, book: book, now: d.now}, nil
}

// Assigned notes that link (a WorkerConn's PID id) queued an assignment of
// jobID's attempt for worker: the job's stream on this hub takes that as
// its holder instead of reading the job (see holderBook).
func (r *Router) Assigned(jobID, worker string, attempt int, link string) {
	r.book.put(jobID, assignment{worker: worker, attempt: attempt, link: link, at: r.now()})
}

// Rejected forgets what Assigned noted for jobID's attempt through link:
// the worker refused it, and the claim is rolled back.
func (r *Router) Rejected(jobID string, attempt int, link string) { r.book.drop(jobID, attempt, link) }

// LinkClosed forgets every assignment link noted.
func (r *Router) LinkClosed(link string) { r.book.dropLink(link) }

// Stream returns the PID of jobID's LogStream on this hub. It waits for the
// router, so it is for goroutines (the socket readers), not actor turns:
// those use Route.
func (r *Router) Stream(jobID string) (*actor.PID, error) {
	res, err := r.system.Root.RequestFuture(r.pid, &streamFor{jobID: jobID}, 5*time.Second).Result()
	if err != nil {
		return nil, fmt.Errorf("log stream for job %s: %w", jobID, err)
	}
	pid, ok := res.(*actor.PID)
	if !ok {
		return nil, fmt.Errorf("log stream for job %s: unexpected reply %T", jobID, res)
	}
	return pid, nil
}

// CloseLog ends a job's log on the hub's own decision. It does not wait:
// the router hands the close to the job's stream.
func (r *Router) CloseLog(ctx actor.SenderContext, jobID string) {
	r.Route(ctx, jobID, &closeLog{})
}

// Route sends msg (an End, say) to jobID's stream through the router (which spawns the
// stream on first use), from inside an actor's turn: no waiting for the
// stream's PID. Lines the socket reader sent to the stream before are
// ahead of msg in its mailbox.
func (r *Router) Route(ctx actor.SenderContext, jobID string, msg interface{}) {
	ctx.Send(r.pid, &routeTo{jobID: jobID, msg: msg})
}

// Acquire takes n line tokens, waiting while the store is behind (the
// backpressure on the socket readers); it fails only when ctx ends.
func (r *Router) Acquire(ctx context.Context, n int64) error { return r.budget.Acquire(ctx, n) }

// InjectFlusherPanic makes the flusher panic (fault injection).
func (r *Router) InjectFlusherPanic() {
	r.system.Root.Send(r.pid, &toFlusher{msg: &supervise.InjectPanic{}})
}

// Drain flushes every pending line and waits until the store has them
// (shutdown: the socket readers are already stopped).
func (r *Router) Drain(timeout time.Duration) error {
	_, err := r.system.Root.RequestFuture(r.pid, &routerDrain{}, timeout).Result()
	if err != nil {
		return fmt.Errorf("drain logs: %w", err)
	}
	return nil
}

func (a *logRouterActor) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		a.timers = supervise.NewTimers(ctx, "log_router")
		a.streams = map[string]*actor.PID{}
		a.byPID = map[string]string{}
		carry := &flusherCarry{}
		a.flusher = ctx.Spawn(actor.PropsFromProducer(func() actor.Actor {
			return &logFlusher{deps: a.deps, budget: a.budget, carry: carry}
		}, actor.WithReceiverMiddleware(supervise.Recover("log_flusher", a.deps.Log, a.deps.Metrics)),
			actor.WithDispatcher(a.deps.Dispatcher)))
	case *streamFor:
		ctx.Respond(a.stream(ctx, msg.jobID))
	case *routeTo:
		if end, ok := msg.msg.(*End); ok && a.endWithoutStream(ctx, msg.jobID, end) {
			return
		}
		ctx.Send(a.stream(ctx, msg.jobID), msg.msg)
	case *endedTurn:
		if msg != a.endedTick {
			return
		}
		a.endedOld, a.ended, a.endedTick = a.ended, nil, nil
		if len(a.endedOld) > 0 {
			a.armEndedTurn()
		}
	case *toFlusher:
		ctx.Send(a.flusher, msg.msg)
	case *actor.Terminated:
		if job, ok := a.byPID[msg.Who.Id]; ok {
			delete(a.byPID, msg.Who.Id)
			if p := a.streams[job]; p != nil && p.Id == msg.Who.Id {
				delete(a.streams, job)
			}
		}
	case *actor.Stopping, *actor.Restarting:
		a.timers.StopAll()
	case *routerDrain:
		a.drain(ctx)
	}
}

// stream returns jobID's stream, spawning it on first use.
func (a *logRouterActor) stream(ctx actor.Context, jobID string) *actor.PID {
	pid, ok := a.streams[jobID]
	if !ok {
		carry := &streamCarry{}
		if a.endedHere(jobID) {
			// Its done sentinel went to the flusher without a stream; the
			// store may not have it yet.
			*carry = streamCarry{valid: true, done: true, doneSent: true, resumed: true}
		}
		a.deps.Metrics.LogStreams.Inc()
		pid = ctx.Spawn(actor.PropsFromProducer(func() actor.Actor {
			return &logStream{deps: a.deps, jobID: jobID, flusher: a.flusher, budget: a.budget, book: a.book, carry: carry}
		}, actor.WithReceiverMiddleware(supervise.Recover("log_stream", a.deps.Log, a.deps.Metrics)),
			actor.WithDispatcher(a.deps.Dispatcher)))
		a.streams[jobID] = pid
		a.byPID[pid.Id] = jobID
	}
	return pid
}

// endWithoutStream ends the log of a job that has no stream on this hub,
// when that takes no stream's state: the End closes the log (not
// KeepOpen), this router did not end it already, and the holder is known
// without the store (the assignment this hub's link noted, or no fencing
// at all). Most jobs never log a line, and for them a stream was a spawn,
// three turns, a passivation timer and a stop, only to send what this
// sends: the same done sentinel, or the same refusal of a stranger's end.
// Anything else goes to a stream, as before.
func (a *logRouterActor) endWithoutStream(ctx actor.Context, jobID string, m *End) bool {
	if m.KeepOpen || a.streams[jobID] != nil || a.endedHere(jobID) {
		return false
	}
	holds := true
	if a.deps.Holder != nil && m.Worker != "" {
		// As the stream's first check: an assignment older than the
		// speaker's attempt says nothing of it, the store does (a stream).
		w, att, ok := a.book.take(jobID, a.deps.now())
		if !ok || att < m.Attempt {
			return false
		}
		holds = w == m.Worker && att == m.Attempt
	}
	if !holds {
		refuseEnd(ctx, a.deps, a.flusher, m)
		return true
	}
	ctx.Send(a.flusher, &flushReq{batch: persistence.LogBatch{JobID: jobID, Done: true}, hasBatch: true, urgent: true,
		notify: m.Notify, payload: m.Payload})
	if a.ended == nil {
		a.ended = map[string]struct{}{}
	}
	a.ended[jobID] = struct{}{}
	if a.endedTick == nil {
		a.armEndedTurn()
	}
	return true
}

// armEndedTurn ages the ended maps one DonePassivate period from now.
func (a *logRouterActor) armEndedTurn() {
	a.endedTick = &endedTurn{}
	a.timers.After(a.deps.Timing.donePassivate(), a.endedTick)
}

// endedHere reports whether this router ended jobID's log without a
// stream within the last one to two DonePassivate periods.
func (a *logRouterActor) endedHere(jobID string) bool {
	if _, ok := a.ended[jobID]; ok {
		return true
	}
	_, ok := a.endedOld[jobID]
	return ok
}

// drain asks every stream to hand its pending lines over, all at once,
// then the flusher to store everything; the caller hears when it has (or
// false). The router's turn never waits: each answer is a continuation.
func (a *logRouterActor) drain(ctx actor.Context) {
	left := len(a.streams)
	flushed := func() {
		fut := ctx.RequestFuture(a.flusher, &drainLogs{}, 10*time.Second)
		a.timers.Reenter(ctx, fut, func(_ interface{}, err error) { ctx.Respond(err == nil) })
	}
	if left == 0 {
		flushed()
		return
	}
	for _, pid := range a.streams {
		a.timers.Reenter(ctx, ctx.RequestFuture(pid, &flushNow{}, streamFlushWait), func(interface{}, error) {
			if left--; left == 0 {
				flushed()
			}
		})
	}
}
