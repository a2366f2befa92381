package hub

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/gorilla/websocket"

	"github.com/paprika-hub/paprika/actors/grains"
	"github.com/paprika-hub/paprika/actors/live"
	"github.com/paprika-hub/paprika/api"
	"github.com/paprika-hub/paprika/messages"
	"github.com/paprika-hub/paprika/persistence"
)

// The live view's assembly: viewer and source actors live under this
// hub's live actor; the lane's live grain (any hub) joins them.

var liveUpgrader = websocket.Upgrader{
	ReadBufferSize:  4 << 10,
	WriteBufferSize: 64 << 10,
	// The API checked the Origin already; workers send none.
	CheckOrigin: func(*http.Request) bool { return true },
}

func (h *Hub) liveCall(ctx context.Context, identity string, msg any) error {
	r, err := grains.CallContext(ctx, h.member.Cluster, identity, grains.KindLive, msg, h.deps.Timing.GrainTimeout)
	if err != nil {
		return fmt.Errorf("live %s: %w: %w", identity, persistence.ErrUnavailable, err)
	}
	if r.Ok {
		return nil
	}
	switch messages.Code(r.Code) {
	case messages.CodeNotFound:
		return api.Errorf(http.StatusNotFound, "not_found", "%s", r.Message)
	case messages.CodeNotHolder:
		return api.Errorf(http.StatusForbidden, string(messages.CodeNotHolder), "%s", r.Message)
	case messages.CodeConflict:
		return api.Errorf(http.StatusConflict, "conflict", "%s", r.Message)
	case messages.CodeBadCommand:
		return api.Errorf(http.StatusBadRequest, "bad_live", "%s", r.Message)
	}
	return api.Errorf(http.StatusBadGateway, r.Code, "%s", r.Message)
}

func (h *Hub) liveGrain(identity string) (*actor.PID, error) {
	pid := h.member.Cluster.Get(identity, grains.KindLive)
	if pid == nil {
		return nil, fmt.Errorf("live %s: no activation: %w", identity, persistence.ErrUnavailable)
	}
	return pid, nil
}

func liveSpawnErr(err error) error {
	if errors.Is(err, live.ErrStopping) {
		return api.Errorf(http.StatusServiceUnavailable, "hub_shutdown", "this hub is shutting down; connect through another")
	}
	return err
}

// OpenLive implements api.Backend: a viewer actor on this hub, joined to
// the lane's live grain, which asks the worker for the screencast when
// it is the first viewer.
func (h *Hub) OpenLive(ctx context.Context, o api.LiveOpen) (api.CDPTunnel, error) {
	identity := messages.LiveIdentity(o.Kind, o.ID)
	g, err := h.liveGrain(identity)
	if err != nil {
		return nil, err
	}
	pid, err := h.live.SpawnViewer(live.ViewerConfig{Identity: identity, Grain: g, Control: o.Control,
		Log: h.log.With(slog.String(o.Kind+"_id", o.ID)), Metrics: h.deps.Metrics.Live})
	if err != nil {
		return nil, liveSpawnErr(err)
	}
	join := &messages.LiveJoin{Viewer: grains.RefOf(pid), WorkerId: o.WorkerID, Kind: o.Kind, TargetId: o.ID, Control: o.Control}
	if err := h.liveCall(ctx, identity, join); err != nil {
		h.member.System.Root.Stop(pid)
		return nil, err
	}
	return &liveSocket{h: h, pid: pid}, nil
}

// AttachLive implements api.Backend: the worker's screencast socket, when
// the lane's live grain asked this worker for liveID.
func (h *Hub) AttachLive(ctx context.Context, workerID, liveID string) (api.CDPTunnel, error) {
	identity, _, _, ok := messages.ParseLiveID(liveID)
	if !ok {
		return nil, api.Errorf(http.StatusBadRequest, "bad_id", "%q is no live id", liveID)
	}
	g, err := h.liveGrain(identity)
	if err != nil {
		return nil, err
	}
	pid, err := h.live.SpawnSource(live.SourceConfig{LiveID: liveID, Grain: g,
		Log: h.log.With(slog.String("worker_id", workerID)), Metrics: h.deps.Metrics.Live})
	if err != nil {
		return nil, liveSpawnErr(err)
	}
	if err := h.liveCall(ctx, identity, &messages.LiveAttach{LiveId: liveID, WorkerId: workerID, Source: grains.RefOf(pid)}); err != nil {
		h.member.System.Root.Stop(pid)
		return nil, err
	}
	return &liveSocket{h: h, pid: pid}, nil
}

// liveSocket upgrades a request onto a viewer or source actor.
type liveSocket struct {
	h   *Hub
	pid *actor.PID
}

func (t *liveSocket) Serve(w http.ResponseWriter, r *http.Request) {
	ws, err := liveUpgrader.Upgrade(w, r, nil)
	if err != nil {
		t.h.log.Info("live view upgrade failed", slog.Any("err", err))
		t.Cancel()
		return
	}
	_ = ws.SetReadDeadline(time.Time{})
	t.h.live.Send(t.pid, &live.Socket{Conn: ws})
}

func (t *liveSocket) Cancel() { t.h.member.System.Root.Stop(t.pid) }
