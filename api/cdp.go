package api

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/paprika-hub/paprika/messages"
)

// The browser gateway: standard CDP clients (Puppeteer's connect,
// Playwright's connectOverCDP, chromedp's NewRemoteAllocator) drive a
// session's lane through any hub. The bytes travel client → this hub →
// (cluster) → the hub holding the worker's tunnel socket → worker → lane;
// every URL handed out points at a hub, never at a worker.

// CDPTunnel is a tunnel the session's grain accepted; Serve upgrades the
// request's socket onto it (the tunnel owns the socket from then on), and
// Cancel gives it up when the handler does not upgrade.
type CDPTunnel interface {
	Serve(w http.ResponseWriter, r *http.Request)
	Cancel()
}

// CDPOpen is what a client asks of a tunnel.
type CDPOpen struct {
	SessionID string
	// Target is a page target of the lane (…/cdp/page/{target}); empty
	// is the browser, as /devtools/browser/<id> speaks.
	Target string
	// CloseSession closes the session when the client goes (GET /cdp).
	CloseSession bool
}

// cdpRoutes adds the gateway's routes. They take the API token in the
// Authorization header or as ?token= (many WebSocket clients cannot set
// headers), and answer every refusal before the upgrade.
func (s *Server) cdpRoutes() {
	cdp := func(pattern string, h http.HandlerFunc) {
		s.mux.Handle(pattern, s.limitRate(s.cdpAuth(h)))
	}
	cdp("GET /sessions/{id}/cdp", s.sessionCDP)
	cdp("GET /sessions/{id}/cdp/page/{target}", s.sessionCDP)
	for _, p := range []string{"/json/version", "/json/version/"} {
		cdp("GET /sessions/{id}"+p, s.cdpVersion)
	}
	for _, p := range []string{"/json", "/json/", "/json/list", "/json/list/"} {
		cdp("GET /sessions/{id}"+p, s.cdpList)
	}
	for _, p := range []string{"/json/protocol", "/json/protocol/"} {
		cdp("GET /sessions/{id}"+p, s.cdpProtocol)
	}
	cdp("GET /cdp", s.cdpOneStep)
	s.mux.Handle("GET /workers/{id}/tunnels/{tunnel}", s.workerAuth(s.workerTunnel))
}

// cdpAuth is auth for the gateway: the bearer header or ?token=.
func (s *Server) cdpAuth(next http.Handler) http.Handler {
	token := s.opts.APIToken
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if token == "" || hasToken(r, token) || queryToken(r, token) {
			next.ServeHTTP(w, r)
			return
		}
		writeError(w, Errorf(http.StatusUnauthorized, "unauthorized", "a valid API token is required (Authorization: Bearer, or ?token=)"))
	})
}

func queryToken(r *http.Request, token string) bool {
	got := r.URL.Query().Get("token")
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(token)) == 1
}

// checkOrigin refuses a WebSocket request a web page sent (it carries an
// Origin) unless the page is the hub's own: WebSockets are not bound by
// CORS, so without it any site the operator visits could drive an open
// hub's browsers. Chromium's own DevTools port refuses such requests the
// same way; CDP client libraries send no Origin.
func checkOrigin(r *http.Request) error {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return nil
	}
	u, err := url.Parse(origin)
	if err == nil && strings.EqualFold(u.Host, r.Host) {
		return nil
	}
	return Errorf(http.StatusForbidden, "bad_origin", "a WebSocket from origin %q is refused: CDP clients send no Origin", origin)
}

func (s *Server) sessionCDP(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	target := r.PathValue("target")
	if r.Pattern != "" && strings.Contains(r.Pattern, "{target}") && !messages.ValidTarget(target) {
		writeError(w, Errorf(http.StatusBadRequest, "bad_target", "target %q: use 1-128 of A-Z a-z 0-9 . _ -", target))
		return
	}
	s.serveCDP(w, r, CDPOpen{SessionID: id, Target: target})
}

// serveCDP opens the tunnel (refusals answered as HTTP) and upgrades.
func (s *Server) serveCDP(w http.ResponseWriter, r *http.Request, o CDPOpen) {
	if err := checkOrigin(r); err != nil {
		writeError(w, err)
		return
	}
	if !websocketRequest(r) {
		writeError(w, Errorf(http.StatusBadRequest, "not_websocket", "%s is a WebSocket (CDP); connect with a CDP client", r.URL.Path))
		return
	}
	t, err := s.b.OpenCDP(r.Context(), o)
	if err != nil {
		writeError(w, err)
		return
	}
	t.Serve(w, r)
}

func websocketRequest(r *http.Request) bool {
	return strings.EqualFold(r.Header.Get("Upgrade"), "websocket")
}

// cdpVersion answers as Chromium's /json/version does, with the
// debugger URL on this hub.
func (s *Server) cdpVersion(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	raw, err := s.b.Session(r.Context(), id)
	if err != nil {
		writeError(w, err)
		return
	}
	var sess struct {
		Status  string            `json:"status"`
		Reason  string            `json:"reason"`
		Browser map[string]string `json:"browser"`
	}
	_ = json.Unmarshal(raw, &sess)
	if sess.Status != "open" {
		writeError(w, Errorf(http.StatusGone, "session_closed", "session %s is %s: %s", id, sess.Status, sess.Reason))
		return
	}
	out := map[string]string{"Browser": "HeadlessChrome", "Protocol-Version": "1.3"}
	for k, v := range sess.Browser {
		out[k] = v
	}
	out["webSocketDebuggerUrl"] = s.cdpURL(r, id, "")
	writeJSON(w, http.StatusOK, out)
}

// cdpList answers as Chromium's /json/list does: the lane's targets, each
// page's debugger URL a page-level tunnel through this hub.
func (s *Server) cdpList(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	raw, err := s.b.SessionTargets(r.Context(), id)
	if err != nil {
		writeError(w, err)
		return
	}
	var targets []map[string]any
	if err := json.Unmarshal(raw, &targets); err != nil {
		writeError(w, Errorf(http.StatusBadGateway, "bad_targets", "the worker's target list does not decode: %v", err))
		return
	}
	out := make([]map[string]any, 0, len(targets))
	for _, t := range targets {
		tid, _ := t["id"].(string)
		if !messages.ValidTarget(tid) {
			continue
		}
		e := map[string]any{"id": tid}
		for _, k := range []string{"type", "title", "url", "description", "faviconUrl", "parentId"} {
			if v, ok := t[k].(string); ok {
				e[k] = v
			}
		}
		e["webSocketDebuggerUrl"] = s.cdpURL(r, id, tid)
		out = append(out, e)
	}
	writeJSON(w, http.StatusOK, out)
}

// cdpProtocol answers as Chromium's /json/protocol does: the lane
// browser's protocol description (domains, commands, events, types).
func (s *Server) cdpProtocol(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	raw, err := s.b.SessionProtocol(r.Context(), id)
	if err != nil {
		writeError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(raw)
}

// cdpURL is the ws(s):// URL of session id's tunnel on this hub (a page
// target's when target is set), with the query token when the request
// authenticated by one.
func (s *Server) cdpURL(r *http.Request, id, target string) string {
	u := s.wsBase(r) + "/sessions/" + id + "/cdp"
	if target != "" {
		u += "/page/" + target
	}
	if s.opts.APIToken != "" && queryToken(r, s.opts.APIToken) {
		u += "?token=" + url.QueryEscape(r.URL.Query().Get("token"))
	}
	return u
}

// wsBase is this hub's advertised address as ws:// or wss://:
// hub.advertise_url, else the listen address — or, when that names no
// host (":8080", "0.0.0.0"), the host the client reached.
func (s *Server) wsBase(r *http.Request) string {
	base := s.b.URL()
	u, err := url.Parse(base)
	if err != nil || u.Host == "" {
		u = &url.URL{Scheme: "http", Host: r.Host}
		if r.TLS != nil {
			u.Scheme = "https"
		}
	} else if host := u.Hostname(); host == "" || net.ParseIP(host) != nil && net.ParseIP(host).IsUnspecified() {
		u.Host = r.Host
	}
	switch u.Scheme {
	case "https", "wss":
		u.Scheme = "wss"
	default:
		u.Scheme = "ws"
	}
	return strings.TrimSuffix(u.String(), "/")
}

// withCDPURL adds cdp_url to a session object.
func (s *Server) withCDPURL(r *http.Request, sess json.RawMessage) json.RawMessage {
	var obj map[string]json.RawMessage
	if json.Unmarshal(sess, &obj) != nil {
		return sess
	}
	var id string
	if json.Unmarshal(obj["id"], &id) != nil || id == "" {
		return sess
	}
	obj["cdp_url"], _ = json.Marshal(s.cdpURL(r, id, ""))
	b, err := json.Marshal(obj)
	if err != nil {
		return sess
	}
	return b
}

// SessionOpen is a session's opening options, from a POST /sessions body
// or a GET /cdp query.
type SessionOpen struct {
	Labels       map[string]string
	IdleTimeoutS int
	Options      messages.BrowserOptions
}

// defaultCDPIdleTimeoutS is GET /cdp's idle timeout: its session closes
// when the client goes, so this only bounds a session whose hub died
// with the client's socket.
const defaultCDPIdleTimeoutS = 60

// sessionOpenFromQuery reads GET /cdp's options: idle_timeout_s, labels
// (a JSON object) and the browser options (proxy, viewport, cookies and
// block as JSON; user_agent, locale, timezone). Every option of the query is parsed here, so that the
// one-step gateway and POST /sessions take the same options.
func (s *Server) sessionOpenFromQuery(q url.Values) (SessionOpen, error) {
	o := SessionOpen{IdleTimeoutS: defaultCDPIdleTimeoutS}
	if v := q.Get("idle_timeout_s"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return o, Errorf(http.StatusBadRequest, "bad_idle_timeout", "idle_timeout_s %q is not a number", v)
		}
		o.IdleTimeoutS = n
	}
	if o.IdleTimeoutS < 1 || o.IdleTimeoutS > maxIdleTimeoutS {
		return o, Errorf(http.StatusBadRequest, "bad_idle_timeout", "idle_timeout_s %d is out of range 1..%d", o.IdleTimeoutS, maxIdleTimeoutS)
	}
	if v := q.Get("labels"); v != "" {
		if err := json.Unmarshal([]byte(v), &o.Labels); err != nil {
			return o, Errorf(http.StatusBadRequest, "bad_labels", "labels must be a JSON object of strings: %v", err)
		}
	}
	if err := s.limits.checkLabels(o.Labels); err != nil {
		return o, err
	}
	// The browser options as POST /sessions takes them: strings as they
	// are, objects and lists as JSON.
	o.Options.UserAgent, o.Options.Locale, o.Options.Timezone = q.Get("user_agent"), q.Get("locale"), q.Get("timezone")
	for name, dst := range map[string]any{"proxy": &o.Options.Proxy, "viewport": &o.Options.Viewport,
		"cookies": &o.Options.Cookies, "block": &o.Options.Block} {
		v := q.Get(name)
		if v == "" {
			continue
		}
		dec := json.NewDecoder(strings.NewReader(v))
		dec.DisallowUnknownFields()
		if err := decodeBody(dec, dst); err != nil {
			e := Errorf(http.StatusBadRequest, "bad_option", "%s: must be JSON as in POST /sessions: %v", name, err)
			e.Extra = map[string]any{"field": name}
			return o, e
		}
	}
	if err := checkOptions(o.Options, ""); err != nil {
		return o, err
	}
	return o, nil
}

// cdpOneStep is GET /cdp: a session on a free lane for as long as the
// client stays connected, as Browserless does.
func (s *Server) cdpOneStep(w http.ResponseWriter, r *http.Request) {
	if err := checkOrigin(r); err != nil {
		writeError(w, err)
		return
	}
	if !websocketRequest(r) {
		writeError(w, Errorf(http.StatusBadRequest, "not_websocket", "/cdp is a WebSocket (CDP); connect with a CDP client"))
		return
	}
	o, err := s.sessionOpenFromQuery(r.URL.Query())
	if err != nil {
		writeError(w, err)
		return
	}
	raw, err := s.b.OpenSession(r.Context(), o.Labels, o.IdleTimeoutS, o.Options)
	if err != nil {
		writeError(w, err)
		return
	}
	var sess struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(raw, &sess); err != nil || sess.ID == "" {
		writeError(w, fmt.Errorf("open session: answer %q: %w", raw, err))
		return
	}
	t, err := s.b.OpenCDP(r.Context(), CDPOpen{SessionID: sess.ID, CloseSession: true})
	if err != nil {
		// The session is of no use without its client.
		_, _ = s.b.CloseSession(context.WithoutCancel(r.Context()), sess.ID)
		writeError(w, err)
		return
	}
	t.Serve(w, r)
}

// workerTunnel is a worker's dedicated socket for one tunnel.
func (s *Server) workerTunnel(w http.ResponseWriter, r *http.Request, workerID string) {
	s.workerSocket(w, r, workerID, "tunnel", s.b.AttachCDP)
}

// workerSocket admits a worker's dedicated socket (a tunnel's, a
// screencast's) like its link: its credential, bound to the id in the
// path; attach claims the socket named by the path value sub.
func (s *Server) workerSocket(w http.ResponseWriter, r *http.Request, workerID, sub string,
	attach func(ctx context.Context, workerID, socketID string) (CDPTunnel, error)) {
	id := r.PathValue("id")
	if !validID(id) {
		writeError(w, Errorf(http.StatusBadRequest, "bad_id", "worker id %q: use 1-64 of A-Z a-z 0-9 _ -", id))
		return
	}
	if workerID != "" && workerID != id {
		writeError(w, Errorf(http.StatusUnauthorized, "unauthorized", "this credential is not worker %s's", id))
		return
	}
	t, err := attach(r.Context(), id, r.PathValue(sub))
	if err != nil {
		writeError(w, err)
		return
	}
	t.Serve(w, r)
}
