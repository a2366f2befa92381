package chromium

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/storage"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/remote"
	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/agent"
	"github.com/paprika-hub/paprika/messages"
)

// sessionDo runs one session command and decodes its result.
func sessionDo(t *testing.T, s agent.Session, cmd map[string]any) map[string]any {
	t.Helper()
	raw, err := json.Marshal(cmd)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	out, err := s.Do(ctx, raw)
	require.NoError(t, err, "%v", cmd)
	var m map[string]any
	require.NoError(t, json.Unmarshal(out, &m))
	return m
}

// openSession opens a session on lane 0.
func openSession(t *testing.T, d *Driver, id string) agent.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	s, err := d.OpenSession(ctx, 0, id, messages.BrowserOptions{})
	require.NoError(t, err)
	return s
}

// readBack is a macro that reads what a previous user may have left for
// the site: the cookie the server sees, the cookie and localStorage the
// page sees.
func readBack(site string) map[string]any {
	return map[string]any{"steps": []map[string]any{
		{"op": "navigate", "url": site + "/show-cookie"},
		{"op": "text", "selector": "#c"},
		{"op": "eval", "expression": `document.cookie + "|" + (localStorage.getItem("secret") || "") + "|" + (localStorage.getItem("mine") || "")`},
	}}
}

// requireNothingLeft checks a readBack job's result.
func requireNothingLeft(t *testing.T, r jobRun) {
	t.Helper()
	steps := resultMap(t, r)["steps"].([]any)
	require.Equal(t, "cookie=[]", steps[1].(map[string]any)["text"], "the server saw a cookie of the previous user")
	require.Equal(t, "||", steps[2].(map[string]any)["value"], "the page saw a cookie or storage of the previous user")
}

// rawClient is a CDP client connected straight to a lane's browser, as one
// coming through the CDP gateway is: its pages live in the default
// BrowserContext, as Playwright's connectOverCDP uses it.
type rawClient struct {
	bctx   context.Context // browser-level chromedp context
	cancel func()
}

func dialRaw(t *testing.T, wsURL string) *rawClient {
	t.Helper()
	actx, cancelAlloc := remote.NewAllocator(context.Background(), wsURL, remote.NoModifyURL)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	tctx, cancelTimeout := context.WithTimeout(bctx, waitTimeout)
	_, err := chromedp.CallBrowser(tctx, target.GetTargets, target.GetTargetsParams{}) // connects
	require.NoError(t, err)
	c := &rawClient{bctx: tctx, cancel: func() { cancelTimeout(); cancelBrowser(); cancelAlloc() }}
	t.Cleanup(c.cancel)
	return c
}

// tab opens a page in the default context; leave keeps it open when the
// client goes away.
func (c *rawClient) tab(t *testing.T, url string, leave bool) context.Context {
	t.Helper()
	var opts []chromedp.ContextOption
	if leave {
		opts = append(opts, chromedp.WithDetachOnCancel())
	}
	tctx, _ := chromedp.NewContext(c.bctx, opts...) // ends with the client
	require.NoError(t, chromedp.Do(tctx, chromedp.Navigate(url)))
	return tctx
}

// pages counts the page targets of the browser, by BrowserContext.
func (c *rawClient) pages(t *testing.T) (inDefault, elsewhere int) {
	t.Helper()
	bcs, err := chromedp.CallBrowser(c.bctx, target.GetBrowserContexts, cdp.Empty{})
	require.NoError(t, err)
	ts, err := chromedp.CallBrowser(c.bctx, target.GetTargets, target.GetTargetsParams{})
	require.NoError(t, err)
	for _, info := range ts.TargetInfos {
		switch {
		case info.Type != "page":
		case info.BrowserContextID == bcs.DefaultBrowserContextID:
			inDefault++
		default:
			elsewhere++
		}
	}
	return inDefault, elsewhere
}

// TestLaneHygiene: what one user of a lane leaves — through session
// commands, or as a raw CDP client in the default BrowserContext (cookies,
// localStorage, 3 extra tabs, a BrowserContext of its own, a granted
// permission, a download behaviour) — is gone for the next user, without
// a browser restart; a cleanup that fails restarts the browser instead.
func TestLaneHygiene(t *testing.T) {
	s := newSite(t)
	var fail atomic.Bool
	d, _ := newDriver(t, 1, func(c *Config) {
		c.cleanupFault = func(step string) error {
			if fail.Load() && step == "clear storage" {
				return errors.New("injected fault")
			}
			return nil
		}
	})

	// A session's commands set a cookie and localStorage on the site.
	sess := openSession(t, d, "s-commands")
	sessionDo(t, sess, map[string]any{"op": "navigate", "url": s.URL + "/set-cookie"})
	got := sessionDo(t, sess, map[string]any{"op": "eval", "expression": `document.cookie = "mine=1; max-age=3600"; localStorage.setItem("mine", "1"); document.cookie`})
	require.Contains(t, got["value"], "sid=s3cret")
	require.Contains(t, got["value"], "mine=1")
	require.NoError(t, sess.Close())
	requireNothingLeft(t, runJob(t, d, 0, "j-after-commands", "macro", readBack(s.URL), 0))
	require.Equal(t, 1, laneStarts(d, 0))
	require.Equal(t, HygieneCounts{Cleanups: 2}, d.Hygiene(), "the session and the job each cleaned the lane")

	// A raw CDP client, during a session, uses the default context.
	sess = openSession(t, d, "s-raw")
	raw := dialRaw(t, devToolsURL(t, d, 0))
	first := raw.tab(t, s.URL+"/set-cookie", true)
	_, err := chromedp.Run(first, chromedp.Evaluate[any](`localStorage.setItem("mine", "raw"); document.cookie = "mine=raw; max-age=3600"`))
	require.NoError(t, err)
	for range 3 {
		_, err := chromedp.CallBrowser(raw.bctx, target.CreateTarget, target.CreateTargetParams{URL: s.URL + "/static"})
		require.NoError(t, err)
	}
	bc, err := chromedp.CallBrowser(raw.bctx, target.CreateBrowserContext, target.CreateBrowserContextParams{})
	require.NoError(t, err)
	_, err = chromedp.CallBrowser(raw.bctx, target.CreateTarget, target.CreateTargetParams{URL: s.URL + "/static", BrowserContextID: bc.BrowserContextID})
	require.NoError(t, err)
	_, err = chromedp.CallBrowser(raw.bctx, browser.SetPermission, browser.SetPermissionParams{Origin: s.URL, Permission: &browser.PermissionDescriptor{Name: "geolocation"}, Setting: browser.PermissionSettingGranted})
	require.NoError(t, err)
	_, err = chromedp.CallBrowser(raw.bctx, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{Behavior: browser.SetDownloadBehaviorBehaviorAllow, DownloadPath: t.TempDir()})
	require.NoError(t, err)
	inDefault, elsewhere := raw.pages(t)
	require.Equal(t, 4, inDefault, "the client's tab and its 3 extra tabs")
	require.Equal(t, 2, elsewhere, "the session's page and the client's own context's")
	raw.cancel() // the client goes away, leaving it all
	require.NoError(t, sess.Close())
	require.Equal(t, 1, laneStarts(d, 0), "cleaned, not restarted")
	require.Equal(t, HygieneCounts{Cleanups: 3}, d.Hygiene())

	// The next job, and the next raw client, find none of it.
	requireNothingLeft(t, runJob(t, d, 0, "j-after-raw", "macro", readBack(s.URL), 0))
	raw = dialRaw(t, devToolsURL(t, d, 0))
	inDefault, elsewhere = raw.pages(t)
	require.Zero(t, inDefault+elsewhere, "pages left open")
	bcs, err := chromedp.CallBrowser(raw.bctx, target.GetBrowserContexts, cdp.Empty{})
	require.NoError(t, err)
	require.Empty(t, bcs.BrowserContextIDs, "a BrowserContext left")
	cookies, err := chromedp.CallBrowser(raw.bctx, storage.GetCookies, storage.GetCookiesParams{})
	require.NoError(t, err)
	require.Empty(t, cookies.Cookies, "cookies left in the default context")
	page := raw.tab(t, s.URL+"/show-cookie", false)
	left, err := chromedp.Run(page, chromedp.Evaluate[string](`document.getElementById("c").textContent + document.cookie + "|" + (localStorage.getItem("secret") || "") + (localStorage.getItem("mine") || "")`))
	require.NoError(t, err)
	require.Equal(t, "cookie=[]|", left, "the default context kept cookies or localStorage")
	perm, err := chromedp.Run(page, chromedp.Evaluate[string](`navigator.permissions.query({name: "geolocation"}).then(p => p.state)`, chromedp.EvalAwaitPromise))
	require.NoError(t, err)
	require.Equal(t, "prompt", perm, "the granted permission was kept")
	require.NoError(t, chromedp.Cancel(page))
	raw.cancel()
	require.Equal(t, 1, laneStarts(d, 0), "cleaned, not restarted")

	// A cleanup that fails restarts the browser, in the background.
	fail.Store(true)
	r := runJob(t, d, 0, "j-fault", "macro", map[string]any{"steps": []map[string]any{{"op": "navigate", "url": s.URL + "/set-cookie"}}}, 0)
	require.NoError(t, r.err)
	require.Equal(t, int64(1), d.Hygiene().Restarts)
	fail.Store(false)
	waitFor(t, func() bool { return laneStarts(d, 0) == 2 && d.LaneState(0) == "" })
	requireNothingLeft(t, runJob(t, d, 0, "j-after-restart", "macro", readBack(s.URL), 0))
	require.Equal(t, 2, laneStarts(d, 0), "the restart happened once, after the faulty cleanup")
}

// TestLaneStateRestarting: a lane marked suspect while in use (as one
// whose browser runs with a user's flags is) restarts when its user
// releases it: LaneState says restarting until the new browser is up, and
// the next job waits for it rather than failing.
func TestLaneStateRestarting(t *testing.T) {
	s := newSite(t)
	d, _ := newDriver(t, 1)
	require.Empty(t, d.LaneState(0))
	sess := openSession(t, d, "s-suspect")
	require.Equal(t, 1, laneStarts(d, 0))
	d.lanes[0].markSuspect("test: started with the user's flags")
	require.NoError(t, sess.Close())
	// The restart's start takes far longer than this test takes to look.
	require.Equal(t, messages.LaneRestarting, d.LaneState(0))
	r := runJob(t, d, 0, "j-after", "fetch", map[string]any{"url": s.URL + "/static", "screenshot": false}, 0)
	require.NoError(t, r.err)
	require.Equal(t, 2, laneStarts(d, 0))
	require.Empty(t, d.LaneState(0))
	require.Equal(t, HygieneCounts{Cleanups: 1, Restarts: 1}, d.Hygiene())
}

// BenchmarkLaneRelease measures what handing a lane to its next user costs:
// a cleanup after a user who kept to its own BrowserContext (every job),
// one after a raw client who also opened a page in the default context,
// and a restart (what a lane without hygiene would pay). Report the
// cleanups as ratios to the restart. Run it with
//
//	go test -run '^$' -bench BenchmarkLaneRelease -benchtime 20x ./agent/chromium/
func BenchmarkLaneRelease(b *testing.B) {
	s := newSite(b)
	d, _ := newDriver(b, 1)
	l := d.lanes[0]
	ctx := context.Background()
	use := func(b *testing.B, prepare func(*browserProc)) {
		for b.Loop() {
			b.StopTimer()
			release, err := l.acquire(ctx)
			if err != nil {
				b.Fatal(err)
			}
			br, err := l.ensure(ctx, func(string) {})
			if err != nil {
				b.Fatal(err)
			}
			prepare(br)
			b.StartTimer()
			release()
			// A restart holds the lane until the new browser is up; the
			// lane is freed again without a cleanup (nothing ran).
			if _, err := l.acquire(ctx); err != nil {
				b.Fatal(err)
			}
			<-l.sem
		}
	}
	b.Run("clean/own-context", func(b *testing.B) {
		use(b, func(*browserProc) {})
	})
	b.Run("clean/default-context", func(b *testing.B) {
		use(b, func(br *browserProc) {
			tctx, cancel := context.WithTimeout(br.ctx, waitTimeout)
			defer cancel()
			if _, err := chromedp.CallBrowser(tctx, target.CreateTarget, target.CreateTargetParams{URL: s.URL + "/set-cookie"}); err != nil {
				b.Fatal(err)
			}
		})
	})
	b.Run("restart", func(b *testing.B) {
		use(b, func(*browserProc) { l.markSuspect("benchmark") })
	})
	h := d.Hygiene()
	b.Logf("cleanups %d, restarts %d", h.Cleanups, h.Restarts)
}
