package tunnel

import (
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/paprika-hub/paprika/actors/supervise"
	"github.com/paprika-hub/paprika/messages"
	"github.com/paprika-hub/paprika/metrics"
)

// Ends is a hub's handle on its tunnel ends: the parent actor of every end
// on this hub, which closes them all when the hub stops.
type Ends struct {
	system   *actor.ActorSystem
	pid      *actor.PID
	stopping atomic.Bool
}

// ErrStopping refuses a new end on a hub that is shutting down.
var ErrStopping = errors.New("hub is shutting down")

// parent is the ends' parent. A panicking end is stopped, not restarted:
// a fresh struct could not adopt the socket's goroutines, and the client
// reconnects to cdp_url anyway.
type parent struct {
	children map[string]*actor.PID
	waiters  []*actor.PID
	timers   *supervise.Timers
}

type spawnEnd struct{ cfg Config }

// closeAll closes every end with 1001; the reply comes when all are gone
// (or after wait).
type closeAll struct{ wait time.Duration }

type closeAllDone struct{}

func (p *parent) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		p.children = map[string]*actor.PID{}
		p.timers = supervise.NewTimers(ctx, "tunnel_ends")
	case *actor.Stopping, *actor.Restarting:
		p.timers.StopAll()
	case *spawnEnd:
		pid, err := ctx.SpawnNamed(Props(m.cfg), "t-"+m.cfg.TunnelID+"-"+string(m.cfg.Role))
		if err != nil {
			ctx.Respond(err)
			return
		}
		p.children[pid.Id] = pid
		ctx.Respond(pid)
	case *actor.Terminated:
		delete(p.children, m.Who.Id)
		if len(p.children) == 0 {
			p.release(ctx)
		}
	case *closeAll:
		p.waiters = append(p.waiters, ctx.Sender())
		if len(p.children) == 0 {
			p.release(ctx)
			return
		}
		for _, pid := range p.children {
			ctx.Send(pid, &messages.TunnelClose{Code: messages.CloseGoingAway, Reason: ReasonShutdown})
		}
		p.timers.After(m.wait, &closeAllDone{})
	case *closeAllDone:
		p.release(ctx)
	}
}

func (p *parent) release(ctx actor.Context) {
	for _, w := range p.waiters {
		ctx.Send(w, true)
	}
	p.waiters = nil
}

// Start spawns the ends' parent with spawn (under the hub's supervisor).
func Start(system *actor.ActorSystem, log *slog.Logger, m *metrics.Metrics, spawn func(*actor.Props, string) (*actor.PID, error)) (*Ends, error) {
	stopEnds := actor.NewOneForOneStrategy(1, time.Second, func(any) actor.Directive { return actor.StopDirective })
	props := actor.PropsFromProducer(func() actor.Actor { return &parent{} }, actor.WithSupervisor(stopEnds),
		actor.WithReceiverMiddleware(supervise.Recover("tunnel_ends", log, m)))
	pid, err := spawn(props, "tunnels")
	if err != nil {
		return nil, err
	}
	return &Ends{system: system, pid: pid}, nil
}

// Spawn starts an end on this hub (from outside the actors: an HTTP
// handler's goroutine waits at most a few seconds).
func (e *Ends) Spawn(cfg Config) (*actor.PID, error) {
	if e.stopping.Load() {
		return nil, ErrStopping
	}
	res, err := e.system.Root.RequestFuture(e.pid, &spawnEnd{cfg: cfg}, 5*time.Second).Result()
	if err != nil {
		return nil, fmt.Errorf("start tunnel end: %w", err)
	}
	switch v := res.(type) {
	case *actor.PID:
		return v, nil
	case error:
		return nil, fmt.Errorf("start tunnel end: %w", v)
	}
	return nil, fmt.Errorf("start tunnel end: unexpected %T", res)
}

// Send delivers msg to an end from outside the actors.
func (e *Ends) Send(pid *actor.PID, msg any) { e.system.Root.Send(pid, msg) }

// Stop refuses new ends and closes every open one with 1001 (its peer
// learns why), waiting up to wait for them to go.
func (e *Ends) Stop(wait time.Duration) {
	if e == nil || !e.stopping.CompareAndSwap(false, true) {
		return
	}
	_, _ = e.system.Root.RequestFuture(e.pid, &closeAll{wait: wait}, wait+time.Second).Result()
}
