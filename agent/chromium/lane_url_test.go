package chromium

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/remote"
	"github.com/stretchr/testify/require"
)

// devtoolsURL is the shape of a running lane's LaneURL.
const devtoolsURL = `^ws://127\.0\.0\.1:\d+/devtools/browser/[0-9a-f-]+$`

// requireLaneSignal waits for LaneChanges to signal.
func requireLaneSignal(t *testing.T, d *Driver, why string) {
	t.Helper()
	select {
	case <-d.LaneChanges():
	case <-time.After(waitTimeout):
		t.Fatalf("no lane change signalled within %s: %s", waitTimeout, why)
	}
}

// requireNoLaneSignal checks that no change is pending.
func requireNoLaneSignal(t *testing.T, d *Driver, why string) {
	t.Helper()
	select {
	case <-d.LaneChanges():
		t.Fatalf("lane change signalled: %s", why)
	case <-time.After(100 * time.Millisecond):
	}
}

// driveRemotely connects to a browser with its DevTools URL alone, as a
// client given the lane's address would, opens a tab, loads url and returns
// the page title. The tab is closed after; the browser keeps running.
func driveRemotely(t *testing.T, wsURL, url string) string {
	t.Helper()
	actx, cancelAlloc := remote.NewAllocator(context.Background(), wsURL, remote.NoModifyURL)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancelRun := context.WithTimeout(ctx, waitTimeout)
	defer cancelRun()
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(url)))
	title, err := chromedp.Run(ctx, chromedp.Title())
	require.NoError(t, err)
	require.NoError(t, chromedp.Cancel(ctx))
	return title
}

// devToolsURL is the lane's DevTools URL, failing the test when the lane
// has no browser running.
func devToolsURL(t *testing.T, d *Driver, lane int) string {
	t.Helper()
	u, ok := d.DevToolsURL(lane)
	require.True(t, ok, "lane %d has no browser running", lane)
	return u
}

// TestDevToolsURLIsTheLiveBrowser: a lane's LaneURL (what the hub is told)
// is its stable name, never an address; DevToolsURL is the running
// browser's DevTools URL, which a local client can drive; a lane never
// used has none; a lane whose browser is killed loses it at once and gets
// a new one when the next job restarts it; every change is signalled on
// LaneChanges.
func TestDevToolsURLIsTheLiveBrowser(t *testing.T) {
	s := newSite(t)
	d, _ := newDriver(t, 2)
	requireNoLaneSignal(t, d, "no lane started yet")
	require.Equal(t, "chromium://w1/lane/0", d.LaneURL("w1", 0))
	_, ok := d.DevToolsURL(0)
	require.False(t, ok, "not started")

	r := runJob(t, d, 0, "j-start", "fetch", map[string]any{"url": s.URL + "/static", "screenshot": false}, 0)
	require.NoError(t, r.err)
	requireLaneSignal(t, d, "lane 0 started")
	first := devToolsURL(t, d, 0)
	require.Regexp(t, devtoolsURL, first)
	require.Equal(t, "chromium://w1/lane/0", d.LaneURL("w1", 0), "a started lane keeps its name")
	_, ok = d.DevToolsURL(1)
	require.False(t, ok, "lane 1 never ran a job: not started")

	require.Equal(t, "Static page", driveRemotely(t, first, s.URL+"/static"))
	require.Equal(t, first, devToolsURL(t, d, 0), "a remote client leaves the lane as it was")
	requireNoLaneSignal(t, d, "nothing changed")
	r = runJob(t, d, 0, "j-after-remote", "fetch", map[string]any{"url": s.URL + "/static", "screenshot": false}, 0)
	require.NoError(t, r.err)
	require.Equal(t, 1, laneStarts(d, 0), "the remote client's tab was closed: the lane was reused, not restarted")

	pid := lanePID(t, d, 0)
	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	waitFor(t, func() bool { _, ok := d.DevToolsURL(0); return !ok })
	requireLaneSignal(t, d, "lane 0's browser exited")

	r = runJob(t, d, 0, "j-after-kill", "fetch", map[string]any{"url": s.URL + "/static", "screenshot": false}, 0)
	require.NoError(t, r.err)
	require.Contains(t, r.log.text(), "lane 0: restarting chromium: browser exited")
	requireLaneSignal(t, d, "lane 0 restarted")
	second := devToolsURL(t, d, 0)
	require.Regexp(t, devtoolsURL, second)
	require.NotEqual(t, first, second, "a restarted lane has a new URL")
	require.Equal(t, "Static page", driveRemotely(t, second, s.URL+"/static"))
	require.Equal(t, "chromium://w1/lane/0", d.LaneURL("w1", 0))

	require.NoError(t, d.Close())
	_, ok = d.DevToolsURL(0)
	require.False(t, ok, "a closed driver has no live lane")
	requireLaneSignal(t, d, "Close stopped lane 0")
}
