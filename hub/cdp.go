package hub

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/gorilla/websocket"

	"github.com/paprika-hub/paprika/actors/tunnel"
	"github.com/paprika-hub/paprika/api"
	"github.com/paprika-hub/paprika/messages"
	"github.com/paprika-hub/paprika/persistence"
)

// The browser gateway's assembly: the tunnel ends live under this hub's
// tunnels actor; the session grain (any hub) vouches for each tunnel.

// tunnelTouchEvery is how often a client end tells its session it is
// still attached: within the session's record touch interval, so a grain
// that moved learns the tunnel before the session could idle out.
const tunnelTouchEvery = 3 * time.Second

// tunnelStopWait bounds the wait for the tunnel ends at shutdown.
const tunnelStopWait = 2 * time.Second

var cdpUpgrader = websocket.Upgrader{
	ReadBufferSize:  64 << 10,
	WriteBufferSize: 64 << 10,
	// The API checked the Origin already (api.checkOrigin); workers send none.
	CheckOrigin: func(*http.Request) bool { return true },
}

func (h *Hub) maxCDPMessage() int64 { return int64(h.cfg.Limits.CDPMaxMessageBytes) }

// OpenCDP implements api.Backend: a client end on this hub, vouched for
// by the session's grain, which tells the worker.
func (h *Hub) OpenCDP(ctx context.Context, o api.CDPOpen) (api.CDPTunnel, error) {
	tid := messages.NewTunnelID(o.SessionID)
	front := h.Front
	pid, err := h.tunnels.Spawn(tunnel.Config{
		Role: tunnel.RoleClient, TunnelID: tid, Log: h.log.With(slog.String("session_id", o.SessionID)),
		MaxMessageBytes: h.maxCDPMessage(), TouchEvery: tunnelTouchEvery,
		Touch:  func(ctx actor.Context) { front.TouchTunnel(ctx, tid, ctx.Self()) },
		OnStop: func(ctx actor.Context) { front.EndTunnel(ctx, tid, o.CloseSession) },
	})
	if errors.Is(err, tunnel.ErrStopping) {
		return nil, api.Errorf(http.StatusServiceUnavailable, "hub_shutdown", "this hub is shutting down; connect through another")
	}
	if err != nil {
		return nil, err
	}
	if err := h.OpenTunnel(ctx, o.SessionID, tid, pid, o.Target); err != nil {
		h.member.System.Root.Stop(pid)
		return nil, err
	}
	return &clientTunnel{h: h, pid: pid}, nil
}

type clientTunnel struct {
	h   *Hub
	pid *actor.PID
}

func (t *clientTunnel) Serve(w http.ResponseWriter, r *http.Request) {
	ws, err := cdpUpgrader.Upgrade(w, r, nil)
	if err != nil {
		t.h.log.Info("CDP client upgrade failed", slog.Any("err", err))
		t.Cancel()
		return
	}
	t.h.member.System.Root.Send(t.pid, &tunnel.Socket{Conn: ws})
}

func (t *clientTunnel) Cancel() { t.h.member.System.Root.Stop(t.pid) }

// AttachCDP implements api.Backend: the worker's tunnel socket, once the
// session's grain names the client end it joins.
func (h *Hub) AttachCDP(ctx context.Context, workerID, tunnelID string) (api.CDPTunnel, error) {
	client, err := h.AttachTunnel(ctx, tunnelID, workerID)
	if err != nil {
		return nil, err
	}
	return &workerTunnel{h: h, id: tunnelID, client: client}, nil
}

type workerTunnel struct {
	h      *Hub
	id     string
	client *actor.PID
}

func (t *workerTunnel) Serve(w http.ResponseWriter, r *http.Request) {
	ws, err := cdpUpgrader.Upgrade(w, r, nil)
	if err != nil {
		t.Cancel()
		return
	}
	_, err = t.h.tunnels.Spawn(tunnel.Config{Role: tunnel.RoleWorker, TunnelID: t.id, Log: t.h.log,
		Conn: ws, Peer: t.client, MaxMessageBytes: t.h.maxCDPMessage()})
	if err != nil {
		reason := messages.CloseReason("hub could not start the tunnel: " + err.Error())
		_ = ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(messages.CloseInternal, reason), time.Now().Add(time.Second))
		_ = ws.Close()
		t.Cancel()
	}
}

// Cancel tells the client end no worker end comes.
func (t *workerTunnel) Cancel() {
	t.h.member.System.Root.Send(t.client, &messages.TunnelClose{Code: messages.CloseInternal, Reason: "the worker's tunnel socket failed"})
}

// maxCachedProtocols bounds the browser versions whose /json/protocol a
// hub keeps (0.7 MB each): a fleet runs a few versions at a time.
const maxCachedProtocols = 4

// protocolCache holds each browser version's /json/protocol: the same for
// every lane of one version, so a worker's link carries it once per
// version and hub instead of 0.7 MB per request.
type protocolCache struct {
	mu sync.Mutex
	m  map[string]json.RawMessage
}

func (c *protocolCache) get(key string) json.RawMessage {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[key]
}

func (c *protocolCache) put(key string, v json.RawMessage) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]json.RawMessage{}
	}
	if _, ok := c.m[key]; !ok && len(c.m) >= maxCachedProtocols {
		clear(c.m) // versions change rarely: starting over is simplest
	}
	c.m[key] = v
}

// SessionProtocol implements api.Backend: the lane's /json/protocol,
// asked of the worker like a session command the first time a browser
// version is asked for, then kept by version.
func (h *Hub) SessionProtocol(ctx context.Context, id string) (json.RawMessage, error) {
	raw, err := h.Session(ctx, id)
	if err != nil {
		return nil, err
	}
	var sess struct {
		Status  string            `json:"status"`
		Reason  string            `json:"reason"`
		Browser map[string]string `json:"browser"`
	}
	_ = json.Unmarshal(raw, &sess)
	if sess.Status != persistence.SessionOpen {
		return nil, api.Errorf(http.StatusGone, "session_closed", "session %s is %s: %s", id, sess.Status, sess.Reason)
	}
	// The protocol is the browser build's: its version strings name it.
	key := sess.Browser["Browser"] + " " + sess.Browser["V8-Version"] + " " + sess.Browser["WebKit-Version"]
	if sess.Browser["Browser"] != "" {
		if p := h.protocols.get(key); p != nil {
			return p, nil
		}
	}
	p, err := h.SessionCommand(ctx, id, json.RawMessage(`{"op":"`+messages.OpProtocol+`"}`))
	if err != nil {
		return nil, err
	}
	if !json.Valid(p) {
		return nil, api.Errorf(http.StatusBadGateway, "bad_protocol", "the worker's protocol description is not JSON")
	}
	if sess.Browser["Browser"] != "" {
		h.protocols.put(key, p)
	}
	return p, nil
}

// SessionTargets implements api.Backend: the lane's /json/list, asked of
// the worker like a session command.
func (h *Hub) SessionTargets(ctx context.Context, id string) (json.RawMessage, error) {
	return h.SessionCommand(ctx, id, json.RawMessage(`{"op":"`+messages.OpTargets+`"}`))
}
