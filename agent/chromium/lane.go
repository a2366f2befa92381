package chromium

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// errDriverClosed is returned for work asked of a closed driver.
var errDriverClosed = errors.New("chromium driver closed")

// lane is one browser process with its own profile directory. It has one
// user at a time — a job or a session — who holds sem; only the holder
// starts, checks, cleans and restarts the browser (hygiene.go: the holder
// releasing the lane cleans it for the next, and a background restart
// holds sem until the new browser is up). mu guards the fields that Close
// and DevToolsURL read from other goroutines.
type lane struct {
	// Fixed after New.
	d   *Driver
	idx int
	dir string        // profile directory, wiped at every start
	sem chan struct{} // capacity 1: taken by the lane's user

	url        atomic.Pointer[string] // DevTools URL while a browser runs
	restarting atomic.Bool            // a browser start is under way (LaneState)
	events     laneEvents             // crashes and restarts for Health (health.go)

	// watchers are the watch goroutines, one per browser started; each
	// ends with its browser's context, and shutdown waits for them.
	watchers sync.WaitGroup
	// restarts are the background restarts after a cleanup that did not
	// suffice (hygiene.go); each holds sem until its start ended, and
	// shutdown waits for them.
	restarts sync.WaitGroup

	mu      sync.Mutex
	b       *browserProc // nil until the first use, and after a failed restart
	suspect string       // why the next user must restart the browser; "" if none
	// beforeFree is the holder's last word, run by release once the
	// browser is clean or stopped and before the next user may take the
	// lane: a session's guard disconnects there (guard.go).
	beforeFree func()
	closed     bool
	starts     int // browser starts so far, for tests and logs
}

// acquire takes the lane, waiting while another user holds it (or a
// restart runs). release cleans the lane for the next user, restarting its
// browser when cleaning does not suffice (hygiene.go), and frees it; it is
// safe to call twice.
func (l *lane) acquire(ctx context.Context) (release func(), err error) {
	select {
	case l.sem <- struct{}{}:
		var once sync.Once
		return func() { once.Do(l.release) }, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("wait for lane %d: %w", l.idx, ctx.Err())
	}
}

// ensure returns a healthy browser for the holder of the lane: it starts one
// on first use, and restarts it when it exited, failed the health check,
// or was marked suspect (a crashed renderer, a page that would not close).
// note receives a line for the job log when something notable happens.
func (l *lane) ensure(ctx context.Context, note func(string)) (*browserProc, error) {
	return l.ensureLaunch(ctx, note, nil)
}

// ensureLaunch is ensure for a browser started with la's command line
// (nil: the driver's own): a running browser started otherwise is
// restarted, so a session's options reach every page of the lane and the
// next user after it gets the defaults back (options.go).
func (l *lane) ensureLaunch(ctx context.Context, note func(string), la *launch) (*browserProc, error) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil, errDriverClosed
	}
	b, why := l.b, l.suspect
	l.suspect = ""
	l.mu.Unlock()

	if b != nil {
		if why == "" && b.launchKey != la.Key() {
			why = "the lane's browser options change"
		}
		if why == "" {
			why = b.check(l.d.cfg.HealthTimeout)
		}
		if why == "" {
			return b, nil
		}
		note(fmt.Sprintf("lane %d: restarting chromium: %s", l.idx, why))
		l.d.log.Warn("restarting chromium lane", "lane", l.idx, "pid", b.pid, "why", why)
		l.mu.Lock()
		if l.b == b {
			l.b = nil
			// Signalled with the start's outcome below, so that a restart
			// is one change (old URL → new URL), not two.
			if l.url.Swap(nil) != nil {
				defer l.d.laneChanged()
			}
		}
		l.mu.Unlock()
		b.stop()
	}

	start := time.Now()
	l.setRestarting(true)
	nb, err := startBrowser(ctx, l.d.ctx, la.allocOptions(l.d.opts), l.dir, l.d.cfg.StartTimeout, l.d.log.With("lane", l.idx))
	defer l.setRestarting(false) // after the new URL is stored: one change seen as one
	if err != nil {
		if l.d.ctx.Err() != nil {
			return nil, errDriverClosed
		}
		return nil, fmt.Errorf("lane %d: %w", l.idx, err)
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		nb.stop()
		return nil, errDriverClosed
	}
	nb.launchKey = la.Key()
	l.b = nb
	l.starts++
	l.url.Store(&nb.wsURL)
	// Started under mu after the closed check: shutdown's Wait never runs
	// concurrently with this Add.
	l.watchers.Go(func() { l.watch(nb) })
	l.mu.Unlock()
	l.d.laneChanged()
	took := time.Since(start).Round(time.Millisecond)
	note(fmt.Sprintf("lane %d: chromium started (pid %d) in %s", l.idx, nb.pid, took))
	l.d.log.Info("chromium lane started", "lane", l.idx, "pid", nb.pid, "devtools_url", nb.wsURL, "took", took)
	return nb, nil
}

// watch takes a browser that exited on its own (killed, crashed, its
// connection lost) out of LaneURL at once, so that the hub is not shown a
// dead address until the lane's next user restarts it. It leaves l.b alone:
// that user's health check finds the exit and cleans up. It ends with b's
// context, which stop also ends.
func (l *lane) watch(b *browserProc) {
	<-b.ctx.Done()
	// Only if the URL is still b's: after a restart or shutdown it is not.
	if l.url.CompareAndSwap(&b.wsURL, nil) {
		if l.d.ctx.Err() == nil { // Close kills every browser: not news
			l.d.log.Warn("chromium lane exited; its next user restarts it", "lane", l.idx, "pid", b.pid, "cause", b.exitCause())
		}
		l.d.laneChanged()
	}
}

// setRestarting records whether a browser start is under way and signals
// the change (the agent reports it as the lane's state).
func (l *lane) setRestarting(on bool) {
	if l.restarting.Swap(on) != on {
		l.d.laneChanged()
	}
}

// setBeforeFree sets what release runs before the next user may take the
// lane (see beforeFree). Only the holder calls it.
func (l *lane) setBeforeFree(fn func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.beforeFree = fn
}

// markSuspect makes the lane restart its browser when its user releases it
// (and, should that restart fail, the next user restart it first).
func (l *lane) markSuspect(why string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.suspect == "" {
		l.suspect = why
	}
}

// browser returns the running browser, or nil.
func (l *lane) browser() *browserProc {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b
}

// shutdown stops the browser for good; later users get errDriverClosed.
func (l *lane) shutdown() {
	l.mu.Lock()
	b := l.b
	l.b, l.closed = nil, true
	changed := l.url.Swap(nil) != nil
	l.mu.Unlock()
	if b != nil {
		b.stop()
	}
	l.restarts.Wait() // each ends soon: Close cancelled the driver's context first
	l.watchers.Wait()
	if err := os.RemoveAll(l.downloadDir()); err != nil {
		l.d.log.Warn("remove lane downloads", "lane", l.idx, "err", err)
	}
	if changed {
		l.d.laneChanged()
	}
}
