package grains

import (
	"encoding/json"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/paprika-hub/paprika/actors/supervise"
	"github.com/paprika-hub/paprika/messages"
)

// A session's CDP tunnels (the browser gateway). The grain vouches for
// each: it opens one only on an open session, bounded in number, tells
// the session's worker (tunnel_open), and answers the worker's hub with
// the client end only for the session's own worker. Bytes never pass
// through the grain: the two tunnel ends talk directly (actors/tunnel).

// sessionTunnel is one tunnel the grain opened.
type sessionTunnel struct {
	client   *actor.PID // the client end, on the hub holding the client's socket
	attached bool       // the worker's hub asked for it
	stop     supervise.Stop
}

// tunnelAttachWait is how long the grain keeps a tunnel the worker never
// dialled for: longer than the client end's own wait (10 s), so the
// client is told by its end, not by a vanished record.
const tunnelAttachWait = 15 * time.Second

// defaultCDPTunnels is limits.cdp_tunnels_per_session's default.
const defaultCDPTunnels = 8

type tunnelAttachTimeout struct{ id string }

// SessionTunnelClaim is the JSON of a SessionTunnelAttach answer: the
// client end the worker's hub connects its end to.
type SessionTunnelClaim struct {
	Address string `json:"address"`
	ID      string `json:"id"`
}

func (g *sessionGrain) notOpen(ctx actor.Context) bool {
	if g.s.Status == SessionOpen {
		return false
	}
	code := messages.CodeNotFound
	if g.s.Status == SessionClosed {
		code = messages.CodeClosed
	}
	reply(ctx, fail(code, "session %s is not open (%s)", g.id, g.s.Reason))
	return true
}

func (g *sessionGrain) tunnelOpen(ctx actor.Context, m *messages.SessionTunnelOpen) {
	if g.notOpen(ctx) {
		return
	}
	client := pidOf(m.Client)
	sid, isTunnel := messages.TunnelSession(m.TunnelId)
	switch {
	case !isTunnel || sid != g.id || client == nil:
		reply(ctx, fail(messages.CodeBadCommand, "tunnel %q is not one of session %s", m.TunnelId, g.id))
		return
	case m.Target != "" && !messages.ValidTarget(m.Target):
		reply(ctx, fail(messages.CodeBadCommand, "target %q is no CDP target id", m.Target))
		return
	case g.tunnels[m.TunnelId] != nil:
		reply(ctx, fail(messages.CodeConflict, "tunnel %s exists", m.TunnelId))
		return
	}
	limit := g.deps.Timing.CDPTunnels
	if limit <= 0 {
		limit = defaultCDPTunnels
	}
	if len(g.tunnels) >= limit {
		reply(ctx, fail(messages.CodeTooMany, "session %s has %d CDP clients, the most limits.cdp_tunnels_per_session allows", g.id, len(g.tunnels)))
		return
	}
	frame, err := messages.Frame{Type: messages.TypeTunnelOpen, SessionID: g.id, TunnelID: m.TunnelId, Target: m.Target}.Encode()
	if err != nil {
		reply(ctx, fail(messages.CodeBadCommand, "%v", err))
		return
	}
	g.tunnels[m.TunnelId] = &sessionTunnel{client: client, stop: g.timers.After(tunnelAttachWait, &tunnelAttachTimeout{id: m.TunnelId})}
	g.touch()
	Send(ctx, g.cl, g.s.WorkerID, KindWorker, &messages.WorkerForward{Frame: frame})
	reply(ctx, ok(nil))
}

// tunnelAttach answers the hub the worker dialled: the client end, when
// the worker is the session's own. Another worker's claim is refused and
// counted: it would read and drive someone else's browser.
func (g *sessionGrain) tunnelAttach(ctx actor.Context, m *messages.SessionTunnelAttach) {
	if g.s.ID != "" && m.WorkerId != g.s.WorkerID {
		g.deps.Metrics.FencedReports.WithLabelValues("tunnel_attach").Inc()
		g.log.Warn("tunnel claimed by a worker not holding the session; refused", slog.String("from", m.WorkerId),
			slog.String("tunnel_id", m.TunnelId))
		reply(ctx, fail(messages.CodeNotHolder, "worker %s does not hold session %s", m.WorkerId, g.id))
		return
	}
	if g.notOpen(ctx) {
		return
	}
	t := g.tunnels[m.TunnelId]
	switch {
	case t == nil:
		reply(ctx, fail(messages.CodeNotFound, "no tunnel %s waits on session %s", m.TunnelId, g.id))
		return
	case t.attached:
		reply(ctx, fail(messages.CodeConflict, "tunnel %s is attached already", m.TunnelId))
		return
	}
	t.attached = true
	t.stop()
	g.touch()
	b, _ := json.Marshal(SessionTunnelClaim{Address: t.client.Address, ID: t.client.Id})
	reply(ctx, ok(b))
}

// tunnelTouch: the client end of an open tunnel says it is still there.
// A grain that moved since learns the tunnel again; one whose session
// ended closes it.
func (g *sessionGrain) tunnelTouch(ctx actor.Context, m *messages.SessionTunnelTouch) {
	client := pidOf(m.Client)
	if g.s.Status != SessionOpen {
		if client != nil {
			ctx.Send(client, &messages.TunnelClose{Code: messages.CloseNormal, Reason: tunnelClosedReason(g.s.Reason)})
		}
		return
	}
	if t := g.tunnels[m.TunnelId]; t == nil && client != nil {
		if sid, isTunnel := messages.TunnelSession(m.TunnelId); isTunnel && sid == g.id {
			g.tunnels[m.TunnelId] = &sessionTunnel{client: client, attached: true, stop: func() {}}
		}
	}
	g.touch()
}

func (g *sessionGrain) tunnelEnd(_ actor.Context, m *messages.SessionTunnelEnd) {
	t := g.tunnels[m.TunnelId]
	if t == nil {
		return
	}
	t.stop()
	delete(g.tunnels, m.TunnelId)
	if g.s.Status == SessionOpen {
		g.touch() // the idle timeout counts from the client's leaving
	}
}

func (g *sessionGrain) tunnelExpire(m *tunnelAttachTimeout) {
	if t := g.tunnels[m.id]; t != nil && !t.attached {
		delete(g.tunnels, m.id)
	}
}

// closeTunnels tells every client end the session ended.
func (g *sessionGrain) closeTunnels(ctx actor.Context, reason string) {
	for id, t := range g.tunnels {
		t.stop()
		ctx.Send(t.client, &messages.TunnelClose{Code: messages.CloseNormal, Reason: tunnelClosedReason(reason)})
		delete(g.tunnels, id)
	}
}

func tunnelClosedReason(reason string) string {
	if reason == "" {
		return "session closed"
	}
	return messages.CloseReason("session closed: " + reason)
}

func (g *sessionGrain) attachedTunnels() int {
	n := 0
	for _, t := range g.tunnels {
		if t.attached {
			n++
		}
	}
	return n
}

// browserKeys are the /json/version fields a session keeps of its lane.
var browserKeys = []string{"Browser", "Protocol-Version", "User-Agent", "V8-Version", "WebKit-Version"}

// boundBrowser keeps the known version fields a worker reported, each
// bounded: the worker is not trusted with the session object's size.
func boundBrowser(in map[string]string) map[string]string {
	if len(in) == 0 {
		return nil
	}
	out := map[string]string{}
	for _, k := range browserKeys {
		if v, ok := in[k]; ok && v != "" {
			if len(v) > 512 {
				v = v[:512]
			}
			out[k] = v
		}
	}
	return out
}
