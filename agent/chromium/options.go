package chromium

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/paprika-hub/paprika/messages"
)

// proxyBypass is the bypass list of a page with a proxy: none at all.
// Chromium's default sends loopback addresses around the proxy; a job that
// asks for a proxy means all of its traffic, and its requests for the
// worker's own loopback services should not leave through a side door
// either.
const proxyBypass = "<-loopback>"

// contextOptions are the options of a tab's new BrowserContext: its proxy.
// The proxy lives in the context, so it ends with the job and never
// touches another lane user's traffic.
func contextOptions(o *messages.BrowserOptions) []chromedp.CreateBrowserContextOption {
	if o == nil || o.Proxy == nil {
		return nil
	}
	server := o.Proxy.Server
	return []chromedp.CreateBrowserContextOption{func(p *target.CreateBrowserContextParams) {
		p.ProxyServer, p.ProxyBypassList = server, proxyBypass
	}}
}

// checkProxy applies the egress policy to the proxy itself: every request
// of the page goes to it, so a proxy at a denied address (the cloud
// metadata service) would reach it whatever the page's URLs say.
func (d *Driver) checkProxy(ctx context.Context, o *messages.BrowserOptions) error {
	if o == nil || o.Proxy == nil {
		return nil
	}
	if err := d.egress.check(ctx, o.Proxy.Server); err != nil {
		return fmt.Errorf("proxy.server: %w", err)
	}
	return nil
}

// applyOptions sets the page's emulation and cookies, before its first
// navigation: the viewport (the options' or the driver's), the user agent
// and Accept-Language, the locale, the time zone, then the cookies in the
// tab's own BrowserContext.
func (t *tab) applyOptions(ctx context.Context) error {
	o := t.opts
	if o == nil {
		o = &messages.BrowserOptions{}
	}
	w, h := int64(t.l.d.cfg.WindowWidth), int64(t.l.d.cfg.WindowHeight)
	if o.Viewport != nil {
		w, h = int64(o.Viewport.Width), int64(o.Viewport.Height)
	}
	// The viewport, not the window, sets the screenshot size.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(w, h)); err != nil {
		return fmt.Errorf("viewport: %w", err)
	}
	if o.UserAgent != "" || o.Locale != "" {
		ua := o.UserAgent
		if ua == "" {
			// The override needs a user agent; keep the browser's own.
			v, err := chromedp.CallBrowser(ctx, browser.GetVersion, cdp.Empty{})
			if err != nil {
				return fmt.Errorf("user_agent: read the browser's: %w", err)
			}
			ua = v.UserAgent
		}
		if _, err := chromedp.Call(ctx, emulation.SetUserAgentOverride, emulation.SetUserAgentOverrideParams{UserAgent: ua, AcceptLanguage: o.Locale}); err != nil {
			return fmt.Errorf("user_agent: %w", err)
		}
	}
	if o.Locale != "" {
		if _, err := chromedp.Call(ctx, emulation.SetLocaleOverride, emulation.SetLocaleOverrideParams{Locale: o.Locale}); err != nil {
			return fmt.Errorf("locale: %w", err)
		}
	}
	if o.Timezone != "" {
		if _, err := chromedp.Call(ctx, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: o.Timezone}); err != nil {
			return fmt.Errorf("timezone: %w", err)
		}
	}
	if len(o.Cookies) > 0 {
		if _, err := chromedp.Call(ctx, network.SetCookies, network.SetCookiesParams{Cookies: cookieParams(o.Cookies)}); err != nil {
			return fmt.Errorf("cookies: %w", err)
		}
	}
	return nil
}

// cookieParams maps the options' cookies onto CDP's.
func cookieParams(cs []messages.Cookie) []*network.CookieParam {
	out := make([]*network.CookieParam, len(cs))
	for i, c := range cs {
		out[i] = &network.CookieParam{Name: c.Name, Value: c.Value, URL: c.URL, Domain: c.Domain, Path: c.Path,
			Secure: c.Secure, HTTPOnly: c.HTTPOnly, SameSite: network.CookieSameSite(c.SameSite)}
		if c.Expires > 0 {
			out[i].Expires = cdp.TimeSinceEpoch(c.Expires)
		}
	}
	return out
}

// blocker decides which requests the block option fails. Fixed after
// newBlocker; safe for concurrent use.
type blocker struct {
	types    map[network.ResourceType]bool
	patterns []string
}

// newBlocker returns nil when nothing is blocked.
func newBlocker(o *messages.BrowserOptions) *blocker {
	if o == nil || o.Block == nil || (len(o.Block.ResourceTypes) == 0 && len(o.Block.URLPatterns) == 0) {
		return nil
	}
	b := &blocker{types: map[network.ResourceType]bool{}, patterns: slices.Clone(o.Block.URLPatterns)}
	for _, rt := range o.Block.ResourceTypes {
		b.types[network.ResourceType(rt)] = true
	}
	return b
}

// blocks reports whether a request of this type and URL is blocked, and why.
func (b *blocker) blocks(rt network.ResourceType, url string) (bool, string) {
	if b == nil {
		return false, ""
	}
	if b.types[rt] {
		return true, "resource type " + string(rt)
	}
	for _, p := range b.patterns {
		if globMatch(p, url) {
			return true, "url pattern " + p
		}
	}
	return false, ""
}

// globMatch matches s against pattern, where '*' stands for any run of
// characters (CDP's Network.setBlockedURLs syntax). Linear in practice:
// the greedy form with one backtrack point.
func globMatch(pattern, s string) bool {
	p, i := 0, 0
	star, mark := -1, 0
	for i < len(s) {
		switch {
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, i
			p++
		case p < len(pattern) && pattern[p] == s[i]:
			p++
			i++
		case star >= 0:
			p = star + 1
			mark++
			i = mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// proxyAuth answers a page's proxy challenges with the options'
// credentials: once per request (a proxy that refuses them gets a cancel,
// not a loop), and only the challenge of the options' own proxy server —
// never a website's (source Server), nor another proxy's (a raw CDP
// client may give a BrowserContext a proxy of its own) — so the
// credentials go to that proxy only. Safe for concurrent use.
type proxyAuth struct {
	username, password string
	origin             string // the proxy server's, as Chromium names a challenger

	mu       sync.Mutex
	answered map[fetch.RequestID]bool
	order    []fetch.RequestID // answered, oldest first; at most maxAnswered
}

// maxAnswered bounds the requests a proxyAuth remembers answering. A
// request's second challenge follows its first answer at once, so the
// most recent ones suffice; a session's guard sees requests for hours.
const maxAnswered = 1024

func newProxyAuth(o *messages.BrowserOptions) *proxyAuth {
	if o == nil || o.Proxy == nil || o.Proxy.Username == "" {
		return nil
	}
	return &proxyAuth{username: o.Proxy.Username, password: o.Proxy.Password, origin: serverOrigin(o.Proxy.Server),
		answered: map[fetch.RequestID]bool{}}
}

// serverOrigin is a URL's scheme://host:port, lower-cased, with the
// scheme's default port filled in, so that Chromium's way of writing a
// challenger's origin ("http://proxy:80" is "http://proxy") compares
// equal; "" for what does not parse.
func serverOrigin(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return ""
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443", "socks4": "1080", "socks5": "1080"}[u.Scheme]
	}
	return strings.ToLower(u.Scheme) + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}

// response is the answer to one challenge. The tab's log lines name the
// decision, never the credentials.
func (a *proxyAuth) response(ev *fetch.EventAuthRequired) *fetch.AuthChallengeResponse {
	if a == nil || ev.AuthChallenge == nil || ev.AuthChallenge.Source != fetch.AuthChallengeSourceProxy ||
		serverOrigin(ev.AuthChallenge.Origin) != a.origin {
		// No credentials here for a website (its 401 stays the page's),
		// nor for a proxy other than the options'.
		return &fetch.AuthChallengeResponse{Response: fetch.AuthChallengeResponseResponseCancelAuth}
	}
	a.mu.Lock()
	again := a.answered[ev.RequestID]
	if !again {
		if len(a.order) >= maxAnswered {
			delete(a.answered, a.order[0])
			a.order = a.order[1:]
		}
		a.answered[ev.RequestID] = true
		a.order = append(a.order, ev.RequestID)
	}
	a.mu.Unlock()
	if again {
		return &fetch.AuthChallengeResponse{Response: fetch.AuthChallengeResponseResponseCancelAuth}
	}
	return &fetch.AuthChallengeResponse{Response: fetch.AuthChallengeResponseResponseProvideCredentials,
		Username: a.username, Password: a.password}
}

// answerAuth answers one Fetch.authRequired of the tab's page. It runs on
// a goroutine of the tab's (t.aux), ended by the tab's context.
func (t *tab) answerAuth(ev *fetch.EventAuthRequired) {
	resp := t.auth.response(ev)
	if _, err := chromedp.Call(t.ctx, fetch.ContinueWithAuth, fetch.ContinueWithAuthParams{RequestID: ev.RequestID, AuthChallengeResponse: resp}); err != nil && t.ctx.Err() == nil {
		t.l.d.log.Debug("answer auth challenge", "lane", t.l.idx, "response", resp.Response, "err", err)
		return
	}
	var host string
	if ev.AuthChallenge != nil {
		host = ev.AuthChallenge.Origin
	}
	t.l.d.log.Debug("auth challenge answered", "lane", t.l.idx, "origin", host, "response", resp.Response)
}

// describeOptions is the job log's line for the options, without the
// proxy's credentials.
func describeOptions(o *messages.BrowserOptions) string {
	if o == nil || o.Empty() {
		return ""
	}
	var parts []string
	if o.Proxy != nil {
		s := "proxy " + o.Proxy.Server
		if o.Proxy.Username != "" {
			s += " (with credentials)"
		}
		parts = append(parts, s)
	}
	if o.UserAgent != "" {
		parts = append(parts, "user_agent")
	}
	if o.Viewport != nil {
		parts = append(parts, fmt.Sprintf("viewport %dx%d", o.Viewport.Width, o.Viewport.Height))
	}
	if o.Locale != "" {
		parts = append(parts, "locale "+o.Locale)
	}
	if o.Timezone != "" {
		parts = append(parts, "timezone "+o.Timezone)
	}
	if len(o.Cookies) > 0 {
		parts = append(parts, fmt.Sprintf("%d cookies", len(o.Cookies)))
	}
	if o.Block != nil {
		parts = append(parts, fmt.Sprintf("block %d types, %d patterns", len(o.Block.ResourceTypes), len(o.Block.URLPatterns)))
	}
	if o.Record {
		parts = append(parts, "record")
	}
	return "options: " + strings.Join(parts, ", ")
}

// launch is the command line a session's options need so that they hold
// for every page of the lane, also pages a raw CDP client opens in the
// browser's default context (the gateway's sessions): the proxy, the user
// agent, the language, the time zone (TZ, which Chromium reads at start)
// and the window size. Per-page overrides (applyOptions) still apply to
// the session's own page.
type launch struct {
	key  string // what the command line depends on, without the password
	opts []chromedp.ExecAllocatorOption
}

// sessionLaunch returns nil for a session without options. Its key names
// the session: a browser that served a session with options is never
// reused by anyone else (the default context may hold its cookies), so
// both the session and the lane's next user start a browser of their own.
func sessionLaunch(o *messages.BrowserOptions, sessionID string) *launch {
	if o == nil || o.Empty() {
		return nil
	}
	la := &launch{}
	key := []string{"session=" + sessionID}
	if o.Proxy != nil {
		la.opts = append(la.opts, chromedp.ProxyServer(o.Proxy.Server), chromedp.Flag("proxy-bypass-list", proxyBypass))
		key = append(key, "proxy="+o.Proxy.Server)
	}
	if o.UserAgent != "" {
		la.opts = append(la.opts, chromedp.UserAgent(o.UserAgent))
		key = append(key, "ua="+o.UserAgent)
	}
	if o.Locale != "" {
		la.opts = append(la.opts, chromedp.Flag("lang", o.Locale), chromedp.Flag("accept-lang", o.Locale))
		key = append(key, "lang="+o.Locale)
	}
	if o.Timezone != "" {
		la.opts = append(la.opts, chromedp.Env("TZ="+o.Timezone))
		key = append(key, "tz="+o.Timezone)
	}
	if o.Viewport != nil {
		la.opts = append(la.opts, chromedp.WindowSize(o.Viewport.Width, o.Viewport.Height))
		key = append(key, fmt.Sprintf("window=%dx%d", o.Viewport.Width, o.Viewport.Height))
	}
	la.key = strings.Join(key, "\x00")
	return la
}

// Key is what the command line depends on; "" for the driver's own.
func (la *launch) Key() string {
	if la == nil {
		return ""
	}
	return la.key
}

// allocOptions is base with la's flags after it (a later flag of the
// same name wins: chromedp keeps flags in a map).
func (la *launch) allocOptions(base []chromedp.ExecAllocatorOption) []chromedp.ExecAllocatorOption {
	if la == nil {
		return base
	}
	return append(base[:len(base):len(base)], la.opts...)
}
