package link

import (
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/gorilla/websocket"

	"github.com/paprika-hub/paprika/actors/grains"
	"github.com/paprika-hub/paprika/actors/logpipe"
	"github.com/paprika-hub/paprika/actors/supervise"
	"github.com/paprika-hub/paprika/internal/cork"
	"github.com/paprika-hub/paprika/messages"
)

// linksActor is the parent of every WorkerConn of this hub. Its strategy is
// the hub's (one-for-one restarts). On shutdown it asks its workers to move
// to another hub, spread over a few seconds so they do not all reconnect to
// one peer at the same instant (nats' lame-duck mode).
type linksActor struct {
	children map[string]*actor.PID
	waiters  []*actor.PID
	timers   *supervise.Timers
}

type spawnLink struct{ props *actor.Props }

// moveLinks closes every link with code hub_shutdown, spread over spread;
// the reply comes when all links are gone (or after spread + linkGrace).
type moveLinks struct{ spread time.Duration }

type movesDone struct{}

const linkGrace = 3 * time.Second

func (l *linksActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		l.children = map[string]*actor.PID{}
		l.timers = supervise.NewTimers(ctx, "links")
	case *actor.Stopping, *actor.Restarting:
		l.timers.StopAll()
	case *spawnLink:
		pid := ctx.Spawn(m.props)
		l.children[pid.Id] = pid
		ctx.Respond(pid)
	case *actor.Terminated:
		delete(l.children, m.Who.Id)
		if len(l.children) == 0 {
			l.release(ctx)
		}
	case *moveLinks:
		l.waiters = append(l.waiters, ctx.Sender())
		if len(l.children) == 0 {
			l.release(ctx)
			return
		}
		step := m.spread / time.Duration(len(l.children))
		i := 0
		for _, pid := range l.children {
			l.timers.SendAfter(time.Duration(i)*step, pid, &messages.ConnClose{Code: "hub_shutdown",
				Message: "this hub is shutting down; reconnect to another"})
			i++
		}
		l.timers.After(m.spread+linkGrace, &movesDone{})
	case *movesDone:
		l.release(ctx)
	}
}

func (l *linksActor) release(ctx actor.Context) {
	for _, w := range l.waiters {
		ctx.Send(w, true)
	}
	l.waiters = nil
}

var upgrader = websocket.Upgrader{
	ReadBufferSize:  16 << 10,
	WriteBufferSize: 16 << 10,
	// Workers are not browsers: there is no origin to check; the worker
	// token (auth.worker_token) is what admits them.
	CheckOrigin: func(*http.Request) bool { return true },
}

// Links is a hub's handle on its worker links: it upgrades worker-link
// requests and hands each socket to a WorkerConn under the links actor.
type Links struct {
	system   *actor.ActorSystem
	pid      *actor.PID
	deps     *grains.Deps
	logs     *logpipe.Router
	log      *slog.Logger
	stopping atomic.Bool
}

// Start spawns the links actor with spawn, which places it under the hub's
// supervisor.
func Start(system *actor.ActorSystem, d *grains.Deps, logs *logpipe.Router,
	spawn func(*actor.Props, string) (*actor.PID, error)) (*Links, error) {
	pid, err := spawn(actor.PropsFromProducer(func() actor.Actor { return &linksActor{} },
		actor.WithSupervisor(supervise.Strategy())), "links")
	if err != nil {
		return nil, err
	}
	return &Links{system: system, pid: pid, deps: d, logs: logs, log: d.Log}, nil
}

// Accept upgrades a worker-link request (already authenticated) and hands
// the socket to a WorkerConn; a stopping hub answers 503.
func (l *Links) Accept(w http.ResponseWriter, r *http.Request, workerID string) {
	if l.stopping.Load() {
		http.Error(w, `{"error":{"code":"hub_shutdown","message":"this hub is shutting down"}}`, http.StatusServiceUnavailable)
		return
	}
	// The socket gathers a burst of frames into one write (writeLoop).
	ws, err := upgrader.Upgrade(cork.Hijackable(w), r, nil)
	if err != nil {
		l.log.Info("worker link upgrade failed", slog.String("worker_id", workerID), slog.Any("err", err))
		return
	}
	ws.SetReadLimit(messages.MaxFrameBytes)
	props := NewWorkerConnProps(l.deps, ws, workerID, l.logs)
	if _, err := l.system.Root.RequestFuture(l.pid, &spawnLink{props: props}, 5*time.Second).Result(); err != nil {
		l.log.Warn("could not start a worker connection", slog.String("worker_id", workerID), slog.Any("err", err))
		_ = ws.Close()
	}
}

// Refuse answers every new link request 503 from now on: the hub is
// stopping.
func (l *Links) Refuse() { l.stopping.Store(true) }

// Stop refuses new links, asks every worker to move to another hub, spread
// over spread so they do not all reconnect to one peer at once, waits until
// they are gone (or spread plus a grace), then stops the links actor.
func (l *Links) Stop(spread time.Duration) {
	l.stopping.Store(true)
	root := l.system.Root
	_, _ = root.RequestFuture(l.pid, &moveLinks{spread: spread}, spread+linkGrace+time.Second).Result()
	_ = root.PoisonFuture(l.pid).Wait()
}
