package hub

import (
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/agent"
	"github.com/paprika-hub/paprika/agent/chromium"
	"github.com/paprika-hub/paprika/messages"
	"github.com/paprika-hub/paprika/persistence"
	"github.com/paprika-hub/paprika/persistence/storetest"
)

// startChromiumAgent runs a worker with real headless Chromium lanes.
func startChromiumAgent(t *testing.T, url, id string, lanes int) (stop func()) {
	if _, err := chromium.LookPath(""); err != nil {
		storetest.Unavailable(t, "chromium", err)
	}
	var a *agent.Agent
	drv, err := chromium.New(chromium.Config{Lanes: lanes, WorkDir: t.TempDir(), Logger: testLogger(t),
		Upload: func(ctx context.Context, jobID, name, ct string, r io.Reader, size int64) error {
			return a.UploadAsset(ctx, jobID, name, ct, r, size)
		},
		SessionUpload: func(ctx context.Context, sessionID, name, ct string, r io.Reader, size int64) error {
			return a.UploadSessionDownload(ctx, sessionID, name, ct, r, size)
		}})
	require.NoError(t, err)
	a, err = agent.New(agent.Config{HubURLs: []string{url}, ID: id, Lanes: lanes, DriverImpl: drv, Logger: testLogger(t)})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = a.Run(ctx) }()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); wg.Wait(); _ = drv.Close() }) }
	t.Cleanup(stop)
	return stop
}

// serveFormPage serves formPage on 127.0.0.1 for the test's duration.
func serveFormPage(t *testing.T) *httptest.Server {
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, formPage)
	}))
	t.Cleanup(page.Close)
	return page
}

// waitLoneWorker waits until the hub knows exactly one worker and ok holds
// for it.
func waitLoneWorker(t *testing.T, h *Hub, ok func(persistence.WorkerInfo) bool, within, every time.Duration) {
	t.Helper()
	require.Eventually(t, func() bool {
		ws, _ := h.Workers(context.Background())
		return len(ws) == 1 && ok(ws[0])
	}, within, every)
}

const formPage = `<!doctype html><title>Form</title>
<form onsubmit="document.getElementById('out').textContent='hello '+document.getElementById('name').value;return false">
<input id="name"><button id="go" type="submit">go</button></form><p id="out"></p>`

// TestSessionThroughTheAPI drives an interactive session over HTTP: open,
// a few commands, idle-out, and the lane is free again.
func TestSessionThroughTheAPI(t *testing.T) {
	if testing.Short() {
		t.Skip("drives Chromium; skipped with -short")
	}
	page := serveFormPage(t)
	h := startTestHub(t, testConfig(t))
	startChromiumAgent(t, h.URL(), "wc", 1)
	waitLoneWorker(t, h, func(w persistence.WorkerInfo) bool { return w.Alive }, 20*time.Second, 20*time.Millisecond)
	waitLaneStates(t, h.URL(), `[{"lane":0,"state":"idle"}]`)

	st, b := do(t, "POST", h.URL()+"/sessions", `{"idle_timeout_s":2}`)
	require.Equal(t, http.StatusCreated, st, string(b))
	requireNoDevToolsURL(t, "POST /sessions", b)
	var sess struct{ ID, WorkerID, Lane, Status string }
	require.NoError(t, json.Unmarshal(b, &sess))
	require.Equal(t, "open", strings.ToLower(sess.Status))
	require.Equal(t, "chromium://wc/lane/0", sess.Lane)
	waitLaneStates(t, h.URL(), `[{"lane":0,"state":"session"}]`)
	st, b = do(t, "GET", h.URL()+"/sessions/"+sess.ID, "")
	require.Equal(t, http.StatusOK, st, string(b))
	requireNoDevToolsURL(t, "GET /sessions/{id}", b)
	require.NotContains(t, string(b), "devtools_url")

	cmd := func(body string) (int, map[string]any) {
		st, b := do(t, "POST", h.URL()+"/sessions/"+sess.ID+"/commands", body)
		var out map[string]any
		_ = json.Unmarshal(b, &out)
		return st, out
	}
	st, out := cmd(`{"op":"navigate","url":"` + page.URL + `"}`)
	require.Equal(t, http.StatusOK, st, out)
	require.Equal(t, true, out["ok"])
	st, out = cmd(`{"op":"type","selector":"#name","text":"paprika"}`)
	require.Equal(t, http.StatusOK, st, out)
	st, out = cmd(`{"op":"click","selector":"#go"}`)
	require.Equal(t, http.StatusOK, st, out)
	st, out = cmd(`{"op":"text","selector":"#out"}`)
	require.Equal(t, http.StatusOK, st, out)
	require.Contains(t, fmt.Sprint(out["result"]), "hello paprika")
	st, out = cmd(`{"op":"click","selector":"#missing","timeout_ms":300}`)
	require.Equal(t, http.StatusUnprocessableEntity, st, out)

	ws, _ := h.Workers(context.Background())
	require.Equal(t, 1, ws[0].InFlight, "the session holds the lane")
	// A second session finds no free lane while the first is open.
	st, _ = do(t, "POST", h.URL()+"/sessions", `{}`)
	require.Equal(t, http.StatusServiceUnavailable, st)

	// Idle past idle_timeout_s: closed, lane free.
	require.Eventually(t, func() bool {
		st, b := do(t, "GET", h.URL()+"/sessions/"+sess.ID, "")
		return st == http.StatusOK && strings.Contains(string(b), `"closed"`)
	}, 15*time.Second, 100*time.Millisecond)
	waitLoneWorker(t, h, func(w persistence.WorkerInfo) bool { return w.InFlight == 0 }, 10*time.Second, 50*time.Millisecond)
	waitLaneStates(t, h.URL(), `[{"lane":0,"state":"idle"}]`)
	st, _ = cmd(`{"op":"text","selector":"#out"}`)
	require.Equal(t, http.StatusGone, st)

	// The freed lane takes a new session; DELETE frees it at once.
	st, b = do(t, "POST", h.URL()+"/sessions", `{"idle_timeout_s":60}`)
	require.Equal(t, http.StatusCreated, st, string(b))
	require.NoError(t, json.Unmarshal(b, &sess))
	st, b = do(t, "DELETE", h.URL()+"/sessions/"+sess.ID, "")
	require.Equal(t, http.StatusOK, st, string(b))
	require.Contains(t, string(b), `"closed"`)
	waitLoneWorker(t, h, func(w persistence.WorkerInfo) bool { return w.InFlight == 0 }, 10*time.Second, 50*time.Millisecond)
}

// waitLaneStates polls GET /workers until its raw answer shows the lone
// worker's lanes as want, and checks that no answer on the way carried a
// DevTools URL.
func waitLaneStates(t *testing.T, url, want string) {
	t.Helper()
	var last []byte
	deadline := time.Now().Add(15 * time.Second)
	for {
		st, b := do(t, "GET", url+"/workers", "")
		require.Equal(t, http.StatusOK, st, string(b))
		requireNoDevToolsURL(t, "GET /workers", b)
		if laneStatesOf(b) == want {
			return
		}
		last = b
		if time.Now().After(deadline) {
			t.Fatalf("GET /workers never showed lanes %s; last answer %s", want, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// laneStatesOf is the first worker's lanes in a GET /workers answer, as
// JSON of their lane and state only (their health varies by the moment).
func laneStatesOf(body []byte) string {
	var res struct {
		Workers []struct {
			Lanes []struct {
				Lane  int    `json:"lane"`
				State string `json:"state,omitempty"`
			} `json:"lanes"`
		} `json:"workers"`
	}
	if json.Unmarshal(body, &res) != nil || len(res.Workers) == 0 {
		return ""
	}
	b, _ := json.Marshal(res.Workers[0].Lanes)
	return string(b)
}

// requireNoDevToolsURL checks that an API answer carries no WebSocket
// address but the hub's own cdp_url: a lane's DevTools URL would let
// anyone on the worker's network drive its browser past the hub.
func requireNoDevToolsURL(t *testing.T, what string, body []byte) {
	t.Helper()
	s := string(body)
	for _, m := range regexp.MustCompile(`ws://[^"]*`).FindAllString(s, -1) {
		require.Regexp(t, `^ws://127\.0\.0\.1:\d+/sessions/s-[0-9a-f]+/cdp$`, m, "%s answered a WebSocket address that is not the hub's: %s", what, body)
	}
	require.NotContains(t, s, "/devtools/", "%s answered a DevTools path: %s", what, body)
}

// TestSessionWorkerGone: the worker of an open session disappears; the
// caller gets a clear error, not a hang.
func TestSessionWorkerGone(t *testing.T) {
	if testing.Short() {
		t.Skip("drives Chromium; skipped with -short")
	}
	h := startTestHub(t, testConfig(t))
	stop := startChromiumAgent(t, h.URL(), "wc", 1)
	waitLoneWorker(t, h, func(w persistence.WorkerInfo) bool { return w.Alive }, 20*time.Second, 20*time.Millisecond)
	st, b := do(t, "POST", h.URL()+"/sessions", `{"idle_timeout_s":60}`)
	require.Equal(t, http.StatusCreated, st, string(b))
	var sess struct{ ID string }
	require.NoError(t, json.Unmarshal(b, &sess))
	stop()
	require.Eventually(t, func() bool {
		st, b := do(t, "GET", h.URL()+"/sessions/"+sess.ID, "")
		return st == http.StatusOK && strings.Contains(string(b), "disconnected")
	}, 15*time.Second, 100*time.Millisecond)
	st, b = do(t, "POST", h.URL()+"/sessions/"+sess.ID+"/commands", `{"op":"text","selector":"p"}`)
	require.Equal(t, http.StatusGone, st, string(b))
	require.Contains(t, string(b), "disconnected")
	_ = os.Getenv
}

// openSession opens a session through hubURL and returns its id.
func openSession(t *testing.T, hubURL string) string {
	t.Helper()
	return openSessionIdle(t, hubURL, 60)
}

// openSessionIdle opens a session with idle_timeout_s idle. A 503
// no_capacity is retried for a while, as the Go client retries every 503:
// the registry a test waits on and the scheduler that picks are two views
// of the worker, and with several hubs the scheduler may hear of a freed
// (or a new) lane a moment after the registry shows it.
func openSessionIdle(t *testing.T, hubURL string, idle int) string {
	t.Helper()
	body := fmt.Sprintf(`{"idle_timeout_s":%d}`, idle)
	st, b := do(t, "POST", hubURL+"/sessions", body)
	for deadline := time.Now().Add(10 * time.Second); st == http.StatusServiceUnavailable &&
		strings.Contains(string(b), `"no_capacity"`) && time.Now().Before(deadline); {
		t.Logf("open session: %s; retrying", b)
		time.Sleep(100 * time.Millisecond)
		st, b = do(t, "POST", hubURL+"/sessions", body)
	}
	require.Equal(t, http.StatusCreated, st, string(b))
	var sess struct{ ID string }
	require.NoError(t, json.Unmarshal(b, &sess))
	return sess.ID
}

// fillForm fills the form page in session id: the page's text is the
// proof, later, that the session still drives the same browser tab.
func fillForm(t *testing.T, hubURL, id, pageURL string) {
	t.Helper()
	for _, c := range []string{`{"op":"navigate","url":"` + pageURL + `"}`,
		`{"op":"type","selector":"#name","text":"paprika"}`, `{"op":"click","selector":"#go"}`} {
		st, b := do(t, "POST", hubURL+"/sessions/"+id+"/commands", c)
		require.Equal(t, http.StatusOK, st, "%s: %s", c, b)
	}
}

// requireSameTab checks the session still shows the filled-in form.
func requireSameTab(t *testing.T, hubURL, id string) {
	t.Helper()
	st, b := do(t, "POST", hubURL+"/sessions/"+id+"/commands", `{"op":"text","selector":"#out"}`)
	require.Equal(t, http.StatusOK, st, string(b))
	require.Contains(t, string(b), "hello paprika")
}

// TestSessionSurvivesGrainRestart: the session grain panics and restarts
// with a fresh struct; it reloads the session from the (embedded) session
// store and drives the same tab, and DELETE still frees the lane.
func TestSessionSurvivesGrainRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("drives Chromium; skipped with -short")
	}
	page := serveFormPage(t)
	h := startTestHub(t, testConfig(t))
	require.Equal(t, "embedded:memory", h.stores.Kinds["sessions"])
	startChromiumAgent(t, h.URL(), "wc", 1)
	waitLoneWorker(t, h, func(w persistence.WorkerInfo) bool { return w.Alive }, 20*time.Second, 20*time.Millisecond)
	id := openSession(t, h.URL())
	fillForm(t, h.URL(), id, page.URL)

	require.NoError(t, h.InjectPanic(context.Background(), "session", id))
	require.Eventually(t, func() bool { return h.Metrics().Get("paprika_sessions_resumed_total") == 1 },
		10*time.Second, 10*time.Millisecond, "the restarted grain reloads the session")
	requireSameTab(t, h.URL(), id)
	ws, _ := h.Workers(context.Background())
	require.Equal(t, 1, ws[0].InFlight, "the session still holds the lane")

	st, b := do(t, "DELETE", h.URL()+"/sessions/"+id, "")
	require.Equal(t, http.StatusOK, st, string(b))
	require.Contains(t, string(b), `"closed"`)
	waitLoneWorker(t, h, func(w persistence.WorkerInfo) bool { return w.InFlight == 0 }, 10*time.Second, 50*time.Millisecond)
	_, err := h.stores.Sessions.Get(context.Background(), id)
	require.ErrorIs(t, err, persistence.ErrNotFound, "a closed session leaves no record")

	// A resumed session still idles out: its timer is re-armed from the
	// recorded last use.
	id = openSessionIdle(t, h.URL(), 2)
	require.NoError(t, h.InjectPanic(context.Background(), "session", id))
	require.Eventually(t, func() bool { return h.Metrics().Get("paprika_sessions_resumed_total") == 2 },
		10*time.Second, 10*time.Millisecond)
	require.Eventually(t, func() bool {
		st, b := do(t, "GET", h.URL()+"/sessions/"+id, "")
		return st == http.StatusOK && strings.Contains(string(b), `"closed"`) && strings.Contains(string(b), "idle")
	}, 10*time.Second, 50*time.Millisecond)
	waitLoneWorker(t, h, func(w persistence.WorkerInfo) bool { return w.InFlight == 0 }, 10*time.Second, 50*time.Millisecond)
}

// TestSessionLaneWithoutRecordIsReclaimed: a worker holds a lane for a
// session whose grain lost its state and has no record left (its hub died
// before recording it, here: the record deleted and the grain restarted).
// The reconciler wakes the grain, which closes the session on the worker
// and frees the lane; callers get not-found.
func TestSessionLaneWithoutRecordIsReclaimed(t *testing.T) {
	if testing.Short() {
		t.Skip("drives Chromium; skipped with -short")
	}
	h := startTestHub(t, testConfig(t)) // reconciler.interval 500ms
	startChromiumAgent(t, h.URL(), "wc", 1)
	ctx := context.Background()
	lanesInUse := func() int {
		ws, err := h.Workers(ctx)
		if err != nil || len(ws) != 1 || !ws[0].Alive {
			return -1
		}
		return ws[0].InFlight
	}
	require.Eventually(t, func() bool { return lanesInUse() == 0 }, 20*time.Second, 20*time.Millisecond)
	id := openSession(t, h.URL())
	// The registry's slot counts are written at most every 250 ms
	// (registryFlushDelay): the open may not show there yet.
	require.Eventually(t, func() bool { return lanesInUse() == 1 }, 5*time.Second, 20*time.Millisecond)

	require.NoError(t, h.stores.Sessions.Delete(ctx, id))
	require.NoError(t, h.InjectPanic(ctx, "session", id))
	require.Eventually(t, func() bool { return lanesInUse() == 0 }, 10*time.Second, 20*time.Millisecond,
		"the unrecorded session's lane is freed")
	require.EqualValues(t, 1, h.Metrics().Get("paprika_sessions_reclaimed_total"))
	st, b := do(t, "GET", h.URL()+"/sessions/"+id, "")
	require.Equal(t, http.StatusNotFound, st, string(b))
	// The worker closed it too: its only lane takes a new session.
	next := openSession(t, h.URL())
	st, b = do(t, "DELETE", h.URL()+"/sessions/"+next, "")
	require.Equal(t, http.StatusOK, st, string(b))
}

// TestFetchAndMacroJobsThroughTheHub: browser jobs end to end — the hub
// places them on a chromium worker, the worker stores the assets through
// the hub, and the API serves them.
func TestFetchAndMacroJobsThroughTheHub(t *testing.T) {
	if testing.Short() {
		t.Skip("drives Chromium; skipped with -short")
	}
	page := serveFormPage(t)
	h := startTestHub(t, testConfig(t))
	startAgent(t, h.URL(), "sim", 2) // a simulated worker: browser jobs must not land there
	startChromiumAgent(t, h.URL(), "wc", 2)

	j := submit(t, h.URL(), `{"mode":"fetch","params":{"url":"`+page.URL+`"}}`)
	got := waitFinal(t, h.URL(), j.ID, 60*time.Second)
	require.Equal(t, "succeeded", string(got.Status), "%s %s", got.Reason, got.Error)
	require.Equal(t, "wc", got.WorkerID)
	var res struct {
		Status int    `json:"status"`
		Title  string `json:"title"`
	}
	require.NoError(t, json.Unmarshal(got.Result, &res))
	require.Equal(t, 200, res.Status)
	require.Equal(t, "Form", res.Title)
	require.ElementsMatch(t, []string{"page.html", "screenshot.png"}, got.Assets)
	resp, err := http.Get(h.URL() + "/jobs/" + j.ID + "/assets/screenshot.png")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, "image/png", resp.Header.Get("Content-Type"))
	_, err = png.Decode(resp.Body)
	require.NoError(t, err, "the screenshot is a PNG")

	m := submit(t, h.URL(), `{"mode":"macro","params":{"steps":[
		{"op":"navigate","url":"`+page.URL+`"},
		{"op":"type","selector":"#name","text":"macro"},
		{"op":"click","selector":"#go"},
		{"op":"text","selector":"#out"}]}}`)
	got = waitFinal(t, h.URL(), m.ID, 60*time.Second)
	require.Equal(t, "succeeded", string(got.Status), "%s %s", got.Reason, got.Error)
	require.Contains(t, string(got.Result), "hello macro")
	st, b := do(t, "GET", h.URL()+"/jobs/"+m.ID+"/logs", "")
	require.Equal(t, http.StatusOK, st)
	require.GreaterOrEqual(t, strings.Count(string(b), "\n"), 4, "a log line per step: %s", b)

	bad := submit(t, h.URL(), `{"mode":"macro","params":{"steps":[{"op":"navigate","url":"`+page.URL+`"},{"op":"click","selector":"#missing","timeout_ms":300}]}}`)
	got = waitFinal(t, h.URL(), bad.ID, 60*time.Second)
	require.Equal(t, "failed", string(got.Status))
	require.Equal(t, "job_error", got.Reason)
	require.Contains(t, got.Error, "step")
}

// TestSessionSurvivesWorkerReconnect: the worker's socket drops (a hub
// stopping, the network) and the worker reconnects within the grace; its
// session goes on, on the same browser page. A command sent while it is
// away fails at once instead of hanging.
func TestSessionSurvivesWorkerReconnect(t *testing.T) {
	if testing.Short() {
		t.Skip("drives Chromium; skipped with -short")
	}
	page := serveFormPage(t)
	cfg := testConfig(t)
	require.NoError(t, cfg.Set("reconciler.orphan_grace", "30s"))
	h := startTestHub(t, cfg)
	proxy := storetest.NewProxy(t, strings.TrimPrefix(h.URL(), "http://"))
	startChromiumAgent(t, "http://"+proxy.Addr(), "wr", 1)
	alive := func(want bool) func() bool {
		return func() bool {
			ws, _ := h.Workers(context.Background())
			return len(ws) == 1 && ws[0].Connected == want
		}
	}
	require.Eventually(t, alive(true), 20*time.Second, 20*time.Millisecond)
	id := openSession(t, h.URL())
	cmd := func(body string) (int, string) {
		st, b := do(t, "POST", h.URL()+"/sessions/"+id+"/commands", body)
		return st, string(b)
	}
	st, b := cmd(`{"op":"navigate","url":"` + page.URL + `"}`)
	require.Equal(t, http.StatusOK, st, b)
	st, b = cmd(`{"op":"type","selector":"#name","text":"again"}`)
	require.Equal(t, http.StatusOK, st, b)

	proxy.Cut()
	require.Eventually(t, alive(false), 10*time.Second, 20*time.Millisecond)
	start := time.Now()
	st, b = cmd(`{"op":"text","selector":"title"}`)
	require.NotEqual(t, http.StatusOK, st, b)
	require.Contains(t, b, "not connected")
	require.Less(t, time.Since(start), 5*time.Second, "a command to an absent worker must fail fast")

	proxy.Restore()
	require.Eventually(t, alive(true), 20*time.Second, 50*time.Millisecond)
	// The same page, with what was typed before the cut.
	st, b = cmd(`{"op":"click","selector":"#go"}`)
	require.Equal(t, http.StatusOK, st, b)
	st, b = cmd(`{"op":"text","selector":"#out"}`)
	require.Equal(t, http.StatusOK, st, b)
	require.Contains(t, b, "hello again")
	st, raw := do(t, "DELETE", h.URL()+"/sessions/"+id, "")
	require.Less(t, st, 300, string(raw))
}

// The request's context reaches the session grain call: a caller that gives
// up is answered at once, not after the worker's command timeout (a minute
// by default), and an ended context does not call the grain at all.
func TestSessionCallsHonourTheRequestContext(t *testing.T) {
	h := startTestHub(t, testConfig(t))
	l := dialRawLinkDrivers(t, h.URL(), "w-mute", 1, "chromium") // never answers a session command
	waitLoneWorker(t, h, func(w persistence.WorkerInfo) bool { return w.Alive }, 10*time.Second, 20*time.Millisecond)

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := h.OpenSession(ctx, nil, 60, messages.BrowserOptions{})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Less(t, time.Since(start), 5*time.Second, "the open waited for the worker, not for ctx")
	var open messages.Frame
	for open.Type != messages.TypeSessionCommand {
		open = l.next(5 * time.Second)
		require.NotEmpty(t, open.Type, "the grain never asked the worker: ctx ended the call before it ran")
	}

	done, stop := context.WithCancel(context.Background())
	stop()
	start = time.Now()
	_, err = h.Session(done, open.SessionID)
	require.ErrorIs(t, err, context.Canceled)
	_, err = h.SessionCommand(done, open.SessionID, json.RawMessage(`{"op":"text","selector":"p"}`))
	require.ErrorIs(t, err, context.Canceled)
	_, err = h.CloseSession(done, open.SessionID)
	require.ErrorIs(t, err, context.Canceled)
	require.Less(t, time.Since(start), time.Second)
}
