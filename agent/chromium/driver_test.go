package chromium

import (
	"bytes"
	"context"
	"errors"
	"image/png"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/agent"
)

// TestDriver runs the driver's behaviour on one shared pair of lanes (a
// browser start costs ~0.7 s); subtests run in order, each leaving the
// lanes usable for the next — which is itself part of what they check.
func TestDriver(t *testing.T) {
	s := newSite(t)
	d, up := newDriver(t, 2)

	t.Run("lane URL is a placeholder until the lane starts", func(t *testing.T) {
		require.Equal(t, "chromium://w1/lane/0", d.LaneURL("w1", 0))
		require.Equal(t, "chromium://w1/lane/1", d.LaneURL("w1", 1))
	})

	t.Run("fetch a static page", func(t *testing.T) {
		r := runJob(t, d, 0, "j-static", "fetch", map[string]any{"url": s.URL + "/static"}, 0)
		m := resultMap(t, r)
		require.EqualValues(t, 200, m["status"])
		require.Equal(t, "Static page", m["title"])
		require.Equal(t, s.URL+"/static", m["final_url"])
		require.Equal(t, []string{"page.html", "screenshot.png"}, r.res.Assets)

		page := up.asset(t, "j-static", "page.html")
		require.Equal(t, "text/html; charset=utf-8", page.contentType)
		require.Contains(t, string(page.data), `<h1 id="h">Hello paprika</h1>`)
		require.True(t, strings.HasPrefix(string(page.data), "<!DOCTYPE html>"))

		shot := up.asset(t, "j-static", "screenshot.png")
		require.Equal(t, "image/png", shot.contentType)
		img, err := png.Decode(bytes.NewReader(shot.data))
		require.NoError(t, err)
		require.Equal(t, DefaultWindowWidth, img.Bounds().Dx())
		require.Equal(t, DefaultWindowHeight, img.Bounds().Dy())

		log := r.log.text()
		require.Contains(t, log, "navigate "+s.URL+"/static")
		require.Contains(t, log, "status 200")
		require.Regexp(t, regexp.MustCompile(`screenshot \d+ bytes`), log)
		require.Contains(t, log, "lane 0: chromium started")

		u, ok := d.DevToolsURL(0)
		require.True(t, ok)
		require.Regexp(t, `^ws://127\.0\.0\.1:\d+/devtools/browser/[0-9a-f-]+$`, u)
		_, ok = d.DevToolsURL(1)
		require.False(t, ok, "lane 1 starts on first use only")
	})

	t.Run("a cookie set in one job is not visible to the next on the lane", func(t *testing.T) {
		// Within one job the cookie and the storage item are visible: the
		// check below can tell.
		r := runJob(t, d, 0, "j-cookie-same", "macro", map[string]any{"steps": []map[string]any{
			{"op": "navigate", "url": s.URL + "/set-cookie"},
			{"op": "navigate", "url": s.URL + "/show-cookie"},
			{"op": "text", "selector": "#c"},
			{"op": "text", "selector": "#ls"},
		}}, 0)
		steps := resultMap(t, r)["steps"].([]any)
		require.Equal(t, "cookie=[sid=s3cret]", steps[2].(map[string]any)["text"])
		require.Equal(t, "ls=[ls3cret]", steps[3].(map[string]any)["text"])

		r = runJob(t, d, 0, "j-cookie-set", "fetch", map[string]any{"url": s.URL + "/set-cookie", "screenshot": false}, 0)
		require.NoError(t, r.err)
		require.Equal(t, []string{"page.html"}, r.res.Assets)
		r = runJob(t, d, 0, "j-cookie-next", "fetch", map[string]any{"url": s.URL + "/show-cookie", "wait_for": "#ls"}, 0)
		require.NoError(t, r.err)
		page := string(up.asset(t, "j-cookie-next", "page.html").data)
		require.Contains(t, page, "cookie=[]")
		require.Contains(t, page, "ls=[]")
	})

	t.Run("a macro fills a form, submits it and reads the answer", func(t *testing.T) {
		r := runJob(t, d, 1, "j-form", "macro", map[string]any{"steps": []map[string]any{
			{"op": "navigate", "url": s.URL + "/form"},
			{"op": "type", "selector": "#name", "text": "Ada"},
			{"op": "click", "selector": "#submit"},
			{"op": "wait", "selector": "#greeting", "visible": true},
			{"op": "text", "selector": "#greeting"},
			{"op": "screenshot"},
			{"op": "eval", "expression": "document.title + ' ' + location.search"},
			{"op": "screenshot", "name": "greeting.png", "selector": "#greeting"},
		}}, 0)
		steps := resultMap(t, r)["steps"].([]any)
		require.Len(t, steps, 8)
		require.EqualValues(t, 200, steps[0].(map[string]any)["status"])
		require.Equal(t, "Hello, Ada!", steps[4].(map[string]any)["text"])
		require.Equal(t, "step-6.png", steps[5].(map[string]any)["asset"])
		require.Equal(t, "Greeting ?name=Ada", steps[6].(map[string]any)["value"])
		require.Equal(t, []string{"step-6.png", "greeting.png"}, r.res.Assets)
		require.True(t, isPNG(up.asset(t, "j-form", "step-6.png").data))
		require.True(t, isPNG(up.asset(t, "j-form", "greeting.png").data))
		require.Contains(t, r.log.text(), "step 3/8 click #submit")
		require.Contains(t, r.log.text(), "step 1/8 status 200")
	})

	t.Run("the first failing step fails the job", func(t *testing.T) {
		r := runJob(t, d, 1, "j-missing", "macro", map[string]any{"steps": []map[string]any{
			{"op": "navigate", "url": s.URL + "/static"},
			{"op": "click", "selector": "#missing", "timeout_ms": 300},
			{"op": "text", "selector": "#h"},
		}}, 0)
		require.Equal(t, agent.ReasonJobError, r.reason())
		require.ErrorContains(t, r.err, "step 2 (click #missing): timed out after 300ms waiting for #missing")
		require.NotContains(t, r.log.text(), "step 3/3")
	})

	t.Run("a 404 page is a job error", func(t *testing.T) {
		r := runJob(t, d, 1, "j-404", "fetch", map[string]any{"url": s.URL + "/nope"}, 0)
		require.Equal(t, agent.ReasonJobError, r.reason())
		require.ErrorContains(t, r.err, "http status 404")
		require.Contains(t, r.log.text(), "status 404")
	})

	t.Run("a navigation error is a job error", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		closed := "http://" + ln.Addr().String() + "/"
		require.NoError(t, ln.Close())
		r := runJob(t, d, 1, "j-refused", "fetch", map[string]any{"url": closed}, 0)
		require.Equal(t, agent.ReasonJobError, r.reason())
		require.ErrorContains(t, r.err, "ERR_CONNECTION_REFUSED")
	})

	t.Run("bad params are job errors", func(t *testing.T) {
		for want, params := range map[string]map[string]any{
			`scheme "file" not allowed`:           {"url": "file:///etc/passwd"},
			"only about:blank is allowed":         {"url": "about:version"},
			`unknown field "bogus"`:               {"url": s.URL, "bogus": 1},
			"url is required":                     {},
			"step 2: click: selector is required": {"steps": []map[string]any{{"op": "navigate", "url": s.URL}, {"op": "click"}}},
			`unknown op "fly"`:                    {"steps": []map[string]any{{"op": "fly"}}},
		} {
			mode := "fetch"
			if _, ok := params["steps"]; ok {
				mode = "macro"
			}
			r := runJob(t, d, 1, "j-bad", mode, params, 0)
			require.Equal(t, agent.ReasonJobError, r.reason(), want)
			require.ErrorContains(t, r.err, want)
		}
		r := runJob(t, d, 1, "j-mode", "pdf", map[string]any{}, 0)
		require.Equal(t, agent.ReasonLaneError, r.reason())
	})

	t.Run("noop runs on a chromium lane", func(t *testing.T) {
		r := runJob(t, d, 1, "j-noop", "noop", map[string]any{"lines": 2}, 0)
		require.EqualValues(t, 2, resultMap(t, r)["lines"])
	})

	t.Run("the deadline stops a page that never finishes loading", func(t *testing.T) {
		r := runJob(t, d, 0, "j-hang", "fetch", map[string]any{"url": s.URL + "/hang"}, 1500*time.Millisecond)
		require.ErrorIs(t, r.err, context.DeadlineExceeded)
		require.ErrorContains(t, r.err, "navigate "+s.URL+"/hang")
		require.Less(t, r.took, 5*time.Second)
		select {
		case <-s.hangEnded: // the browser dropped the request: navigation aborted
		case <-time.After(waitTimeout):
			t.Fatal("the hanging request was not aborted")
		}
		starts := laneStarts(d, 0)
		r = runJob(t, d, 0, "j-after-hang", "fetch", map[string]any{"url": s.URL + "/static", "screenshot": false}, 0)
		require.NoError(t, r.err)
		require.Equal(t, starts, laneStarts(d, 0), "the lane was reset, not restarted")
		require.Less(t, r.took, 5*time.Second)
	})

	t.Run("a crashed renderer fails the job and restarts the lane", func(t *testing.T) {
		pid := lanePID(t, d, 1)
		starts := laneStarts(d, 1)
		done := startMacro(t, d, 1, "j-crash", []map[string]any{
			{"op": "navigate", "url": s.URL + "/static"},
			{"op": "wait", "selector": "#never", "timeout_ms": 15000},
		}, "step 2/2 wait #never")
		require.Positive(t, killRenderers(pid), "no renderer to kill")
		r := <-done
		require.Equal(t, agent.ReasonLaneError, r.reason(), "err: %v", r.err)
		require.ErrorContains(t, r.err, "step 2 (wait #never): renderer crashed")
		require.Less(t, r.took, 10*time.Second)

		r = runJob(t, d, 1, "j-after-crash", "fetch", map[string]any{"url": s.URL + "/static"}, 0)
		require.Equal(t, "Static page", resultMap(t, r)["title"])
		// Restarted when the crashed job released the lane, before this job.
		require.Equal(t, starts+1, laneStarts(d, 1))
		require.NotEqual(t, pid, lanePID(t, d, 1))
	})

	t.Run("a killed browser fails its job and the lane restarts", func(t *testing.T) {
		pid := lanePID(t, d, 0)
		done := startMacro(t, d, 0, "j-kill", []map[string]any{
			{"op": "navigate", "url": s.URL + "/static"},
			{"op": "wait", "selector": "#never", "timeout_ms": 15000},
		}, "step 2/2 wait #never")
		require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
		r := <-done
		require.Equal(t, agent.ReasonLaneError, r.reason(), "err: %v", r.err)
		require.ErrorContains(t, r.err, "browser exited")
		require.Less(t, r.took, 10*time.Second)

		r = runJob(t, d, 0, "j-after-kill", "fetch", map[string]any{"url": s.URL + "/static"}, 0)
		require.Equal(t, "Static page", resultMap(t, r)["title"])
		// Restarted when the failed job released the lane (or, had the exit
		// come later, by this job).
		require.NotEqual(t, pid, lanePID(t, d, 0))
		require.Empty(t, liveProcesses([]int{pid}), "the killed browser is gone")
	})

	t.Run("a hung browser fails the health check and is restarted", func(t *testing.T) {
		pid := lanePID(t, d, 0)
		tree := processTree(pid)
		require.NoError(t, syscall.Kill(pid, syscall.SIGSTOP))
		r := runJob(t, d, 0, "j-after-hang-check", "fetch", map[string]any{"url": s.URL + "/static", "screenshot": false}, 0)
		require.Equal(t, "Static page", resultMap(t, r)["title"])
		require.Contains(t, r.log.text(), "did not answer the health check within 2.5s (hung)")
		require.GreaterOrEqual(t, r.took, DefaultHealthTimeout)
		require.NotEqual(t, pid, lanePID(t, d, 0))
		require.Empty(t, liveProcesses(tree), "every process of the hung browser was killed")
	})

	t.Run("popups are closed at once", func(t *testing.T) {
		done := startMacro(t, d, 1, "j-popup", []map[string]any{
			{"op": "navigate", "url": s.URL + "/popup"},
			{"op": "click", "selector": "#link"},
			{"op": "click", "selector": "#open"},
			{"op": "wait", "ms": 2000},
			{"op": "text", "selector": "#n"},
		}, "step 4/5 wait 2000ms")
		b := d.lanes[1].browser()
		waitFor(t, func() bool { n, err := b.pages(time.Second); return err == nil && n == 1 })
		steps := resultMap(t, <-done)["steps"].([]any)
		require.Equal(t, "opened", steps[4].(map[string]any)["text"], "the popup was opened, then closed")
	})

	t.Run("never more than M pages at once", func(t *testing.T) {
		var maxPages, samples atomic.Int64
		stop := make(chan struct{})
		sampled := make(chan struct{})
		go func() { // the sampler; ends on stop
			defer close(sampled)
			for {
				select {
				case <-stop:
					return
				case <-time.After(15 * time.Millisecond):
				}
				n := int64(pageCount(d))
				samples.Add(1)
				for m := maxPages.Load(); n > m && !maxPages.CompareAndSwap(m, n); m = maxPages.Load() {
				}
			}
		}()
		var wg sync.WaitGroup
		for i := range 6 { // 6 jobs, 2 lanes: each lane takes one job at a time
			wg.Go(func() {
				r := runJob(t, d, i%2, "j-m", "fetch", map[string]any{"url": s.URL + "/slow?ms=300", "screenshot": false}, 0)
				require.NoError(t, r.err)
			})
		}
		wg.Wait()
		close(stop)
		<-sampled
		require.Greater(t, samples.Load(), int64(10))
		require.EqualValues(t, 2, maxPages.Load(), "two lanes: at most two pages, and the sampler saw both")
	})

	t.Run("an asset that cannot be stored is a lane error", func(t *testing.T) {
		up.mu.Lock()
		up.fail = errors.New("hub unreachable")
		up.mu.Unlock()
		defer func() {
			up.mu.Lock()
			up.fail = nil
			up.mu.Unlock()
		}()
		r := runJob(t, d, 1, "j-nostore", "fetch", map[string]any{"url": s.URL + "/static"}, 0)
		require.Equal(t, agent.ReasonLaneError, r.reason())
		require.ErrorContains(t, r.err, "store asset page.html: hub unreachable")
	})
}

// TestNotFound checks the error for a missing Chromium.
func TestNotFound(t *testing.T) {
	_, err := New(Config{Path: filepath.Join(t.TempDir(), "no-chromium")})
	require.ErrorIs(t, err, ErrNotFound)
	require.ErrorContains(t, err, "chromium not found: install Debian package chromium or set --chromium PATH")

	t.Setenv("PATH", t.TempDir())
	_, err = New(Config{})
	require.ErrorIs(t, err, ErrNotFound)
}

// TestCloseLeavesNoProcess checks that Close stops every process of every
// lane and removes the profiles.
func TestCloseLeavesNoProcess(t *testing.T) {
	s := newSite(t)
	workDir := t.TempDir()
	d, err := New(Config{Lanes: 2, WorkDir: workDir, Logger: testLogger(t)})
	require.NoError(t, err)
	var wg sync.WaitGroup
	for lane := range 2 {
		wg.Go(func() {
			r := runJob(t, d, lane, "j-close", "fetch", map[string]any{"url": s.URL + "/static"}, 0)
			require.NoError(t, r.err)
			require.Empty(t, r.res.Assets, "no uploader: nothing stored")
			require.Contains(t, r.log.text(), "not stored: no uploader configured")
		})
	}
	wg.Wait()
	var all []int
	for lane := range 2 {
		tree := processTree(lanePID(t, d, lane))
		require.Greater(t, len(tree), 2, "a browser has helper processes")
		all = append(all, tree...)
		require.NotEmpty(t, processesUsing(filepath.Join(workDir, "lane-"+itoa(lane))))
	}
	require.NoError(t, d.Close())
	require.NoError(t, d.Close(), "Close twice")
	require.Empty(t, liveProcesses(all), "processes left after Close")
	for lane := range 2 {
		dir := filepath.Join(workDir, "lane-"+itoa(lane))
		require.Empty(t, processesUsing(dir))
		_, err := os.Stat(dir)
		require.ErrorIs(t, err, os.ErrNotExist, "profile removed")
	}
	r := runJob(t, d, 0, "j-closed", "fetch", map[string]any{"url": s.URL + "/static"}, 0)
	require.Equal(t, agent.ReasonLaneError, r.reason())
	require.ErrorContains(t, r.err, "chromium driver closed")
}

// startMacro runs a macro job of steps in the background and returns once
// its log has the line at, so that the test can act while the job is
// there; the job's run arrives on the channel when it ends.
func startMacro(t testing.TB, d *Driver, lane int, id string, steps []map[string]any, at string) <-chan jobRun {
	t.Helper()
	done := make(chan jobRun, 1)
	l := newJobLog()
	go func() { // ends when the job does
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()
		done <- runJobLog(t, ctx, d, lane, id, "macro", map[string]any{"steps": steps}, l)
	}()
	l.waitLine(t, at)
	return done
}

// waitFor polls cond until it holds.
func waitFor(t testing.TB, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %s", waitTimeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// lanePID is the main process of a lane's browser.
func lanePID(t testing.TB, d *Driver, lane int) int {
	t.Helper()
	b := d.lanes[lane].browser()
	require.NotNil(t, b, "lane %d has no browser", lane)
	return b.pid
}

// laneStarts is how many times a lane's browser started.
func laneStarts(d *Driver, lane int) int {
	l := d.lanes[lane]
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.starts
}

// pageCount is the number of page targets over every lane's browser.
func pageCount(d *Driver) int {
	n := 0
	for _, l := range d.lanes {
		if b := l.browser(); b != nil {
			if p, err := b.pages(2 * time.Second); err == nil {
				n += p
			}
		}
	}
	return n
}

// killRenderers SIGKILLs the renderer processes of a browser (as the OOM
// killer would) and returns how many it killed.
func killRenderers(pid int) int {
	n := 0
	for _, p := range processTree(pid) {
		cmdline, err := os.ReadFile("/proc/" + itoa(p) + "/cmdline")
		if err == nil && bytes.Contains(cmdline, []byte("--type=renderer")) && syscall.Kill(p, syscall.SIGKILL) == nil {
			n++
		}
	}
	return n
}

// liveProcesses returns the pids that still run (zombies count as gone).
func liveProcesses(pids []int) []int {
	var live []int
	for _, p := range pids {
		stat, err := os.ReadFile("/proc/" + itoa(p) + "/stat")
		if err != nil {
			continue
		}
		s := string(stat)
		if i := strings.LastIndexByte(s, ')'); i >= 0 && len(s) > i+2 && s[i+2] == 'Z' {
			continue
		}
		live = append(live, p)
	}
	return live
}
