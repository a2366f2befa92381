package hub

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/gorilla/websocket"

	"github.com/paprika-hub/paprika/actors"
	"github.com/paprika-hub/paprika/messages"
)

// linksActor is the parent of every WorkerConn of this hub. Its strategy is
// the hub's (one-for-one restarts). On shutdown it asks its workers to move
// to another hub, spread over a few seconds so they do not all reconnect to
// one peer at the same instant (nats' lame-duck mode).
type linksActor struct {
	children map[string]*actor.PID
	waiters  []*actor.PID
	timers   *actors.Timers
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
		l.timers = actors.NewTimers(ctx, "links")
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

// Link implements api.Backend: upgrade and hand the socket to a WorkerConn.
func (h *Hub) Link(w http.ResponseWriter, r *http.Request, workerID string) {
	if h.stopping.Load() {
		http.Error(w, `{"error":{"code":"hub_shutdown","message":"this hub is shutting down"}}`, http.StatusServiceUnavailable)
		return
	}
	ws, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		h.log.Info("worker link upgrade failed", slog.String("worker_id", workerID), slog.Any("err", err))
		return
	}
	ws.SetReadLimit(messages.MaxFrameBytes)
	props := actors.NewWorkerConnProps(h.deps, ws, workerID, h.logs)
	if _, err := h.member.System.Root.RequestFuture(h.links, &spawnLink{props: props}, 5*time.Second).Result(); err != nil {
		h.log.Warn("could not start a worker connection", slog.String("worker_id", workerID), slog.Any("err", err))
		_ = ws.Close()
	}
}
