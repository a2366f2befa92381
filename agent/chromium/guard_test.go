package chromium

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/remote"
	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/internal/syncbuf"
	"github.com/paprika-hub/paprika/internal/testproxy"
	"github.com/paprika-hub/paprika/messages"
	"github.com/paprika-hub/paprika/persistence/storetest"
)

// deniedProbe is a server on 127.0.0.2 (which the tests' egress policy
// denies) counting the requests that reached it.
type deniedProbe struct {
	*httptest.Server
	hits atomic.Int32
	mu   sync.Mutex
	seen []string
}

func newDeniedProbe(t testing.TB) *deniedProbe {
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		storetest.Unavailable(t, "127.0.0.2 on this host", err)
	}
	p := &deniedProbe{}
	p.Server = &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.hits.Add(1)
		p.mu.Lock()
		p.seen = append(p.seen, r.URL.Path)
		p.mu.Unlock()
		fmt.Fprint(w, "secret")
	})}}
	p.Start()
	t.Cleanup(p.Close)
	return p
}

func (p *deniedProbe) paths() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.seen)
}

// guardedDriver is a one-lane driver whose egress policy denies 127.0.0.2.
func guardedDriver(t testing.TB, tweak ...func(*Config)) *Driver {
	d, _ := newDriver(t, 1, append([]func(*Config){func(c *Config) {
		c.getenv = noEnv
		c.EgressDeny = []netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")}
	}}, tweak...)...)
	return d
}

// clientPage opens a page in the browser's default context, as a raw CDP
// client (Puppeteer's newPage, Playwright's connectOverCDP) does.
func clientPage(t *testing.T, c *rawClient, opts ...chromedp.ContextOption) context.Context {
	t.Helper()
	tctx, _ := chromedp.NewContext(c.bctx, opts...) // ends with the client
	require.NoError(t, chromedp.Do(tctx))
	return tctx
}

func evalString(t *testing.T, ctx context.Context, js string) string {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[string](js, chromedp.EvalAwaitPromise))
	require.NoError(t, err, js)
	return v
}

// TestSecuritySessionGuard: on a session's lane, the pages a raw CDP client opens
// itself in the browser's default context get the session's options and
// the egress policy: the authenticating proxy's challenge is answered
// with the session's credentials, the blocked script is never requested,
// a navigation to a denied address fails, a URL the client's own Fetch
// interception rewrites to a denied address fails too (its interception
// works alongside), a website's own 401 and another proxy's 407 get no
// credentials, and the password is never logged.
func TestSecuritySessionGuard(t *testing.T) {
	var logs syncbuf.Buffer
	d := guardedDriver(t, func(c *Config) {
		c.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	site := newReportSite(t)
	probe := newDeniedProbe(t)
	const user, pass = "carol", "gu4rd-s3cret-Pw"
	proxy := testproxy.New(user, pass)
	defer proxy.Close()

	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	s, err := d.OpenSession(ctx, 0, "s-guard", messages.BrowserOptions{
		Proxy: &messages.ProxyOptions{Server: proxy.URL, Username: user, Password: pass},
		Block: &messages.BlockOptions{URLPatterns: []string{"*/ads/*"}},
	})
	require.NoError(t, err)
	closed := false
	defer func() {
		if !closed {
			require.NoError(t, s.Close())
		}
	}()
	devtools, ok := d.DevToolsURL(0)
	require.True(t, ok)
	c := dialRaw(t, devtools)

	t.Run("proxy credentials and block", func(t *testing.T) {
		site.reset()
		page := clientPage(t, c)
		require.NoError(t, chromedp.Do(page, chromedp.Navigate(site.URL+"/report")))
		var r pageReport
		require.NoError(t, json.Unmarshal([]byte(evalString(t, page, "JSON.stringify(window.report)")), &r))
		require.False(t, r.Ads, "the blocked script ran")
		require.True(t, site.asked("/report"))
		require.False(t, site.asked("/ads/banner.js"), "the blocked script was requested")
		reqs := proxy.Requests()
		require.True(t, slices.ContainsFunc(reqs, func(r testproxy.Request) bool {
			return r.Auth == "ok" && strings.HasSuffix(r.Target, "/report")
		}), "the proxy saw the page with the session's credentials: %+v", reqs)
		for _, r := range reqs {
			require.NotEqual(t, "bad", r.Auth, "%+v", r)
		}
	})

	t.Run("a denied address", func(t *testing.T) {
		page := clientPage(t, c)
		err := chromedp.Do(page, chromedp.Navigate(probe.URL+"/meta-data"))
		require.ErrorContains(t, err, "net::ERR_BLOCKED_BY_CLIENT")
		// A page of a BrowserContext of the client's own too.
		own := clientPage(t, c, chromedp.WithNewBrowserContext())
		err = chromedp.Do(own, chromedp.Navigate(probe.URL+"/own-context"))
		require.ErrorContains(t, err, "net::ERR_BLOCKED_BY_CLIENT")
		require.Zero(t, probe.hits.Load(), "the denied address was reached: %v", probe.paths())
	})

	t.Run("the client's own interception", func(t *testing.T) {
		site.reset()
		page := clientPage(t, c)
		var mu sync.Mutex
		var sawByClient []string
		var wg sync.WaitGroup
		require.NoError(t, chromedp.Listen(page, func(ev any) {
			p, ok := ev.(*fetch.EventRequestPaused)
			if !ok {
				return
			}
			mu.Lock()
			sawByClient = append(sawByClient, p.Request.URL)
			mu.Unlock()
			cont := fetch.ContinueRequestParams{RequestID: p.RequestID}
			if strings.HasSuffix(p.Request.URL, "/img/pixel.png") {
				cont.URL = probe.URL + "/rewritten.png" // the client redirects it to a denied address
			}
			wg.Go(func() { _, _ = chromedp.Call(page, fetch.ContinueRequest, cont) })
		}))
		_, err := chromedp.Call(page, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{{URLPattern: "*"}}})
		require.NoError(t, err)
		require.NoError(t, chromedp.Do(page, chromedp.Navigate(site.URL+"/report")))
		require.Equal(t, "complete", evalString(t, page, `new Promise(r => document.readyState == "complete" ? r("complete") : onload = () => r("complete"))`))
		_, _ = chromedp.Call(page, fetch.Disable, cdp.Empty{})
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		// The client saw every request first, the blocked script too.
		require.Contains(t, sawByClient, site.URL+"/report")
		require.Contains(t, sawByClient, site.URL+"/ads/banner.js")
		require.Contains(t, sawByClient, site.URL+"/img/pixel.png")
		require.False(t, site.asked("/ads/banner.js"))
		require.Zero(t, probe.hits.Load(), "the client's rewrite reached the denied address: %v", probe.paths())
	})

	t.Run("no credentials for a website or another proxy", func(t *testing.T) {
		www := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "" {
				t.Errorf("the website got credentials: %q", r.Header.Get("Authorization"))
			}
			w.Header().Set("WWW-Authenticate", `Basic realm="site"`)
			http.Error(w, "who are you", http.StatusUnauthorized)
		}))
		defer www.Close()
		page := clientPage(t, c)
		require.NoError(t, chromedp.Do(page, chromedp.Navigate(www.URL+"/")))

		// A BrowserContext with a proxy of the client's choosing is not
		// given the session's credentials.
		other := testproxy.New(user, pass)
		defer other.Close()
		own := clientPage(t, c, chromedp.WithNewBrowserContext(func(p *target.CreateBrowserContextParams) {
			p.ProxyServer, p.ProxyBypassList = other.URL, proxyBypass
		}))
		_ = chromedp.Do(own, chromedp.Navigate(site.URL+"/report")) // a 407 page
		reqs := other.Requests()
		require.NotEmpty(t, reqs, "the client's page went around its own proxy")
		for _, r := range reqs {
			require.Equal(t, "none", r.Auth, "another proxy got credentials: %+v", r)
		}
	})

	closed = true
	require.NoError(t, s.Close())
	require.NotContains(t, logs.String(), pass, "the driver logged the proxy password")
	require.Contains(t, logs.String(), `msg="egress policy blocked a request"`)
	require.EqualValues(t, 1, d.Hygiene().Cleanups+d.Hygiene().Restarts)
}

// requireWorkersGuarded checks that the requests of a client page's
// dedicated and shared workers, of a cross-site (out-of-process) iframe
// and of a service worker never reach the denied probe.
func requireWorkersGuarded(t *testing.T, c *rawClient, site *reportSite, probe *deniedProbe) {
	t.Helper()
	page := clientPage(t, c)
	require.NoError(t, chromedp.Do(page, chromedp.Navigate(site.URL+"/report")))
	fetchFrom := func(path string) string {
		return fmt.Sprintf(`fetch(%q, {mode: "no-cors"}).then(() => "reached", e => "blocked")`, probe.URL+path)
	}
	for i := range 3 {
		require.Equal(t, "blocked", evalString(t, page, fmt.Sprintf(`new Promise(r => {
  const w = new Worker(URL.createObjectURL(new Blob([%q], {type: "text/javascript"}))); w.onmessage = e => r(e.data) })`,
			fmt.Sprintf(`%s.then(v => postMessage(v))`, fetchFrom(fmt.Sprintf("/worker-%d", i))))), "dedicated worker")
		require.Equal(t, "blocked", evalString(t, page, fmt.Sprintf(`new Promise(r => {
  const w = new SharedWorker(URL.createObjectURL(new Blob([%q], {type: "text/javascript"}))); w.port.onmessage = e => r(e.data) })`,
			fmt.Sprintf(`onconnect = c => %s.then(v => c.ports[0].postMessage(v))`, fetchFrom(fmt.Sprintf("/shared-%d", i))))), "shared worker")
	}
	// A cross-site (out-of-process) iframe's requests.
	frame := strings.Replace(site.URL, "127.0.0.1", "localhost", 1) + "/frame#" + probe.URL + "/iframe"
	require.Equal(t, "blocked", evalString(t, page, fmt.Sprintf(`new Promise(r => { onmessage = e => r(e.data);
  const f = document.createElement("iframe"); f.src = %q; document.body.append(f) })`, frame)), "iframe")
	// A service worker's own requests (its install handler fetches).
	require.Equal(t, "installed", evalString(t, page, fmt.Sprintf(`navigator.serviceWorker.register("/sw.js?p=%s").then(reg =>
  new Promise(r => { const w = reg.installing || reg.waiting || reg.active; if (w.state != "installing") return r("installed");
    w.onstatechange = () => w.state != "installing" && r("installed") }))`, probe.URL)))
	require.Zero(t, probe.hits.Load(), "a worker reached the denied address: %v", probe.paths())
}

// TestSecuritySessionGuardWithoutOptions: a session without options is guarded
// by the egress policy alone — pages, workers, iframes of the client's; its browser is the driver's default one,
// and the next job on the lane finds it clean and unguarded.
func TestSecuritySessionGuardWithoutOptions(t *testing.T) {
	d := guardedDriver(t)
	site := newSite(t)
	reports := newReportSite(t)
	probe := newDeniedProbe(t)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	s, err := d.OpenSession(ctx, 0, "s-plain", messages.BrowserOptions{})
	require.NoError(t, err)
	devtools, _ := d.DevToolsURL(0)
	c := dialRaw(t, devtools)
	page := clientPage(t, c)
	require.NoError(t, chromedp.Do(page, chromedp.Navigate(site.URL+"/static")))
	require.ErrorContains(t, chromedp.Do(page, chromedp.Navigate(probe.URL+"/")), "net::ERR_BLOCKED_BY_CLIENT")
	require.Zero(t, probe.hits.Load())
	requireWorkersGuarded(t, c, reports, probe)
	c.cancel()
	require.NoError(t, s.Close())
	require.EqualValues(t, 1, d.Hygiene().Cleanups, "the lane was cleaned, not restarted")

	r := runJob(t, d, 0, "after-guard", messages.ModeFetch, map[string]any{"url": site.URL + "/static", "screenshot": false}, 0)
	require.EqualValues(t, 200, resultMap(t, r)["status"])
	require.Equal(t, 1, laneStarts(d, 0), "the same browser served the job")
}

// TestSecuritySessionGuardLost: a guard that loses its connection while its
// session is open stops the lane's browser rather than let the client's
// pages run unguarded; the lane restarts for its next user.
func TestSecuritySessionGuardLost(t *testing.T) {
	d := guardedDriver(t)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	s, err := d.OpenSession(ctx, 0, "s-lost", messages.BrowserOptions{})
	require.NoError(t, err)
	b := d.lanes[0].browser()
	_ = s.(*session).guard.conn.Close()
	select {
	case <-b.ctx.Done():
	case <-ctx.Done():
		t.Fatal("the browser kept running without its guard")
	}
	require.NoError(t, s.Close())
	r := runJob(t, d, 0, "after-lost", messages.ModeNoop, map[string]any{}, 0)
	require.NoError(t, r.err)
	r = runJob(t, d, 0, "after-lost-2", messages.ModeFetch, map[string]any{"url": "about:blank", "screenshot": false}, 0)
	require.NoError(t, r.err)
	require.Equal(t, 2, laneStarts(d, 0))
}

func TestProxyAuthAnswers(t *testing.T) {
	t.Parallel()
	a := newProxyAuth(&messages.BrowserOptions{Proxy: &messages.ProxyOptions{Server: "http://Proxy.example:80", Username: "u", Password: "p"}})
	ask := func(id, origin string, src fetch.AuthChallengeSource) fetch.AuthChallengeResponseResponse {
		return a.response(&fetch.EventAuthRequired{RequestID: fetch.RequestID(id), AuthChallenge: &fetch.AuthChallenge{Source: src, Origin: origin}}).Response
	}
	provide, cancel := fetch.AuthChallengeResponseResponseProvideCredentials, fetch.AuthChallengeResponseResponseCancelAuth
	require.Equal(t, provide, ask("r1", "http://proxy.example", fetch.AuthChallengeSourceProxy), "Chromium leaves out the default port")
	require.Equal(t, cancel, ask("r1", "http://proxy.example", fetch.AuthChallengeSourceProxy), "a second challenge of one request")
	require.Equal(t, cancel, ask("r2", "http://proxy.example", fetch.AuthChallengeSourceServer), "a website's challenge")
	require.Equal(t, cancel, ask("r3", "http://other.example:80", fetch.AuthChallengeSourceProxy), "another proxy")
	require.Equal(t, cancel, ask("r4", "https://proxy.example:80", fetch.AuthChallengeSourceProxy), "another scheme")
	for i := range 3 * maxAnswered {
		ask(fmt.Sprintf("n%d", i), "http://proxy.example:80", fetch.AuthChallengeSourceProxy)
	}
	require.Len(t, a.answered, maxAnswered, "the answers remembered are bounded")
	require.Len(t, a.order, maxAnswered)
	require.Equal(t, cancel, ask(fmt.Sprintf("n%d", 3*maxAnswered-1), "http://proxy.example", fetch.AuthChallengeSourceProxy))
	require.Nil(t, newProxyAuth(&messages.BrowserOptions{Proxy: &messages.ProxyOptions{Server: "http://p:1"}}), "no credentials, no answers")
}

// BenchmarkGuard measures what a session's guard costs a raw CDP client:
// a page with guardBenchImages images (each URL new, so each one a
// request) loaded by a client in the default context, on a session with
// the guard (egress policy only: no options) and on one without
// (Config.noGuard), the two loads interleaved in each iteration so that
// the machine's load hits both alike. Reported: ms per page each way,
// their ratio, and the guard's cost per request in µs.
func BenchmarkGuard(b *testing.B) {
	const guardBenchImages = 40
	pixel := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\xff\xff?\x00\x05\xfe\x02\xfe\xa75\x81\x84\x00\x00\x00\x00IEND\xaeB`\x82")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		if r.URL.Path == "/px.png" {
			w.Header().Set("Content-Type", "image/png")
			_, _ = w.Write(pixel)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<!DOCTYPE html><title>bench</title>")
		for i := range guardBenchImages {
			fmt.Fprintf(w, `<img src="/px.png?n=%s-%d">`, r.URL.Query().Get("n"), i)
		}
	}))
	defer srv.Close()

	open := func(noGuard bool) context.Context {
		d, _ := newDriver(b, 1, func(c *Config) { c.getenv = noEnv; c.noGuard = noGuard })
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()
		s, err := d.OpenSession(ctx, 0, "s-bench", messages.BrowserOptions{})
		require.NoError(b, err)
		b.Cleanup(func() { _ = s.Close() })
		devtools, _ := d.DevToolsURL(0)
		actx, cancelAlloc := remote.NewAllocator(context.Background(), devtools, remote.NoModifyURL)
		page, cancelPage := chromedp.NewContext(actx)
		b.Cleanup(func() { cancelPage(); cancelAlloc() })
		require.NoError(b, chromedp.Do(page))
		return page
	}
	guarded, bare := open(false), open(true)
	load := func(page context.Context, n int) time.Duration {
		start := time.Now()
		if err := chromedp.Do(page, chromedp.Navigate(fmt.Sprintf("%s/?n=%d", srv.URL, n))); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	for i := range 3 { // warm up both
		load(guarded, -i-1)
		load(bare, -i-1)
	}
	var withGuard, without time.Duration
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if i%2 == 0 { // alternate which goes first
			withGuard += load(guarded, 2*i)
			without += load(bare, 2*i+1)
		} else {
			without += load(bare, 2*i+1)
			withGuard += load(guarded, 2*i)
		}
	}
	n := float64(b.N)
	b.ReportMetric(float64(withGuard.Milliseconds())/n, "guard-ms/page")
	b.ReportMetric(float64(without.Milliseconds())/n, "noguard-ms/page")
	b.ReportMetric(float64(withGuard)/float64(without), "ratio")
	b.ReportMetric(float64((withGuard-without).Microseconds())/n/(guardBenchImages+1), "guard-µs/request")
}

// TestSessionGuardSlowLookups: a lookup that outlasts the policy's
// timeout fails its request; and while lookups hang (more of them than
// the guard has workers), the requests whose decision is known go on —
// the reader never waits for a handler.
func TestSessionGuardSlowLookups(t *testing.T) {
	release := make(chan struct{})
	var hung atomic.Int32
	d := guardedDriver(t, func(c *Config) {
		c.lookup = func(ctx context.Context, host string) ([]netip.Addr, error) {
			switch {
			case strings.HasSuffix(host, ".late.test"): // answers after the policy's timeout
				<-ctx.Done()
				return nil, ctx.Err()
			case strings.HasSuffix(host, ".hung.test"): // a resolver that does not answer at all
				hung.Add(1)
				<-release
				return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
			}
			return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
		}
	})
	d.egress.timeout = time.Second // before any lookup
	site := newSite(t)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	s, err := d.OpenSession(ctx, 0, "s-slow", messages.BrowserOptions{})
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	devtools, _ := d.DevToolsURL(0)
	c := dialRaw(t, devtools)
	page := clientPage(t, c)
	require.NoError(t, chromedp.Do(page, chromedp.Navigate(site.URL+"/static")))
	fetchAll := func(n int, domain string) string {
		return fmt.Sprintf(`Promise.allSettled(Array.from({length: %d}, (_, i) => fetch("http://h" + i + ".%s:1/x", {mode: "no-cors"})))
  .then(rs => rs.map(r => r.status).join(","))`, n, domain)
	}
	require.Equal(t, "rejected,rejected", evalString(t, page, fetchAll(2, "late.test")))

	const n = guardWorkers + 4
	func() {
		defer close(release)
		evalString(t, page, "window.hung = "+fetchAll(n, "hung.test")+`; "started"`)
		waitFor(t, func() bool { return hung.Load() == guardWorkers }) // every worker is stuck, 4 more queue
		for range 3 {
			require.Equal(t, "200", evalString(t, page, `fetch("/static").then(r => String(r.status))`))
		}
		require.EqualValues(t, guardWorkers, hung.Load())
	}()
	// Released: they resolve to 127.0.0.1 port 1, where nothing listens.
	require.Equal(t, strings.TrimSuffix(strings.Repeat("rejected,", n), ","), evalString(t, page, "window.hung"))
}
