package chromium

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/remote"
	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/internal/syncbuf"
	"github.com/paprika-hub/paprika/internal/testproxy"
	"github.com/paprika-hub/paprika/messages"
)

// reportSite serves /report, a page that reports what the browser options
// change, with an image and a script the block option is to stop, and
// records every path asked for (with its Accept-Language).
type reportSite struct {
	*httptest.Server
	mu    sync.Mutex
	paths []string
	langs []string
}

func newReportSite(t testing.TB) *reportSite {
	s := &reportSite{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.paths = append(s.paths, r.URL.Path)
		s.langs = append(s.langs, r.Header.Get("Accept-Language"))
		s.mu.Unlock()
		switch r.URL.Path {
		case "/report":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, `<!DOCTYPE html><html><head><title>report</title></head><body>
<img id="img" src="/img/pixel.png"><script src="/ads/banner.js"></script>
<script>window.report = {ua: navigator.userAgent, width: innerWidth, height: innerHeight,
  lang: navigator.language, tz: Intl.DateTimeFormat().resolvedOptions().timeZone, cookie: document.cookie,
  ads: typeof window.adsRan !== "undefined"};</script></body></html>`)
		case "/frame": // a cross-site iframe (an out-of-process one) fetching the address in its hash
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, `<script>fetch(location.hash.slice(1), {mode: "no-cors"}).then(() => "reached", () => "blocked").then(v => parent.postMessage(v, "*"))</script>`)
		case "/sw.js": // a service worker fetching ?p=<address> as it installs
			w.Header().Set("Content-Type", "text/javascript")
			fmt.Fprint(w, `self.addEventListener("install", e => e.waitUntil(fetch(new URL(location).searchParams.get("p") + "/sw", {mode: "no-cors"}).catch(() => {})))`)
		case "/ads/banner.js":
			w.Header().Set("Content-Type", "text/javascript")
			fmt.Fprint(w, `window.adsRan = true;`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *reportSite) asked(path string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Contains(s.paths, path)
}

func (s *reportSite) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.paths, s.langs = nil, nil
}

// pageReport is what /report's script saw.
type pageReport struct {
	UA     string `json:"ua"`
	Width  int    `json:"width"`
	Height int    `json:"height"`
	Lang   string `json:"lang"`
	TZ     string `json:"tz"`
	Cookie string `json:"cookie"`
	Ads    bool   `json:"ads"`
}

var reportSteps = func(url string) []map[string]any {
	return []map[string]any{{"op": "navigate", "url": url}, {"op": "eval", "expression": "JSON.stringify(window.report)"}}
}

func decodeReport(t *testing.T, value any) pageReport {
	t.Helper()
	s, ok := value.(string)
	require.True(t, ok, "eval value %v", value)
	var r pageReport
	require.NoError(t, json.Unmarshal([]byte(s), &r))
	return r
}

// TestBrowserOptions runs, on one lane (one browser), a macro job with
// every option but the proxy, a command session with them, a fetch job
// through an authenticating proxy, and a job without options after them
// all, which must see the browser's defaults again.
func TestBrowserOptions(t *testing.T) {
	var logs syncbuf.Buffer
	d, _ := newDriver(t, 1, func(c *Config) {
		c.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	site := newReportSite(t)
	opts := map[string]any{
		"user_agent": "PaprikaTest/1.0 (options)",
		"viewport":   map[string]any{"width": 640, "height": 480},
		"locale":     "de-DE",
		"timezone":   "Asia/Tokyo",
		"cookies":    []map[string]any{{"name": "pre", "value": "loaded", "url": site.URL}},
		"block":      map[string]any{"resource_types": []string{"Image"}, "url_patterns": []string{"*/ads/*"}},
	}
	want := func(t *testing.T, r pageReport) {
		t.Helper()
		require.Equal(t, "PaprikaTest/1.0 (options)", r.UA)
		require.Equal(t, 640, r.Width)
		require.Equal(t, 480, r.Height)
		require.Equal(t, "de-DE", r.Lang)
		require.Equal(t, "Asia/Tokyo", r.TZ)
		require.Equal(t, "pre=loaded", r.Cookie)
		require.False(t, r.Ads, "the blocked script ran")
		require.False(t, site.asked("/img/pixel.png"), "the blocked image was requested")
		require.False(t, site.asked("/ads/banner.js"), "the blocked script was requested")
		site.mu.Lock()
		require.Contains(t, site.langs[0], "de-DE", "Accept-Language")
		site.mu.Unlock()
	}

	t.Run("macro", func(t *testing.T) {
		site.reset()
		params := map[string]any{"steps": reportSteps(site.URL + "/report")}
		for k, v := range opts {
			params[k] = v
		}
		r := runJob(t, d, 0, "job-opts", messages.ModeMacro, params, 0)
		res := resultMap(t, r)
		steps := res["steps"].([]any)
		want(t, decodeReport(t, steps[1].(map[string]any)["value"]))
		require.Contains(t, r.log.text(), "options: user_agent, viewport 640x480, locale de-DE, timezone Asia/Tokyo, 1 cookies, block 1 types, 1 patterns")
	})

	t.Run("session", func(t *testing.T) {
		site.reset()
		raw, err := json.Marshal(opts)
		require.NoError(t, err)
		var o messages.BrowserOptions
		require.NoError(t, json.Unmarshal(raw, &o))
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()
		before := laneStarts(d, 0)
		s, err := d.OpenSession(ctx, 0, "s-opts", o)
		require.NoError(t, err)
		require.Equal(t, before+1, laneStarts(d, 0), "a session with options starts a browser of its own")
		defer func() { require.NoError(t, s.Close()) }()
		steps := reportSteps(site.URL + "/report")
		for i, st := range steps {
			cmd, _ := json.Marshal(st)
			out, err := s.Do(ctx, cmd)
			require.NoError(t, err)
			if i == 1 {
				var m map[string]any
				require.NoError(t, json.Unmarshal(out, &m))
				want(t, decodeReport(t, m["value"]))
			}
		}

		// A raw CDP client on the lane's DevTools URL, with a page of its
		// own in the browser's default context, sees the options that the
		// command line and the default context carry, and block through
		// the session's guard (guard.go).
		site.reset()
		devtools, ok := d.DevToolsURL(0)
		require.True(t, ok, "the session's lane runs a browser")
		raw2 := driveReport(t, devtools, site.URL+"/report")
		require.Equal(t, "PaprikaTest/1.0 (options)", raw2.UA)
		require.Equal(t, "de-DE", raw2.Lang)
		require.Equal(t, "Asia/Tokyo", raw2.TZ)
		require.Equal(t, "pre=loaded", raw2.Cookie)
		require.Equal(t, 640, raw2.Width)
		require.False(t, raw2.Ads, "the blocked script ran in the client's page")
		require.False(t, site.asked("/img/pixel.png"), "the blocked image was requested by the client's page")
	})

	t.Run("proxy", func(t *testing.T) {
		site.reset()
		before := laneStarts(d, 0)
		defer func() { require.Equal(t, before+1, laneStarts(d, 0), "the session's browser is not reused after it") }()
		const user, pass = "alice", "pr0xy-s3cret-Pw"
		proxy := testproxy.New(user, pass)
		defer proxy.Close()
		r := runJob(t, d, 0, "job-proxy", messages.ModeFetch, map[string]any{
			"url": site.URL + "/report", "screenshot": false,
			"proxy": map[string]any{"server": proxy.URL, "username": user, "password": pass},
		}, 0)
		res := resultMap(t, r)
		require.EqualValues(t, 200, res["status"])
		var authed []testproxy.Request
		for _, req := range proxy.Requests() {
			if req.Auth == "ok" {
				authed = append(authed, req)
			}
			require.NotEqual(t, "bad", req.Auth, "the proxy got wrong credentials: %+v", req)
		}
		require.NotEmpty(t, authed, "the proxy saw no request with the credentials: %+v", proxy.Requests())
		require.True(t, slices.ContainsFunc(authed, func(r testproxy.Request) bool { return strings.HasSuffix(r.Target, "/report") }),
			"the page went around the proxy: %+v", proxy.Requests())
		require.Contains(t, r.log.text(), "proxy "+proxy.URL+" (with credentials)")
		require.NotContains(t, r.log.text(), pass)
		require.NotContains(t, logs.String(), pass, "the driver logged the proxy password")
	})

	t.Run("a website's own challenge gets no proxy credentials", func(t *testing.T) {
		proxy := testproxy.New("bob", "hunter22")
		defer proxy.Close()
		// The "website" is a second proxy asking for credentials as a
		// server would (401 → a Server challenge, never answered).
		www := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "" {
				t.Errorf("the website got credentials: %q", r.Header.Get("Authorization"))
			}
			w.Header().Set("WWW-Authenticate", `Basic realm="site"`)
			http.Error(w, "who are you", http.StatusUnauthorized)
		}))
		defer www.Close()
		r := runJob(t, d, 0, "job-401", messages.ModeFetch, map[string]any{
			"url": www.URL + "/", "screenshot": false,
			"proxy": map[string]any{"server": proxy.URL, "username": "bob", "password": "hunter22"},
		}, 0)
		require.Error(t, r.err)
		require.Contains(t, r.err.Error(), "http status 401")
	})

	t.Run("defaults again afterwards", func(t *testing.T) {
		site.reset()
		r := runJob(t, d, 0, "job-plain", messages.ModeMacro, map[string]any{"steps": reportSteps(site.URL + "/report")}, 0)
		rep := decodeReport(t, resultMap(t, r)["steps"].([]any)[1].(map[string]any)["value"])
		require.Contains(t, rep.UA, "HeadlessChrome")
		require.Equal(t, DefaultWindowWidth, rep.Width)
		require.Empty(t, rep.Cookie)
		require.True(t, rep.Ads)
		require.True(t, site.asked("/img/pixel.png"))
	})
}

// TestBrowserOptionsRefused: options the driver gets unchecked (a hub of
// another version) fail the job with the field named, before any browser
// starts.
func TestBrowserOptionsRefused(t *testing.T) {
	d, _ := newDriver(t, 1)
	r := runJob(t, d, 0, "job-bad", messages.ModeFetch, map[string]any{"url": "about:blank", "viewport": map[string]any{"width": 0, "height": 100}}, 0)
	require.Error(t, r.err)
	require.Equal(t, "job_error", r.reason())
	require.Contains(t, r.err.Error(), "viewport.width: 0 is out of range 100..8192")
	require.Zero(t, laneStarts(d, 0))

	// A proxy at a denied address (the metadata service) is refused by
	// the egress policy before the page opens.
	r = runJob(t, d, 0, "job-meta", messages.ModeFetch, map[string]any{"url": "about:blank", "proxy": map[string]any{"server": "http://169.254.169.254:80"}}, 0)
	require.Error(t, r.err)
	require.Contains(t, r.err.Error(), "proxy.server: egress policy denies 169.254.169.254")
}

func TestGlobMatch(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		p, s string
		ok   bool
	}{
		{"*", "anything", true},
		{"*/ads/*", "http://x/ads/a.js", true},
		{"*/ads/*", "http://x/adsx/a.js", false},
		{"*.png", "http://x/a.png", true},
		{"*.png", "http://x/a.png?x", false},
		{"http://x/*/b*c", "http://x/a/bzzc", true},
		{"http://x/*/b*c", "http://x/a/bzzcd", false},
		{"abc", "abc", true},
		{"abc", "abcd", false},
		{"a**b", "ab", true},
	} {
		require.Equal(t, c.ok, globMatch(c.p, c.s), "%q ~ %q", c.p, c.s)
	}
}

// driveReport loads url in a new page of the browser's default context
// through its DevTools URL, as a raw CDP client would, and returns the
// page's report.
func driveReport(t *testing.T, wsURL, url string) pageReport {
	t.Helper()
	actx, cancelAlloc := remote.NewAllocator(context.Background(), wsURL, remote.NoModifyURL)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancelRun := context.WithTimeout(ctx, waitTimeout)
	defer cancelRun()
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(url)))
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string]("JSON.stringify(window.report)"))
	require.NoError(t, err)
	require.NoError(t, chromedp.Cancel(ctx))
	var r pageReport
	require.NoError(t, json.Unmarshal([]byte(s), &r))
	return r
}
