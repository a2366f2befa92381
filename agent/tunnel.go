package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gorilla/websocket"

	"github.com/paprika-hub/paprika/messages"
)

// CDP tunnels (the browser gateway, messages.TypeTunnelOpen). The hub asks
// for one per CDP client of an open session; the worker joins the lane's
// local DevTools socket to a socket of its own to its hub, one per
// tunnel, so a large CDP message never queues behind or in front of the
// link's heartbeats and logs, and each tunnel gets TCP's backpressure.
const (
	// tunnelBuffer sizes the sockets' read and write buffers.
	tunnelBuffer = 64 << 10
	// tunnelCopyBytes is the piece a message is copied in: a 20 MB
	// screenshot streams through without being held whole.
	tunnelCopyBytes = 64 << 10
	// maxTunnelMessage bounds one message read from either socket (the
	// hub's own bound, limits.cdp_max_message_bytes, defaults the same).
	maxTunnelMessage = 256 << 20
	// tunnelCloseWait bounds the close handshake of a tunnel's sockets.
	tunnelCloseWait = time.Second
	// laneHTTPTimeout bounds a read of the lane's /json endpoints.
	laneHTTPTimeout = 5 * time.Second
	// maxLaneJSON bounds what the agent reads of them.
	maxLaneJSON = 1 << 20
	// maxLaneProtocol bounds the read of the lane's /json/protocol
	// (Chromium 156 indents 1.6 MB of it; compacted it is 0.7 MB, which
	// has to fit one link frame).
	maxLaneProtocol = 8 << 20
)

// LaneDevTools is implemented by a Driver whose lanes speak CDP: the
// browser-level DevTools WebSocket URL of a lane's running browser, which
// the worker keeps to itself (tunnels dial it; no hub ever sees it).
type LaneDevTools interface {
	DevToolsURL(lane int) (string, bool)
}

// laneDevTools is lane's DevTools URL, or "" when its browser is not
// running or the driver has none.
func (a *Agent) laneDevTools(lane int) string {
	if d, ok := a.driver.(LaneDevTools); ok {
		if u, ok := d.DevToolsURL(lane); ok {
			return u
		}
	}
	return ""
}

// handleTunnelOpen starts one tunnel's goroutine. It runs on the link's
// reader and never blocks.
func (a *Agent) handleTunnelOpen(f messages.Frame) {
	a.mu.Lock()
	if a.stopping {
		a.mu.Unlock()
		return // the client's end is told by its attach timeout
	}
	s := a.sessions[f.SessionID]
	why, laneURL := "", ""
	parent := context.Background()
	switch {
	case s == nil:
		why = fmt.Sprintf("session %s is not open on worker %s", f.SessionID, a.id)
	case s.ctx.Err() != nil:
		why = fmt.Sprintf("session %s is closing", f.SessionID)
	default:
		laneURL = a.laneDevTools(s.lane)
		s.tunnels++
		s.tunnelWG.Add(1) // under mu, before the session's end can wait
		parent = s.ctx    // the tunnel ends with its session
	}
	a.sessWG.Add(1) // under mu, ordered before stop's wait by the stopping flag
	a.mu.Unlock()
	go a.runTunnel(parent, s, f.TunnelID, f.Target, laneURL, why)
}

// runTunnel is one tunnel's goroutine, owned through sessWG: it dials the
// lane and the hub, splices them until either side closes, the session
// ends or the agent stops, and closes both.
func (a *Agent) runTunnel(ctx context.Context, s *sessionRunner, tunnelID, target, laneURL, why string) {
	defer a.sessWG.Done()
	if s != nil && why == "" {
		defer func() {
			a.mu.Lock()
			s.tunnels--
			a.mu.Unlock()
			s.touch() // the worker's idle timer counts from the client's leaving
			s.tunnelWG.Done()
		}()
	}
	log := a.lg().With("tunnel_id", tunnelID)
	var lane *websocket.Conn
	if why == "" {
		u, err := laneTarget(laneURL, target)
		if err == nil {
			lane, err = dialLane(ctx, u)
		}
		if err != nil {
			why = "lane browser unreachable: " + err.Error()
		}
	}
	base := a.hubURL.Load()
	if base == nil {
		if lane != nil {
			_ = lane.Close()
		}
		return
	}
	u, err := tunnelURL(*base, a.ID(), tunnelID)
	var hub *websocket.Conn
	if err == nil {
		var resp *http.Response
		hub, resp, err = a.dialHub(ctx, u)
		if err != nil && resp != nil {
			err = fmt.Errorf("HTTP %d: %w", resp.StatusCode, err)
		}
	}
	if err != nil {
		log.Warn("tunnel: could not dial the hub", "err", err)
		if lane != nil {
			_ = lane.Close()
		}
		return
	}
	if why != "" {
		log.Info("tunnel refused", "why", why)
		closeSocket(hub, messages.CloseInternal, why)
		_ = hub.Close()
		return
	}
	log.Info("tunnel open", "target", target)
	code, reason := splice(ctx, lane, hub)
	log.Info("tunnel closed", "code", code, "reason", reason)
}

// laneTarget is the lane's DevTools socket for target (a page id), or the
// browser's when target is empty.
func laneTarget(laneURL, target string) (string, error) {
	u, err := url.Parse(laneURL)
	if err != nil || u.Scheme != "ws" || !strings.HasPrefix(u.Path, "/devtools/browser/") {
		return "", fmt.Errorf("lane browser not running (%s)", laneURL)
	}
	if target != "" {
		if !messages.ValidTarget(target) {
			return "", fmt.Errorf("target %q is no CDP target id", target)
		}
		u.Path = "/devtools/page/" + target
	}
	return u.String(), nil
}

func dialLane(ctx context.Context, u string) (*websocket.Conn, error) {
	d := websocket.Dialer{HandshakeTimeout: dialTimeout, ReadBufferSize: tunnelBuffer, WriteBufferSize: tunnelBuffer}
	dctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	c, _, err := d.DialContext(dctx, u, nil)
	return c, err
}

// sideEnd is how one direction of a splice ended.
type sideEnd struct {
	code   int
	reason string
}

// splice copies messages both ways, streaming, until one side closes or
// ctx ends; the close (code and reason) is passed to the other side. Both
// copying goroutines have ended when it returns.
func splice(ctx context.Context, lane, hub *websocket.Conn) (int, string) {
	lane.SetReadLimit(maxTunnelMessage)
	hub.SetReadLimit(maxTunnelMessage)
	ends := make(chan sideEnd, 2)
	go pump(lane, hub, "lane", ends)
	go pump(hub, lane, "hub", ends)
	var first sideEnd
	left := 2
	select {
	case first = <-ends:
		left--
	case <-ctx.Done():
		first = sideEnd{code: messages.CloseNormal, reason: "session closed on the worker"}
		if errors.Is(context.Cause(ctx), errAgentStopping) {
			first = sideEnd{code: messages.CloseGoingAway, reason: "worker is stopping"}
		}
	}
	code, reason := sendableClose(first)
	closeSocket(hub, code, reason)
	closeSocket(lane, code, reason)
	t := time.NewTimer(tunnelCloseWait)
	defer t.Stop()
	for left > 0 {
		select {
		case <-ends:
			left--
			continue
		case <-t.C:
		}
		break
	}
	_ = hub.Close()
	_ = lane.Close()
	for ; left > 0; left-- {
		<-ends // the closed sockets end the pumps at once
	}
	return code, reason
}

// pump copies src's messages to dst in pieces until src or dst fails.
func pump(src, dst *websocket.Conn, name string, ends chan<- sideEnd) {
	buf := make([]byte, tunnelCopyBytes)
	for {
		mt, r, err := src.NextReader()
		if err != nil {
			ends <- readEnd(err, name)
			return
		}
		w, err := dst.NextWriter(mt)
		if err == nil {
			_, err = io.CopyBuffer(struct{ io.Writer }{w}, r, buf) // the plain Writer: pieces of buf, never the whole message
			if cerr := w.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			var ce *websocket.CloseError
			if errors.As(err, &ce) || errors.Is(err, websocket.ErrReadLimit) {
				ends <- readEnd(err, name)
			} else {
				ends <- sideEnd{code: messages.CloseInternal, reason: "worker could not write the tunnel: " + err.Error()}
			}
			return
		}
	}
}

func readEnd(err error, name string) sideEnd {
	var ce *websocket.CloseError
	switch {
	case errors.As(err, &ce):
		return sideEnd{code: ce.Code, reason: ce.Text}
	case errors.Is(err, websocket.ErrReadLimit):
		return sideEnd{code: messages.CloseTooBig, reason: fmt.Sprintf("a CDP message over %d bytes", maxTunnelMessage)}
	}
	return sideEnd{code: websocket.CloseAbnormalClosure, reason: name + " connection lost"}
}

// sendableClose maps a close onto one a close frame may carry.
func sendableClose(e sideEnd) (int, string) {
	switch c := e.code; {
	case c == websocket.CloseNoStatusReceived:
		return messages.CloseNormal, e.reason
	case c >= 1000 && c <= 1003, c >= 1007 && c <= 1014, c >= 3000 && c <= 4999:
		return c, e.reason
	}
	return messages.CloseInternal, e.reason
}

func closeSocket(c *websocket.Conn, code int, reason string) {
	msg := websocket.FormatCloseMessage(code, messages.CloseReason(reason))
	_ = c.WriteControl(websocket.CloseMessage, msg, time.Now().Add(tunnelCloseWait))
}

// laneHTTP reads one of the lane browser's /json endpoints, up to
// maxLaneJSON bytes of it.
func laneHTTP(ctx context.Context, laneURL, path string, v any) error {
	return laneHTTPLimit(ctx, laneURL, path, v, maxLaneJSON)
}

func laneHTTPLimit(ctx context.Context, laneURL, path string, v any, limit int64) error {
	u, err := url.Parse(laneURL)
	if err != nil || u.Scheme != "ws" {
		return fmt.Errorf("lane browser not running (%s)", laneURL)
	}
	ctx, cancel := context.WithTimeout(ctx, laneHTTPTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+u.Host+path, nil)
	if err != nil {
		return err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("lane %s: %w", path, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("lane %s: HTTP %d", path, res.StatusCode)
	}
	if err := json.NewDecoder(io.LimitReader(res.Body, limit)).Decode(v); err != nil {
		return fmt.Errorf("lane %s: %w", path, err)
	}
	return nil
}

// laneVersion is what the lane's /json/version says of its browser,
// without its URL (the hub hands out its own).
func laneVersion(ctx context.Context, laneURL string) map[string]string {
	var v map[string]any
	if laneHTTP(ctx, laneURL, "/json/version", &v) != nil {
		return nil
	}
	out := map[string]string{}
	for _, k := range []string{"Browser", "Protocol-Version", "User-Agent", "V8-Version", "WebKit-Version"} {
		if s, ok := v[k].(string); ok {
			out[k] = s
		}
	}
	return out
}

// sessionTargets answers the hub's cdp_targets: the lane's /json/list.
// It runs on a goroutine of its own (owned through sessWG).
func (a *Agent) sessionTargets(l *link, f messages.Frame) {
	a.laneJSONReply(l, f, func(ctx context.Context, laneURL string) (json.RawMessage, error) {
		var list []map[string]any
		if err := laneHTTP(ctx, laneURL, "/json/list", &list); err != nil {
			return nil, err
		}
		for _, t := range list { // the hub hands out its own URLs
			delete(t, "webSocketDebuggerUrl")
			delete(t, "devtoolsFrontendUrl")
		}
		return json.Marshal(list)
	})
}

// sessionProtocol answers the hub's cdp_protocol: the lane's
// /json/protocol, compacted.
func (a *Agent) sessionProtocol(l *link, f messages.Frame) {
	a.laneJSONReply(l, f, func(ctx context.Context, laneURL string) (json.RawMessage, error) {
		var raw json.RawMessage
		if err := laneHTTPLimit(ctx, laneURL, "/json/protocol", &raw, maxLaneProtocol); err != nil {
			return nil, err
		}
		var b bytes.Buffer
		if err := json.Compact(&b, raw); err != nil {
			return nil, fmt.Errorf("lane /json/protocol: %w", err)
		}
		return b.Bytes(), nil
	})
}

// laneJSONReply answers a session op from the lane's HTTP endpoints
// (read) on a goroutine of its own, owned through sessWG: the link's
// reader never waits for the browser.
func (a *Agent) laneJSONReply(l *link, f messages.Frame, read func(ctx context.Context, laneURL string) (json.RawMessage, error)) {
	a.mu.Lock()
	s := a.sessions[f.SessionID]
	if s == nil || a.stopping {
		a.mu.Unlock()
		replySession(l, f.SessionID, f.CommandID, nil, fmt.Errorf("no session %s on this worker", f.SessionID))
		return
	}
	laneURL := a.laneDevTools(s.lane)
	a.sessWG.Add(1)
	a.mu.Unlock()
	go func() {
		defer a.sessWG.Done()
		b, err := read(s.ctx, laneURL)
		if err == nil && len(b) > maxSessionResultBytes {
			err = fmt.Errorf("the lane's answer of %d bytes exceeds the link's limit of %d", len(b), maxSessionResultBytes)
		}
		replySession(l, f.SessionID, f.CommandID, b, err)
	}()
}
