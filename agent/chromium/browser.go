package chromium

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/remote"

	"github.com/paprika-hub/paprika/internal/backoff"
)

// browserProc is one running Chromium process (with its helpers) and the
// chromedp connection to it. Its lifetime is ctx: it ends when stop is
// called, when the driver closes, or when the connection to the browser is
// lost (chromedp cancels it then, e.g. when the process is killed).
type browserProc struct {
	// Fixed after startBrowser.
	dir       string          // profile directory (--user-data-dir)
	ctx       context.Context // chromedp browser context
	pid       int             // main process; also its process group id
	wsURL     string          // DevTools URL, ws://127.0.0.1:<port>/devtools/browser/<id>
	startedAt time.Time
	log       *slog.Logger
	use       usage  // what the lane's users touched since the last cleanup (hygiene.go)
	launchKey string // launch.Key of its command line: "" for the driver's own

	cancelBrowser context.CancelFunc // kills the process, waits for it
	cancelAlloc   context.CancelFunc // waits for the allocator's goroutines
	stopOnce      sync.Once
}

// browserFlags is Chromium's command line (without --user-data-dir and the
// debugging port, which startBrowser adds). The first block is what this
// machine needs (see /work/.library/env/machines/go-svc.md: without the
// background-networking flags the closed network refuses connections en
// masse); the second keeps pages in background windows running at full
// speed, since every lane's window is a background one.
func browserFlags(cfg Config, path string) []chromedp.ExecAllocatorOption {
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless, // also hide-scrollbars, mute-audio
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-breakpad", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("disable-client-side-phishing-detection", true),
		chromedp.Flag("safebrowsing-disable-auto-update", true),
		chromedp.Flag("metrics-recording-only", true),
		chromedp.Flag("password-store", "basic"),
		chromedp.Flag("use-mock-keychain", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-features", "Translate,MediaRouter,OptimizationHints,SpareRendererForSitePerProcess"),

		chromedp.Flag("disable-background-timer-throttling", true),
		chromedp.Flag("disable-backgrounding-occluded-windows", true),
		chromedp.Flag("disable-renderer-backgrounding", true),
		chromedp.Flag("disable-hang-monitor", true),
		chromedp.Flag("disable-ipc-flooding-protection", true),
		chromedp.Flag("force-color-profile", "srgb"),
		chromedp.WindowSize(cfg.WindowWidth, cfg.WindowHeight),
	}
	if cfg.NoSandbox || os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox)
	}
	for _, f := range cfg.ExtraFlags {
		name, value, hasValue := strings.Cut(strings.TrimPrefix(f, "--"), "=")
		if hasValue {
			opts = append(opts, chromedp.Flag(name, value))
		} else {
			opts = append(opts, chromedp.Flag(name, true))
		}
	}
	return opts
}

// startBrowser starts Chromium with a fresh profile in dir and connects to it
// over its DevTools WebSocket (the port is what LaneURL reports). The
// browser lives until stop or until parent ends; ctx only bounds the start.
func startBrowser(ctx, parent context.Context, opts []chromedp.ExecAllocatorOption, dir string, timeout time.Duration, log *slog.Logger) (*browserProc, error) {
	if err := os.RemoveAll(dir); err != nil {
		return nil, fmt.Errorf("wipe profile %s: %w", dir, err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create profile %s: %w", dir, err)
	}
	opts = append(opts[:len(opts):len(opts)],
		chromedp.UserDataDir(dir),
		chromedp.Flag("remote-debugging-address", "127.0.0.1"),
		chromedp.Flag("remote-debugging-port", "0"),
		remote.WebSocket,
		chromedp.ModifyCmdFunc(prepareCmd),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(parent, opts...)
	bctx, cancelBrowser := chromedp.NewContext(actx,
		chromedp.WithLogf(func(format string, args ...any) { log.Debug("chromedp: " + fmt.Sprintf(format, args...)) }),
		chromedp.WithErrorf(func(format string, args ...any) { log.Debug("chromedp error: " + fmt.Sprintf(format, args...)) }),
	)
	b := &browserProc{dir: dir, ctx: bctx, cancelBrowser: cancelBrowser, cancelAlloc: cancelAlloc, log: log, startedAt: time.Now()}

	// The browser's life is bound to the context of its first call, so that
	// call gets bctx itself; the start is bounded from outside instead.
	started := make(chan error, 1)
	var infos []*target.Info
	go func() { // ends when Targets returns, at the latest when bctx ends
		var err error
		infos, err = chromedp.Targets(bctx)
		started <- err
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	var err error
	select {
	case err = <-started:
	case <-t.C:
		err = fmt.Errorf("no answer within %s", timeout)
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err == nil {
		err = b.afterStart(infos)
	}
	if err != nil {
		b.stop()
		<-started // already sent, or sent soon now that bctx is cancelled
		return nil, fmt.Errorf("start chromium: %w", err)
	}
	return b, nil
}

// afterStart reads the process id and the DevTools URL, closes the blank tab
// Chromium opens at start (so that a lane's only page is its job's) and turns
// on target discovery, which the popup guard listens to.
func (b *browserProc) afterStart(infos []*target.Info) error {
	c := chromedp.FromContext(b.ctx)
	if c == nil || c.Browser == nil || c.Browser.Process() == nil {
		return errors.New("no browser process")
	}
	b.pid = c.Browser.Process().Pid
	port, err := os.ReadFile(filepath.Join(b.dir, "DevToolsActivePort"))
	if err != nil {
		return fmt.Errorf("read DevTools port: %w", err)
	}
	lines := strings.SplitN(strings.TrimSpace(string(port)), "\n", 2)
	if len(lines) != 2 {
		return fmt.Errorf("DevToolsActivePort %q: want a port and a path", port)
	}
	if _, err := strconv.Atoi(lines[0]); err != nil {
		return fmt.Errorf("DevToolsActivePort %q: bad port: %w", port, err)
	}
	b.wsURL = "ws://127.0.0.1:" + lines[0] + strings.TrimSpace(lines[1])

	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	for _, info := range infos {
		if info.Type == "page" {
			if _, err := chromedp.CallBrowser(ctx, target.CloseTarget, target.CloseTargetParams{TargetID: info.TargetID}); err != nil {
				return fmt.Errorf("close the start tab: %w", err)
			}
		}
	}
	bcs, err := chromedp.CallBrowser(ctx, target.GetBrowserContexts, cdp.Empty{})
	if err != nil {
		return fmt.Errorf("list browser contexts: %w", err)
	}
	b.use.defaultBC = bcs.DefaultBrowserContextID
	// Before discovery, so that no target's first event is missed.
	if err := chromedp.ListenBrowser(b.ctx, b.use.onEvent); err != nil {
		return fmt.Errorf("listen to targets: %w", err)
	}
	if _, err := chromedp.CallBrowser(ctx, target.SetDiscoverTargets, target.SetDiscoverTargetsParams{Discover: true}); err != nil {
		return fmt.Errorf("discover targets: %w", err)
	}
	// Chromium answers Target.closeTarget before the tab is gone; wait, so
	// that the lane's page count is exact from the start.
	for {
		n, err := b.pages(time.Second)
		switch {
		case err != nil:
			return err
		case n == 0:
			b.use.reset() // the start tab was the browser's, not a user's
			return nil
		}
		if err := backoff.Sleep(ctx, 10*time.Millisecond); err != nil {
			return fmt.Errorf("the start tab did not close: %w", err)
		}
	}
}

// check is the health check: the browser must still be connected, answer a
// cheap CDP call (Target.getTargets) within timeout, and have no page left
// over from the previous user. It returns why the browser is unfit, or "".
func (b *browserProc) check(timeout time.Duration) string {
	if err := b.ctx.Err(); err != nil {
		return "browser exited: " + b.exitCause().Error()
	}
	ctx, cancel := context.WithTimeout(b.ctx, timeout)
	defer cancel()
	res, err := chromedp.CallBrowser(ctx, target.GetTargets, target.GetTargetsParams{})
	switch {
	case b.ctx.Err() != nil:
		return "browser exited: " + b.exitCause().Error()
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Sprintf("browser did not answer the health check within %s (hung)", timeout)
	case err != nil:
		return "health check failed: " + err.Error()
	}
	for _, info := range res.TargetInfos {
		if info.Type == "page" {
			return fmt.Sprintf("a page (%s) outlived its job", info.URL)
		}
	}
	return ""
}

// pages counts the browser's page targets (tabs and popups).
func (b *browserProc) pages(timeout time.Duration) (int, error) {
	ctx, cancel := context.WithTimeout(b.ctx, timeout)
	defer cancel()
	res, err := chromedp.CallBrowser(ctx, target.GetTargets, target.GetTargetsParams{})
	if err != nil {
		return 0, fmt.Errorf("list targets: %w", err)
	}
	n := 0
	for _, info := range res.TargetInfos {
		if info.Type == "page" {
			n++
		}
	}
	return n, nil
}

// exitCause says why the browser's context ended.
func (b *browserProc) exitCause() error {
	if err := context.Cause(b.ctx); err != nil {
		return err
	}
	return errors.New("still running")
}

// closeTarget closes one target; used by the popup guard.
func (b *browserProc) closeTarget(id target.ID) error {
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	_, err := chromedp.CallBrowser(ctx, target.CloseTarget, target.CloseTargetParams{TargetID: id})
	return err
}

// stop kills the browser and every helper process, waits for chromedp's
// goroutines, and removes the profile. Safe to call twice and concurrently.
//
// Killing is deliberate: the profile is thrown away anyway, so there is
// nothing for a graceful Browser.close to save, and a hung browser would not
// answer it.
func (b *browserProc) stop() {
	b.stopOnce.Do(func() {
		b.cancelBrowser() // SIGKILL to the main process (exec.CommandContext), then wait
		b.cancelAlloc()
		if n := killLeftovers(b.pid, b.dir); n > 1 {
			b.log.Debug("killed leftover chromium processes", "pid", b.pid, "killed", n)
		}
		if err := removeAllRetry(b.dir); err != nil {
			b.log.Warn("remove chromium profile", "dir", b.dir, "err", err)
		}
	})
}

// removeAllRetry removes dir, retrying for a while: a helper that was just
// killed may still be writing into it.
func removeAllRetry(dir string) error {
	deadline := time.Now().Add(3 * time.Second)
	for {
		err := os.RemoveAll(dir)
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}
