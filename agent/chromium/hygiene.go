package chromium

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/storage"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/paprika-hub/paprika/internal/backoff"
)

// Lane hygiene: when a job or a session releases its lane, the lane's
// browser is cleaned for the next user, and restarted only when cleaning
// is not enough.
//
// A job's or session's own page lives in a BrowserContext of its own,
// disposed when the tab closes (tab.close), which takes its cookies,
// storage, cache, permissions and proxy with it. What that does not cover
// is what a raw CDP client (the CDP gateway; Playwright's connectOverCDP
// works in the default context) may leave: pages, windows and contexts it
// opened, and the default context's cookies, storage, HTTP cache,
// permissions and download behaviour, which live in the profile for the
// browser's whole life. clean takes those away without a restart:
//
//  1. every page-like target still open is closed, every BrowserContext
//     still there is disposed;
//  2. when the default context was used since the last cleanup (a target
//     was seen in it, or it holds cookies), a scratch page in it clears
//     Storage.clearDataForOrigin(all) for every origin seen in a target's
//     URL or a cookie's domain (and once for "*", which this Chromium
//     takes as every origin), and Network.clearBrowserCache;
//  3. Storage.clearCookies, Browser.resetPermissions and
//     Browser.setDownloadBehavior(default) run every time (a client can
//     set them without ever opening a page), and the lane's downloads
//     directory is emptied;
//  4. it verifies: no target but the browser's own, no BrowserContext, no
//     cookie.
//
// The lane restarts instead (the old profile is thrown away with the old
// process) when a step fails or the whole exceeds Config.CleanupTimeout,
// when more origins were used than are tracked (maxTrackedOrigins), when
// the browser exited, or when the lane was marked suspect (a crashed
// renderer, a page that would not close, a browser started with per-user
// flags).
//
// Not covered by a cleanup without restart: state a client keeps outside
// what Chromium reports per origin — the HTTP auth cache and the socket
// pools of the default context, a download still in progress, and storage
// of an origin that only ever lived in a same-process iframe and set no
// cookie (the "*" clear takes it on this Chromium; the tracked origins do
// not name it). A raw client's tunnel must be closed before its session
// releases the lane, or it could open a page after the check.

// maxTrackedOrigins bounds the origins a browser remembers between two
// cleanups; a use touching more cannot be cleaned origin by origin, and
// the lane restarts instead.
const maxTrackedOrigins = 512

// Target types of the browser itself: present in a clean browser, never
// closed. Headless Chromium 156 keeps a few browser_ui targets (the
// omnibox popup) in the default context.
var browserOwnTargets = []string{"browser", "browser_ui"}

// Target types a cleanup closes. Others (iframes, workers, service
// workers) end with their page or their context, or with the clearing of
// their origin's data; the check then finds none left.
var closableTargets = []string{"page", "background_page", "webview", "app", "tab", "other"}

// usage is what the users of one browser touched since its last cleanup,
// as its target events show them. It is fed on the browser's event loop
// (onEvent must return at once) and read by the lane's holder.
type usage struct {
	defaultBC cdp.BrowserContextID // fixed after afterStart

	mu       sync.Mutex
	origins  map[string]struct{}
	overflow bool // more than maxTrackedOrigins
	dirty    bool // a target of the default context was seen
}

// onEvent records the target of a created or changed target event.
func (u *usage) onEvent(ev any) {
	switch e := ev.(type) {
	case *target.EventTargetCreated:
		u.see(e.TargetInfo)
	case *target.EventTargetInfoChanged:
		u.see(e.TargetInfo)
	}
}

// see records one target: its URL's origin, and whether it is in the
// default context.
func (u *usage) see(info *target.Info) {
	if info == nil || slices.Contains(browserOwnTargets, string(info.Type)) {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if info.BrowserContextID == u.defaultBC {
		u.dirty = true
	}
	u.addLocked(originOf(info.URL))
}

// addOrigin records an origin learnt elsewhere (a cookie's domain).
func (u *usage) addOrigin(o string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.addLocked(o)
}

func (u *usage) addLocked(o string) {
	if o == "" {
		return
	}
	if _, ok := u.origins[o]; ok {
		return
	}
	if len(u.origins) >= maxTrackedOrigins {
		u.overflow = true
		return
	}
	if u.origins == nil {
		u.origins = map[string]struct{}{}
	}
	u.origins[o] = struct{}{}
}

// snapshot returns what was recorded so far.
func (u *usage) snapshot() (origins []string, dirty, overflow bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for o := range u.origins {
		origins = append(origins, o)
	}
	slices.Sort(origins)
	return origins, u.dirty, u.overflow
}

// reset forgets what a successful cleanup took away.
func (u *usage) reset() {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.origins, u.dirty, u.overflow = nil, false, false
}

// originOf is the web origin of a URL (scheme://host[:port]) for http,
// https, ws and wss; "" for every other URL (about:, data:, chrome:).
func originOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return ""
	}
	switch u.Scheme {
	case "http", "https":
	case "ws":
		u.Scheme = "http"
	case "wss":
		u.Scheme = "https"
	default:
		return ""
	}
	return u.Scheme + "://" + strings.ToLower(u.Host)
}

// HygieneCounts says how lanes came back for their next user since New.
type HygieneCounts struct {
	// Cleanups counts releases cleaned without a restart.
	Cleanups int64
	// Restarts counts releases that restarted the browser instead: a
	// cleanup step failed or timed out, the lane was marked suspect, its
	// browser had exited, or it could not be verified clean.
	Restarts int64
}

// Hygiene returns the counts of cleanups and restarts of every lane (the
// worker has no metrics endpoint; each restart is also a log line).
func (d *Driver) Hygiene() HygieneCounts {
	return HygieneCounts{Cleanups: d.cleanups.Load(), Restarts: d.restarts.Load()}
}

// release is the end of a user's hold on the lane (acquire's release): it
// cleans the browser for the next user, or restarts it when cleaning does
// not suffice, runs the holder's beforeFree once the browser is clean or
// stopped (a session's guard disconnects there), and frees the lane.
func (l *lane) release() {
	l.mu.Lock()
	b, why, closed := l.b, l.suspect, l.closed
	last := l.beforeFree
	l.beforeFree = nil
	l.mu.Unlock()
	if last == nil {
		last = func() {}
	}
	switch {
	case closed || b == nil: // nothing ran, or Close stopped it: nothing to clean
		last()
		<-l.sem
		return
	case why != "":
	case b.ctx.Err() != nil:
		why = "browser exited: " + b.exitCause().Error()
	default:
		start := time.Now()
		err := l.clean(b)
		if err == nil {
			l.d.cleanups.Add(1)
			l.d.log.Debug("lane cleaned", "lane", l.idx, "took", time.Since(start).Round(time.Microsecond))
			last()
			<-l.sem
			return
		}
		if l.d.ctx.Err() != nil { // Close is killing every browser
			last()
			<-l.sem
			return
		}
		why = "cleanup failed: " + err.Error()
	}
	l.restart(b, why, last)
}

// restart stops b at once — the previous user's profile goes with it — and
// starts a new browser in the background, holding the lane until it is up
// (or its start failed: then the next user starts one). last runs once b
// is stopped. The caller holds sem; restart frees it.
func (l *lane) restart(b *browserProc, why string, last func()) {
	l.d.restarts.Add(1)
	l.events.restart()
	l.d.log.Warn("lane not clean; restarting chromium", "lane", l.idx, "pid", b.pid, "why", why)
	l.setRestarting(true)
	l.mu.Lock()
	if l.b == b {
		l.b = nil
		l.url.CompareAndSwap(&b.wsURL, nil)
	}
	l.suspect = ""
	closed := l.closed
	if !closed {
		l.restarts.Add(1) // under mu after the closed check, like watchers
	}
	l.mu.Unlock()
	b.stop()
	last()
	if closed {
		l.setRestarting(false)
		<-l.sem
		return
	}
	go func() {
		defer l.restarts.Done()
		defer func() { <-l.sem }()
		note := func(line string) { l.d.log.Info(line) }
		if _, err := l.ensure(l.d.ctx, note); err != nil && !errors.Is(err, errDriverClosed) {
			l.d.log.Warn("chromium lane restart failed; its next user tries again", "lane", l.idx, "err", err)
		}
		l.setRestarting(false)
	}()
}

// clean takes away what the lane's last user left in b (see the top of
// this file), within Config.CleanupTimeout. An error means the browser is
// not known to be clean.
func (l *lane) clean(b *browserProc) error {
	ctx, cancel := context.WithTimeout(b.ctx, l.d.cfg.CleanupTimeout)
	defer cancel()
	err := l.cleanSteps(ctx, b)
	if err != nil && ctx.Err() != nil && b.ctx.Err() == nil {
		return fmt.Errorf("not done within %s: %w", l.d.cfg.CleanupTimeout, err)
	}
	return err
}

func (l *lane) cleanSteps(ctx context.Context, b *browserProc) error {
	step := func(name string, fn func() error) error {
		if fault := l.d.cfg.cleanupFault; fault != nil {
			if err := fault(name); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
		}
		if err := fn(); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		return nil
	}

	if err := step("close targets", func() error {
		res, err := chromedp.CallBrowser(ctx, target.GetTargets, target.GetTargetsParams{})
		if err != nil {
			return err
		}
		for _, info := range res.TargetInfos {
			b.use.see(info)
			// Pages of another context go with it, below.
			inDefault := b.use.defaultBC == "" || info.BrowserContextID == b.use.defaultBC
			if inDefault && slices.Contains(closableTargets, string(info.Type)) {
				if _, err := chromedp.CallBrowser(ctx, target.CloseTarget, target.CloseTargetParams{TargetID: info.TargetID}); err != nil {
					return fmt.Errorf("%s (%s): %w", info.TargetID, info.URL, err)
				}
			}
		}
		return nil
	}); err != nil {
		return err
	}
	if err := step("dispose contexts", func() error {
		res, err := chromedp.CallBrowser(ctx, target.GetBrowserContexts, cdp.Empty{})
		if err != nil {
			return err
		}
		for _, id := range res.BrowserContextIDs {
			if _, err := chromedp.CallBrowser(ctx, target.DisposeBrowserContext, target.DisposeBrowserContextParams{BrowserContextID: id}); err != nil {
				return fmt.Errorf("%s: %w", id, err)
			}
		}
		return nil
	}); err != nil {
		return err
	}
	if err := step("clear storage", func() error {
		res, err := chromedp.CallBrowser(ctx, storage.GetCookies, storage.GetCookiesParams{})
		if err != nil {
			return err
		}
		for _, c := range res.Cookies {
			d := strings.TrimPrefix(c.Domain, ".")
			b.use.addOrigin(originOf("https://" + d))
			b.use.addOrigin(originOf("http://" + d))
		}
		origins, dirty, overflow := b.use.snapshot()
		if overflow {
			return fmt.Errorf("more than %d origins used: not cleared one by one", maxTrackedOrigins)
		}
		if !dirty && len(res.Cookies) == 0 {
			return nil // the default context was not used: nothing of it to clear
		}
		return b.inDefaultPage(ctx, func(pctx context.Context) error {
			// "*" is no origin; this Chromium clears every origin for it.
			// The origins seen are cleared by name as well, in case a later
			// one does not.
			for _, o := range append([]string{"*"}, origins...) {
				if _, err := chromedp.Call(pctx, storage.ClearDataForOrigin, storage.ClearDataForOriginParams{Origin: o, StorageTypes: "all"}); err != nil {
					return fmt.Errorf("origin %s: %w", o, err)
				}
			}
			if _, err := chromedp.Call(pctx, network.ClearBrowserCache, cdp.Empty{}); err != nil {
				return fmt.Errorf("HTTP cache: %w", err)
			}
			return nil
		})
	}); err != nil {
		return err
	}
	if err := step("reset browser", func() error {
		if _, err := chromedp.CallBrowser(ctx, storage.ClearCookies, storage.ClearCookiesParams{}); err != nil {
			return fmt.Errorf("cookies: %w", err)
		}
		if _, err := chromedp.CallBrowser(ctx, browser.ResetPermissions, browser.ResetPermissionsParams{}); err != nil {
			return fmt.Errorf("permissions: %w", err)
		}
		if _, err := chromedp.CallBrowser(ctx, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{Behavior: browser.SetDownloadBehaviorBehaviorDefault}); err != nil {
			return fmt.Errorf("download behavior: %w", err)
		}
		if err := os.RemoveAll(l.downloadDir()); err != nil {
			return fmt.Errorf("downloads: %w", err)
		}
		if err := os.RemoveAll(filepath.Join(b.dir, userDownloadsDir)); err != nil {
			return fmt.Errorf("downloads: %w", err)
		}
		return nil
	}); err != nil {
		return err
	}
	if err := step("verify", func() error { return b.verifyClean(ctx) }); err != nil {
		return err
	}
	b.use.reset()
	return nil
}

// userDownloadsDir, under the browser's profile, holds one folder per job
// or session for its downloads (downloads.go); a cleanup removes it, with
// any download that began after its user's page work ended.
const userDownloadsDir = "paprika-downloads"

// downloadDir is where the lane's downloads go (its user's files); a
// cleanup empties it.
func (l *lane) downloadDir() string {
	return filepath.Join(l.d.workDir, fmt.Sprintf("lane-%d-downloads", l.idx))
}

// inDefaultPage runs fn on a scratch page of the default BrowserContext
// (Storage.clearDataForOrigin and Network.clearBrowserCache need a page's
// session: the browser's own refuses them), then closes the page.
func (b *browserProc) inDefaultPage(ctx context.Context, fn func(context.Context) error) error {
	pctx, cancel := context.WithCancelCause(b.ctx)
	defer cancel(nil)
	sctx, _ := chromedp.NewContext(pctx) // its cancel is chromedp.Cancel(sctx), below
	stop := context.AfterFunc(ctx, func() { cancel(context.Cause(ctx)) })
	defer stop()
	// The page lives as long as the context of its first call: sctx itself.
	if err := chromedp.Do(sctx); err != nil {
		return fmt.Errorf("open a scratch page: %w", err)
	}
	err := fn(sctx)
	if cerr := chromedp.Cancel(sctx); cerr != nil && err == nil {
		err = fmt.Errorf("close the scratch page: %w", cerr)
	}
	return err
}

// verifyClean checks that nothing of the last user is left that Chromium
// reports: no target but the browser's own (closed pages, and the workers
// of cleared origins, take a moment to go), no BrowserContext, no cookie.
func (b *browserProc) verifyClean(ctx context.Context) error {
	for {
		left, err := b.leftovers(ctx)
		if err != nil {
			return err
		}
		if left == "" {
			return nil
		}
		if err := backoff.Sleep(ctx, 10*time.Millisecond); err != nil {
			return fmt.Errorf("still there: %s", left)
		}
	}
}

// leftovers describes what is left of a user, "" when nothing.
func (b *browserProc) leftovers(ctx context.Context) (string, error) {
	ts, err := chromedp.CallBrowser(ctx, target.GetTargets, target.GetTargetsParams{})
	if err != nil {
		return "", err
	}
	for _, info := range ts.TargetInfos {
		if !slices.Contains(browserOwnTargets, string(info.Type)) {
			return fmt.Sprintf("a %s target (%s)", info.Type, info.URL), nil
		}
	}
	bcs, err := chromedp.CallBrowser(ctx, target.GetBrowserContexts, cdp.Empty{})
	if err != nil {
		return "", err
	}
	if n := len(bcs.BrowserContextIDs); n > 0 {
		return fmt.Sprintf("%d browser contexts", n), nil
	}
	cs, err := chromedp.CallBrowser(ctx, storage.GetCookies, storage.GetCookiesParams{})
	if err != nil {
		return "", err
	}
	if n := len(cs.Cookies); n > 0 {
		return fmt.Sprintf("%d cookies", n), nil
	}
	return "", nil
}
