package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/paprika-hub/paprika/persistence"
)

// Session statuses (API.md, the session object): the hub's own
// declarations, as for jobs.
const (
	SessionOpening = persistence.SessionOpening
	SessionOpen    = persistence.SessionOpen
	SessionClosed  = persistence.SessionClosed
)

// Session is the hub's session object: a browser lane reserved on a worker
// for interactive use. Zero times mean "not yet".
type Session struct {
	// ID is the session id; any hub answers for it.
	ID string `json:"id"`
	// WorkerID is the worker holding the lane.
	WorkerID string `json:"worker_id,omitempty"`
	// Lane is the lane the worker reserved.
	Lane string `json:"lane,omitempty"`
	// Status is SessionOpening, SessionOpen or SessionClosed.
	Status string `json:"status"`
	// Reason says why a closed session closed ("closed by request", "idle
	// timeout", a lost worker).
	Reason string `json:"reason,omitempty"`
	// CDPURL is the hub's WebSocket for the session's browser, speaking
	// the Chrome DevTools Protocol (puppeteer.connect's browserWSEndpoint,
	// chromedp.NewRemoteAllocator); "" when the hub did not send one.
	CDPURL string `json:"cdp_url,omitempty"`
	// IdleTimeoutS is how long the session may go unused before the hub
	// closes it.
	IdleTimeoutS int `json:"idle_timeout_s"`
	// Labels are the labels the session was opened with.
	Labels map[string]string `json:"labels,omitempty"`
	// CreatedAt is when the session was opened.
	CreatedAt time.Time `json:"created_at,omitzero"`
	// LastUsed is the last command's time. Sessions listed by
	// ListSessions carry the stored value, which may lag a few seconds.
	LastUsed time.Time `json:"last_used,omitzero"`
	// Profile is the profile the session holds, "" for none.
	Profile string `json:"profile,omitempty"`
}

// BrowserOptions are the browser page's options, top-level fields of POST
// /sessions (and of the params of fetch and macro jobs). Zero fields leave
// the browser's defaults; the hub answers an invalid one with a 400 naming
// the field.
type BrowserOptions struct {
	// Proxy sends the page's traffic through a proxy server.
	Proxy *Proxy `json:"proxy,omitempty"`
	// UserAgent replaces the browser's User-Agent.
	UserAgent string `json:"user_agent,omitempty"`
	// Viewport is the page's size in CSS pixels.
	Viewport *Viewport `json:"viewport,omitempty"`
	// Locale is a BCP 47 tag such as en-US.
	Locale string `json:"locale,omitempty"`
	// Timezone is an IANA time zone name such as Europe/Berlin.
	Timezone string `json:"timezone,omitempty"`
	// Cookies are set before the first navigation.
	Cookies []Cookie `json:"cookies,omitempty"`
	// Block fails requests by resource type or URL pattern.
	Block *Block `json:"block,omitempty"`
	// Profile names the stored browser state (cookies, localStorage) the
	// page starts from and a clean end saves; one job or session uses a
	// profile at a time.
	Profile string `json:"profile,omitempty"`
}

// Proxy is the proxy server of a page. The hub never answers the password
// back in plain text.
type Proxy struct {
	// Server is scheme://host:port (http, https, socks4 or socks5).
	Server string `json:"server"`
	// Username and Password answer the proxy's authentication challenge.
	Username string `json:"username,omitempty"`
	Password string `json:"password,omitempty"`
}

// Viewport is a page size in CSS pixels.
type Viewport struct {
	Width  int `json:"width"`
	Height int `json:"height"`
}

// Cookie is one cookie to preload. It names its site by Domain or URL (at
// least one); Expires is in Unix seconds, 0 for a session cookie.
type Cookie struct {
	Name     string  `json:"name"`
	Value    string  `json:"value"`
	Domain   string  `json:"domain,omitempty"`
	URL      string  `json:"url,omitempty"`
	Path     string  `json:"path,omitempty"`
	Secure   bool    `json:"secure,omitempty"`
	HTTPOnly bool    `json:"http_only,omitempty"`
	SameSite string  `json:"same_site,omitempty"`
	Expires  float64 `json:"expires,omitempty"`
}

// Block lists the requests a page must not make.
type Block struct {
	// ResourceTypes are CDP Network.ResourceType values (Image, Font, ...).
	ResourceTypes []string `json:"resource_types,omitempty"`
	// URLPatterns match a request's whole URL; '*' matches any run of
	// characters.
	URLPatterns []string `json:"url_patterns,omitempty"`
}

// SessionOptions is the body of POST /sessions. The zero value opens a
// session with the hub's defaults.
type SessionOptions struct {
	// Labels are free key/value tags of the session.
	Labels map[string]string `json:"labels,omitempty"`
	// IdleTimeoutS closes the session after this many seconds without a
	// command; 0 leaves the hub's default (300).
	IdleTimeoutS int `json:"idle_timeout_s,omitempty"`
	// BrowserOptions are sent as top-level fields.
	BrowserOptions
}

// SessionListOptions pages GET /sessions. Zero values leave the hub's
// defaults.
type SessionListOptions struct {
	// Limit caps the page size (the hub's default is 50, its maximum 1000).
	Limit int
	// Cursor continues from a previous SessionPage.NextCursor.
	Cursor string
}

// SessionPage is one page of GET /sessions: open sessions in id order.
type SessionPage struct {
	// Sessions on this page.
	Sessions []Session `json:"sessions"`
	// NextCursor continues the listing; "" on the last page. A page may
	// be short while NextCursor is set.
	NextCursor string `json:"next_cursor,omitempty"`
}

// CreateSession opens a session on a free chromium lane (POST /sessions)
// and returns it, open. It is not retried once it may have reached a hub:
// a second try could reserve a second lane. No free lane is a 503
// *APIError with code no_capacity.
func (c *Client) CreateSession(ctx context.Context, opts SessionOptions) (*Session, error) {
	body, err := marshal(opts)
	if err != nil {
		return nil, err
	}
	var s Session
	if err := c.doJSON(ctx, &request{method: http.MethodPost, path: "/sessions", body: body}, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// GetSession returns the session with id (GET /sessions/{id}); a closed
// session the hub still remembers is returned with SessionClosed, a
// forgotten one is a 404 *APIError.
func (c *Client) GetSession(ctx context.Context, id string) (*Session, error) {
	var s Session
	err := c.doJSON(ctx, &request{method: http.MethodGet, path: "/sessions/" + esc(id), idempotent: true}, &s)
	if err != nil {
		return nil, err
	}
	return &s, nil
}

// CloseSession closes the session and frees its lane (DELETE
// /sessions/{id}); it returns the session, closed. Closing a closed
// session is no error; a session the hub no longer knows is a 404.
func (c *Client) CloseSession(ctx context.Context, id string) (*Session, error) {
	var s Session
	err := c.doJSON(ctx, &request{method: http.MethodDelete, path: "/sessions/" + esc(id), idempotent: true}, &s)
	if err != nil {
		return nil, err
	}
	return &s, nil
}

// ListSessions returns one page of the open sessions, in id order (GET
// /sessions).
func (c *Client) ListSessions(ctx context.Context, opts SessionListOptions) (SessionPage, error) {
	q := url.Values{}
	if opts.Limit > 0 {
		q.Set("limit", strconv.Itoa(opts.Limit))
	}
	if opts.Cursor != "" {
		q.Set("cursor", opts.Cursor)
	}
	var page SessionPage
	err := c.doJSON(ctx, &request{method: http.MethodGet, path: "/sessions", query: q, idempotent: true}, &page)
	if page.Sessions == nil {
		page.Sessions = []Session{}
	}
	return page, err
}

// Command runs one command on the session's lane (POST
// /sessions/{id}/commands) and returns its result. Build cmd with
// Navigate, Click, Type, WaitFor, Sleep, Screenshot, Text or Eval. A
// command the page refused (a selector that matches nothing in time) is a
// 422 *APIError with code command_failed; the session stays open. Like
// CreateSession it is not retried once it may have reached a hub: a click
// must not happen twice.
func (c *Client) Command(ctx context.Context, id string, cmd Cmd) (CommandResult, error) {
	raw, err := marshal(cmd)
	if err != nil {
		return nil, err
	}
	return c.CommandJSON(ctx, id, raw)
}

// CommandJSON is Command with the command as raw JSON, {"op": ..., ...},
// for fields Cmd does not spell.
func (c *Client) CommandJSON(ctx context.Context, id string, cmd json.RawMessage) (CommandResult, error) {
	var out struct {
		OK     bool            `json:"ok"`
		Result json.RawMessage `json:"result"`
	}
	err := c.doJSON(ctx, &request{method: http.MethodPost, path: "/sessions/" + esc(id) + "/commands", body: cmd}, &out)
	if err != nil {
		return nil, err
	}
	if !out.OK {
		return nil, fmt.Errorf("POST /sessions/%s/commands: the hub answered 2xx without ok", id)
	}
	return CommandResult(out.Result), nil
}
