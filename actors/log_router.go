package actors

import (
	"context"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"golang.org/x/sync/semaphore"
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

// LogRouter is the hub's handle on its log actors: a router that owns one
// LogStream child per job with lines on this hub, and the flusher.
type LogRouter struct {
	system *actor.ActorSystem
	pid    *actor.PID
	budget *lineBudget
}

// streamFor asks the router for a job's stream (spawned on first use).
type streamFor struct{ jobID string }

// routerDrain flushes every stream, then waits for the flusher.
type routerDrain struct{}

type logRouterActor struct {
	// fixed after construction
	deps   *Deps
	budget *lineBudget

	// actor-confined state
	flusher *actor.PID
	streams map[string]*actor.PID
	byPID   map[string]string // child PID id → job id
}

// StartLogRouter spawns the router (and its flusher) with spawn, which
// places it under the hub's supervisor.
func StartLogRouter(system *actor.ActorSystem, d *Deps, spawn func(*actor.Props, string) (*actor.PID, error)) (*LogRouter, error) {
	budget := newLineBudget(max(d.Timing.LogBudgetLines, 1))
	props := actor.PropsFromProducer(func() actor.Actor {
		return &logRouterActor{deps: d, budget: budget}
	}, actor.WithSupervisor(Strategy()), actor.WithReceiverMiddleware(recoverMiddleware("log_router", d)))
	pid, err := spawn(props, "logs")
	if err != nil {
		return nil, err
	}
	return &LogRouter{system: system, pid: pid, budget: budget}, nil
}

// Stream returns the PID of jobID's LogStream on this hub.
func (r *LogRouter) Stream(jobID string) (*actor.PID, error) {
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

// CloseLog ends a job's log on the hub's own decision.
func (r *LogRouter) CloseLog(jobID string) {
	pid, err := r.Stream(jobID)
	if err == nil {
		r.system.Root.Send(pid, &closeLog{})
	}
}

// Drain flushes every pending line and waits until the store has them
// (shutdown: the socket readers are already stopped).
func (r *LogRouter) Drain(timeout time.Duration) error {
	_, err := r.system.Root.RequestFuture(r.pid, &routerDrain{}, timeout).Result()
	if err != nil {
		return fmt.Errorf("drain logs: %w", err)
	}
	return nil
}

func (a *logRouterActor) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		a.streams = map[string]*actor.PID{}
		a.byPID = map[string]string{}
		carry := &flusherCarry{}
		a.flusher = ctx.Spawn(actor.PropsFromProducer(func() actor.Actor {
			return &logFlusher{deps: a.deps, budget: a.budget, carry: carry}
		}, actor.WithReceiverMiddleware(recoverMiddleware("log_flusher", a.deps))))
	case *streamFor:
		pid, ok := a.streams[msg.jobID]
		if !ok {
			carry := &streamCarry{}
			pid = ctx.Spawn(actor.PropsFromProducer(func() actor.Actor {
				return &logStream{deps: a.deps, jobID: msg.jobID, flusher: a.flusher, budget: a.budget, carry: carry}
			}, actor.WithReceiverMiddleware(recoverMiddleware("log_stream", a.deps))))
			a.streams[msg.jobID] = pid
			a.byPID[pid.Id] = msg.jobID
		}
		ctx.Respond(pid)
	case *actor.Terminated:
		if job, ok := a.byPID[msg.Who.Id]; ok {
			delete(a.byPID, msg.Who.Id)
			if p := a.streams[job]; p != nil && p.Id == msg.Who.Id {
				delete(a.streams, job)
			}
		}
	case *routerDrain:
		for _, pid := range a.streams {
			_, _ = ctx.RequestFuture(pid, &flushNow{}, 2*time.Second).Result()
		}
		_, err := ctx.RequestFuture(a.flusher, &drainLogs{}, 10*time.Second).Result()
		ctx.Respond(err == nil)
	}
}
