package client

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/agent"
	"github.com/paprika-hub/paprika/agent/chromium"
	"github.com/paprika-hub/paprika/config"
	"github.com/paprika-hub/paprika/hub"
	"github.com/paprika-hub/paprika/persistence/storetest"
)

// testLog is where the in-process hub and worker log: nowhere, unless
// PAPRIKA_TEST_LOG is set.
func testLog() *slog.Logger {
	if os.Getenv("PAPRIKA_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// startSessionHub runs a real hub on embedded stores with one worker of
// lanes real headless Chromium lanes (sessions need a chromium lane; the
// simulated driver has none), and returns the hub's URL once the worker is
// linked. Both stop with the test.
func startSessionHub(t *testing.T, lanes int) string {
	t.Helper()
	if _, err := chromium.LookPath(""); err != nil {
		storetest.Unavailable(t, "chromium", err)
	}
	cfg := config.Default()
	require.NoError(t, cfg.Set("hub.listen", "127.0.0.1:0"))
	require.NoError(t, cfg.Set("assets.dir", filepath.Join(t.TempDir(), "assets")))
	h, err := hub.New(cfg, testLog())
	require.NoError(t, err)
	require.NoError(t, h.Start(context.Background()))
	t.Cleanup(func() { _ = h.Stop(context.Background()) })

	var a *agent.Agent
	drv, err := chromium.New(chromium.Config{Lanes: lanes, WorkDir: t.TempDir(), Logger: testLog(),
		Upload: func(ctx context.Context, jobID, name, ct string, r io.Reader, size int64) error {
			return a.UploadAsset(ctx, jobID, name, ct, r, size)
		}})
	require.NoError(t, err)
	a, err = agent.New(agent.Config{HubURLs: []string{h.URL()}, ID: "wsess", Lanes: lanes, DriverImpl: drv, Logger: testLog()})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = a.Run(ctx) })
	// Registered after the hub's: the worker stops first.
	t.Cleanup(func() { cancel(); wg.Wait(); _ = drv.Close() })
	require.Eventually(t, func() bool {
		ws, _ := h.Workers(context.Background())
		return len(ws) == 1 && ws[0].Alive
	}, 20*time.Second, 20*time.Millisecond, "the worker links")
	return h.URL()
}

const formPage = `<!doctype html><title>Form</title>
<form onsubmit="document.getElementById('out').textContent='hello '+document.getElementById('name').value;return false">
<input id="name"><button id="go" type="submit">go</button></form><p id="out">-</p>`

// TestSessionsAgainstAHub drives sessions through the SDK against a real
// hub and a real Chromium worker: create with labels and idle timeout,
// list (paged), every typed command, a failed command, no capacity,
// close, and what a closed session answers.
func TestSessionsAgainstAHub(t *testing.T) {
	if testing.Short() {
		t.Skip("drives Chromium; skipped with -short")
	}
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, formPage)
	}))
	t.Cleanup(page.Close)
	c := newTestClient(t, []string{startSessionHub(t, 2)})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	s, err := c.CreateSession(ctx, SessionOptions{Labels: map[string]string{"team": "qa"}, IdleTimeoutS: 120})
	require.NoError(t, err)
	require.Equal(t, SessionOpen, s.Status)
	require.Equal(t, "wsess", s.WorkerID)
	require.NotEmpty(t, s.Lane)
	require.Equal(t, 120, s.IdleTimeoutS)
	require.Equal(t, map[string]string{"team": "qa"}, s.Labels)
	require.False(t, s.CreatedAt.IsZero())

	nav, err := c.Command(ctx, s.ID, Navigate(page.URL))
	require.NoError(t, err)
	n, err := nav.Navigate()
	require.NoError(t, err)
	require.Equal(t, NavigateResult{Status: 200, URL: page.URL + "/", Title: "Form"}, n)

	_, err = c.Command(ctx, s.ID, WaitFor("#name").WithTimeout(5*time.Second))
	require.NoError(t, err)
	_, err = c.Command(ctx, s.ID, Type("#name", "paprika"))
	require.NoError(t, err)
	_, err = c.Command(ctx, s.ID, Click("#go"))
	require.NoError(t, err)
	res, err := c.Command(ctx, s.ID, Text("#out"))
	require.NoError(t, err)
	text, truncated, err := res.Text()
	require.NoError(t, err)
	require.Equal(t, "hello paprika", text)
	require.False(t, truncated)

	res, err = c.Command(ctx, s.ID, Eval("document.title + ' ' + (20 + 22)"))
	require.NoError(t, err)
	var v string
	require.NoError(t, res.Eval(&v))
	require.Equal(t, "Form 42", v)
	res, err = c.CommandJSON(ctx, s.ID, []byte(`{"op":"eval","expression":"({a: [1, 2]})"}`))
	require.NoError(t, err)
	var obj struct{ A []int }
	require.NoError(t, res.Eval(&obj))
	require.Equal(t, []int{1, 2}, obj.A)

	_, err = c.Command(ctx, s.ID, Sleep(10*time.Millisecond))
	require.NoError(t, err)
	res, err = c.Command(ctx, s.ID, Screenshot("#go"))
	require.NoError(t, err)
	shot, err := res.Screenshot()
	require.NoError(t, err)
	img, err := png.Decode(bytes.NewReader(shot))
	require.NoError(t, err, "a PNG")
	require.Positive(t, img.Bounds().Dx())

	// The page refuses a command: 422, and the session stays open.
	_, err = c.Command(ctx, s.ID, Click("#missing").WithTimeout(300*time.Millisecond))
	e, ok := AsAPIError(err)
	require.True(t, ok, "%v", err)
	require.Equal(t, http.StatusUnprocessableEntity, e.Status)
	require.Equal(t, "command_failed", e.Code)
	got, err := c.GetSession(ctx, s.ID)
	require.NoError(t, err)
	require.Equal(t, SessionOpen, got.Status)
	require.Equal(t, s.ID, got.ID)

	// A second session takes the other lane; a third finds none, and the
	// SDK does not retry the 503 (a retry could reserve a lane twice).
	s2, err := c.CreateSession(ctx, SessionOptions{})
	require.NoError(t, err)
	_, err = c.CreateSession(ctx, SessionOptions{})
	require.True(t, IsStatus(err, http.StatusServiceUnavailable), "%v", err)
	require.NotContains(t, err.Error(), "gave up after")

	// Both are listed, one page at a time.
	all, err := c.ListSessions(ctx, SessionListOptions{})
	require.NoError(t, err)
	require.Empty(t, all.NextCursor)
	require.ElementsMatch(t, []string{s.ID, s2.ID}, []string{all.Sessions[0].ID, all.Sessions[1].ID})
	p1, err := c.ListSessions(ctx, SessionListOptions{Limit: 1})
	require.NoError(t, err)
	require.Len(t, p1.Sessions, 1)
	require.NotEmpty(t, p1.NextCursor)
	p2, err := c.ListSessions(ctx, SessionListOptions{Limit: 1, Cursor: p1.NextCursor})
	require.NoError(t, err)
	require.Len(t, p2.Sessions, 1)
	require.Empty(t, p2.NextCursor)
	require.ElementsMatch(t, []string{s.ID, s2.ID}, []string{p1.Sessions[0].ID, p2.Sessions[0].ID})
	for _, ls := range all.Sessions {
		require.Equal(t, SessionOpen, ls.Status)
		require.True(t, strings.HasSuffix(ls.CDPURL, "/sessions/"+ls.ID+"/cdp"), "a listed session carries its cdp_url: %q", ls.CDPURL)
		require.Equal(t, "wsess", ls.WorkerID)
		if ls.ID == s.ID {
			require.Equal(t, map[string]string{"team": "qa"}, ls.Labels)
			require.Equal(t, 120, ls.IdleTimeoutS)
			require.Equal(t, s.Lane, ls.Lane)
		}
	}

	_, err = c.ListSessions(ctx, SessionListOptions{Limit: 5000})
	require.True(t, IsStatus(err, http.StatusBadRequest), "%v", err)
	_, err = c.ListSessions(ctx, SessionListOptions{Cursor: "no/such cursor"})
	e, ok = AsAPIError(err)
	require.True(t, ok, "%v", err)
	require.Equal(t, "bad_cursor", e.Code)

	// Close: the answer is the closed session; it leaves the list, and a
	// command on it is 410.
	closed, err := c.CloseSession(ctx, s.ID)
	require.NoError(t, err)
	require.Equal(t, SessionClosed, closed.Status)
	require.NotEmpty(t, closed.Reason)
	again, err := c.CloseSession(ctx, s.ID)
	require.NoError(t, err, "closing twice")
	require.Equal(t, SessionClosed, again.Status)
	_, err = c.Command(ctx, s.ID, Text("#out"))
	require.True(t, IsStatus(err, http.StatusGone), "%v", err)
	left, err := c.ListSessions(ctx, SessionListOptions{})
	require.NoError(t, err)
	require.Len(t, left.Sessions, 1)
	require.Equal(t, s2.ID, left.Sessions[0].ID)
	_, err = c.CloseSession(ctx, s2.ID)
	require.NoError(t, err)

	// The lane is free again: a new session opens.
	require.Eventually(t, func() bool {
		s3, err := c.CreateSession(ctx, SessionOptions{})
		if err != nil {
			return false
		}
		_, err = c.CloseSession(ctx, s3.ID)
		return err == nil
	}, 20*time.Second, 100*time.Millisecond)

	_, err = c.GetSession(ctx, "s-nobody")
	require.True(t, IsStatus(err, http.StatusNotFound), "%v", err)
}
