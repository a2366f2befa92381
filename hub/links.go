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
// the hub's (one-for-one restarts); stopping it closes every link.
type linksActor struct{}

type spawnLink struct{ props *actor.Props }

func (l *linksActor) Receive(ctx actor.Context) {
	if m, ok := ctx.Message().(*spawnLink); ok {
		ctx.Respond(ctx.Spawn(m.props))
	}
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
