package worker

import (
	"context"
	"encoding/json"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/remote"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/agent"
	"github.com/paprika-hub/paprika/messages"
	"github.com/paprika-hub/paprika/persistence/storetest"
)

// pages counts the page targets of the browser the context is attached to.
func pages(ctx context.Context) (int, error) {
	infos, err := chromedp.Targets(ctx)
	n := 0
	for _, i := range infos {
		if i.Type == "page" {
			n++
		}
	}
	return n, err
}

// A NeedsChromium handler drives the lane's browser through its CDP
// endpoint; what it leaves open is cleaned before the next job.
func TestWorkerChromiumLaneForHandler(t *testing.T) {
	path, err := exec.LookPath("chromium")
	if err != nil {
		storetest.Unavailable(t, "chromium", err)
	}
	h := newFakeHub(t)
	o := Options{Hubs: []string{h.srv.URL}, ID: "wc", Lanes: 1, Driver: DriverChromium,
		Agent: agent.Config{StopTimeout: 5 * time.Second, FlushTimeout: time.Second}}
	o.Chromium.Path, o.Chromium.WorkDir = path, t.TempDir()
	w, err := New(o)
	require.NoError(t, err)
	w.Handle("title", func(ctx context.Context, j *Job) (any, error) {
		lane, err := j.Lane()
		if err != nil {
			return nil, err
		}
		again, err := j.Lane()
		if err != nil || again != lane {
			return nil, Permanent(err)
		}
		allocCtx, cancel := remote.NewAllocator(ctx, lane.DevToolsURL())
		defer cancel()
		bctx, bcancel := chromedp.NewContext(allocCtx)
		defer bcancel()
		before, err := pages(bctx)
		if err != nil {
			return nil, err
		}
		tctx, tcancel := chromedp.NewContext(allocCtx)
		defer tcancel()
		if err := chromedp.Do(tctx, chromedp.Navigate(`data:text/html,<title>lane `+lane.Name()+`</title>`)); err != nil {
			return nil, err
		}
		title, err := chromedp.Run(tctx, chromedp.Title())
		if err != nil {
			return nil, err
		}
		// A tab left open on purpose: the worker's cleanup closes it.
		if _, err := chromedp.Call(tctx, target.CreateTarget, target.CreateTargetParams{URL: "about:blank"}); err != nil {
			return nil, err
		}
		return map[string]any{"title": title, "pages_before": before, "devtools_local": lane.DevToolsURL()[:15]}, nil
	}, NeedsChromium())
	startWorker(t, w)
	hello := h.waitFor(messages.TypeHello, "")
	assert.Equal(t, []messages.ModeDecl{{Name: messages.ModeNoop}, {Name: messages.ModeFetch, Lane: messages.LaneNeedChromium},
		{Name: messages.ModeMacro, Lane: messages.LaneNeedChromium}, {Name: "title", Lane: messages.LaneNeedChromium}},
		hello.Capabilities.Modes)

	for i, id := range []string{"t1", "t2"} {
		assign(h, id, "title", "", 2*time.Minute)
		f := h.waitFinalWithin(id, 2*time.Minute)
		require.Equal(t, messages.TypeJobDone, f.Type, "%s: %s", f.Reason, f.Error)
		var r struct {
			Title       string `json:"title"`
			PagesBefore int    `json:"pages_before"`
			Local       string `json:"devtools_local"`
		}
		require.NoError(t, json.Unmarshal(f.Result, &r))
		assert.Equal(t, "lane chromium://wc/lane/0", r.Title)
		assert.Equal(t, "ws://127.0.0.1:", r.Local)
		if i > 0 {
			assert.Zero(t, r.PagesBefore, "the previous job's pages were left on the lane")
		}
	}
}
