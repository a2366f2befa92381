package supervise

import (
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/paprika-hub/paprika/metrics"
)

// ErrStopping refuses a new child of a Children whose hub is shutting down.
var ErrStopping = errors.New("hub is shutting down")

// Children is a hub's handle on the parent actor of its socket actors (the
// tunnel ends, the live view's viewers and sources): the parent spawns
// them, and when the hub stops it refuses new ones and closes every one,
// waiting a bounded time. A panicking child is stopped, not restarted: a
// fresh struct could not adopt its socket's goroutines, and the peer
// reconnects anyway.
type Children struct {
	system   *actor.ActorSystem
	pid      *actor.PID
	what     string // a child, in errors ("tunnel end")
	stopping atomic.Bool
}

// ChildrenConfig names a Children's parent and says how it closes a child.
type ChildrenConfig struct {
	// Name is the parent's actor name; Kind names it in LiveTimers and in
	// the panic metric.
	Name, Kind string
	// What names one child in errors ("tunnel end").
	What string
	// Close is the message that makes a child close its socket (a 1001
	// with the reason the hub is stopping).
	Close   func() any
	Log     *slog.Logger
	Metrics *metrics.Metrics
}

// StartChildren spawns the parent with spawn (under the hub's supervisor).
func StartChildren(system *actor.ActorSystem, cfg ChildrenConfig, spawn func(*actor.Props, string) (*actor.PID, error)) (*Children, error) {
	stop := actor.NewOneForOneStrategy(1, time.Second, func(any) actor.Directive { return actor.StopDirective })
	props := actor.PropsFromProducer(func() actor.Actor { return &childParent{kind: cfg.Kind, close: cfg.Close} },
		actor.WithSupervisor(stop), actor.WithReceiverMiddleware(Recover(cfg.Kind, cfg.Log, cfg.Metrics)))
	pid, err := spawn(props, cfg.Name)
	if err != nil {
		return nil, err
	}
	return &Children{system: system, pid: pid, what: cfg.What}, nil
}

// Spawn starts a child named name (from outside the actors: an HTTP
// handler's goroutine waits at most a few seconds).
func (c *Children) Spawn(props *actor.Props, name string) (*actor.PID, error) {
	if c.stopping.Load() {
		return nil, ErrStopping
	}
	res, err := c.system.Root.RequestFuture(c.pid, &spawnChild{props: props, name: name}, 5*time.Second).Result()
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", c.what, err)
	}
	switch v := res.(type) {
	case *actor.PID:
		return v, nil
	case error:
		return nil, fmt.Errorf("start %s: %w", c.what, v)
	}
	return nil, fmt.Errorf("start %s: unexpected %T", c.what, res)
}

// Send delivers msg to a child from outside the actors.
func (c *Children) Send(pid *actor.PID, msg any) { c.system.Root.Send(pid, msg) }

// Stop refuses new children and closes every open one, waiting up to wait
// for them to go.
func (c *Children) Stop(wait time.Duration) {
	if c == nil || !c.stopping.CompareAndSwap(false, true) {
		return
	}
	_, _ = c.system.Root.RequestFuture(c.pid, &closeChildren{wait: wait}, wait+time.Second).Result()
}

type childParent struct {
	kind     string
	close    func() any
	children map[string]*actor.PID
	waiters  []*actor.PID
	timers   *Timers
}

type spawnChild struct {
	props *actor.Props
	name  string
}

// closeChildren closes every child; the reply comes when all are gone (or
// after wait).
type closeChildren struct{ wait time.Duration }

type closeChildrenDone struct{}

func (p *childParent) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		p.children = map[string]*actor.PID{}
		p.timers = NewTimers(ctx, p.kind)
	case *actor.Stopping, *actor.Restarting:
		p.timers.StopAll()
	case *spawnChild:
		pid, err := ctx.SpawnNamed(m.props, m.name)
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
	case *closeChildren:
		p.waiters = append(p.waiters, ctx.Sender())
		if len(p.children) == 0 {
			p.release(ctx)
			return
		}
		for _, pid := range p.children {
			ctx.Send(pid, p.close())
		}
		p.timers.After(m.wait, &closeChildrenDone{})
	case *closeChildrenDone:
		p.release(ctx)
	}
}

func (p *childParent) release(ctx actor.Context) {
	for _, w := range p.waiters {
		ctx.Send(w, true)
	}
	p.waiters = nil
}
