package hub

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/agent"
	"github.com/paprika-hub/paprika/agent/chromium"
	"github.com/paprika-hub/paprika/metrics"
	"github.com/paprika-hub/paprika/persistence"
	"github.com/paprika-hub/paprika/persistence/storetest"
)

// livePage animates (a counter repainted every 30 ms) and has a button
// at a known place whose click the page remembers.
const livePage = `<!doctype html><title>Live</title>
<style>body{margin:0;font:40px sans-serif}#b{position:absolute;left:0;top:0;width:300px;height:150px}</style>
<button id="b" onclick="document.getElementById('out').textContent='pressed'">press</button>
<p id="n" style="position:absolute;top:200px">0</p><p id="out" style="position:absolute;top:300px"></p>
<script>let i=0;setInterval(()=>{document.getElementById('n').textContent=++i;document.body.style.background='hsl('+(i*7%360)+',60%,70%)'},30)</script>`

func serveLivePage(t testing.TB) *httptest.Server {
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, livePage)
	}))
	t.Cleanup(page.Close)
	return page
}

// startLiveAgent runs a worker with real Chromium lanes linked to url.
func startLiveAgent(t testing.TB, url, id string, lanes int) *agent.Agent {
	if _, err := chromium.LookPath(""); err != nil {
		storetest.Unavailable(t, "chromium", err)
	}
	drv, err := chromium.New(chromium.Config{Lanes: lanes, WorkDir: t.TempDir(), Logger: testLogger(t)})
	require.NoError(t, err)
	a, err := agent.New(agent.Config{HubURLs: []string{url}, ID: id, Lanes: lanes, DriverImpl: drv, Logger: testLogger(t)})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = a.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait(); _ = drv.Close() })
	return a
}

// liveMsg is one message a viewer reads.
type liveMsg struct {
	Type    string `json:"type"`
	Seq     int64  `json:"seq"`
	Format  string `json:"format"`
	Data    string `json:"data"`
	Width   int    `json:"width"`
	Height  int    `json:"height"`
	State   string `json:"state"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

type testViewer struct {
	t  testing.TB
	ws *websocket.Conn
}

func dialLive(t testing.TB, url string, hdr ...http.Header) *testViewer {
	t.Helper()
	var h http.Header
	if len(hdr) > 0 {
		h = hdr[0]
	}
	ws, resp, err := websocket.DefaultDialer.Dial(url, h)
	if resp != nil && err != nil {
		t.Fatalf("dial %s: HTTP %d: %v", url, resp.StatusCode, err)
	}
	require.NoError(t, err)
	t.Cleanup(func() { _ = ws.Close() })
	return &testViewer{t: t, ws: ws}
}

func (v *testViewer) read(within time.Duration) (liveMsg, error) {
	var m liveMsg
	_ = v.ws.SetReadDeadline(time.Now().Add(within))
	_, b, err := v.ws.ReadMessage()
	if err != nil {
		return m, err
	}
	require.NoError(v.t, json.Unmarshal(b, &m), string(b))
	return m, nil
}

func (v *testViewer) send(msg string) {
	require.NoError(v.t, v.ws.WriteMessage(websocket.TextMessage, []byte(msg)))
}

// frames reads until it saw n frames with distinct pictures, acking each.
func (v *testViewer) frames(n int, within time.Duration) []liveMsg {
	v.t.Helper()
	seen := map[string]bool{}
	var out []liveMsg
	deadline := time.Now().Add(within)
	for len(seen) < n {
		m, err := v.read(time.Until(deadline))
		require.NoError(v.t, err, "after %d distinct frames", len(seen))
		if m.Type != "frame" {
			require.Equal(v.t, "status", m.Type, m.Message)
			continue
		}
		require.Equal(v.t, "jpeg", m.Format)
		require.Positive(v.t, m.Width)
		require.Positive(v.t, m.Height)
		if !seen[m.Data] {
			seen[m.Data] = true
			out = append(out, m)
		}
		v.send(fmt.Sprintf(`{"type":"ack","seq":%d}`, m.Seq))
	}
	return out
}

// waitEnded reads until the ended status and the close that follows.
func (v *testViewer) waitEnded(within time.Duration) (reason string, code int) {
	v.t.Helper()
	deadline := time.Now().Add(within)
	for {
		m, err := v.read(time.Until(deadline))
		if err != nil {
			ce, ok := err.(*websocket.CloseError)
			require.True(v.t, ok, "want a close, got %v", err)
			return reason, ce.Code
		}
		if m.Type == "frame" {
			v.send(fmt.Sprintf(`{"type":"ack","seq":%d}`, m.Seq))
		}
		if m.Type == "status" && m.State == "ended" {
			reason = m.Reason
		}
	}
}

func liveLiveSessionURL(h *Hub, id, query string) string {
	return wsURL(h.URL()) + "/sessions/" + id + "/live" + query
}

// metricValue reads a gauge or counter.
func metricValue(c prometheus.Metric) float64 {
	var m dto.Metric
	if c.Write(&m) != nil {
		return -1
	}
	if m.Gauge != nil {
		return m.Gauge.GetValue()
	}
	return m.Counter.GetValue()
}

func framesCount(m *metrics.Metrics, dir string) float64 {
	return metricValue(m.Live.Frames.WithLabelValues(dir))
}

// TestLiveJob: a running macro job's lane is watched through the hub; its
// view is view-only (control refused before the upgrade) and ends with
// the job; finished, unknown and noop jobs have none; the token and the
// Origin are checked as on the CDP routes.
func TestLiveJob(t *testing.T) {
	if testing.Short() {
		t.Skip("drives Chromium; skipped with -short")
	}
	page := serveLivePage(t)
	cfg := testConfig(t)
	require.NoError(t, cfg.Set("auth.api_token", "tok"))
	h := startTestHub(t, cfg)
	a := startLiveAgent(t, h.URL(), "wjob", 1)
	waitLoneWorker(t, h, func(w persistence.WorkerInfo) bool { return w.Alive }, 30*time.Second, 20*time.Millisecond)
	auth := []string{"Authorization", "Bearer tok"}
	st, b := do(t, "POST", h.URL()+"/jobs", `{"mode":"macro","params":{"steps":[
		{"op":"navigate","url":"`+page.URL+`"},{"op":"wait","ms":8000}]}}`, auth...)
	require.Equal(t, http.StatusCreated, st, string(b))
	var job persistence.Job
	require.NoError(t, json.Unmarshal(b, &job))
	base := wsURL(h.URL()) + "/jobs/" + job.ID + "/live"
	require.Eventually(t, func() bool {
		st, b := do(t, "GET", h.URL()+"/jobs/"+job.ID, "", auth...)
		return st == http.StatusOK && strings.Contains(string(b), `"status":"running"`)
	}, 30*time.Second, 50*time.Millisecond)

	refused := func(url string, hdr http.Header) int {
		ws, resp, err := websocket.DefaultDialer.Dial(url, hdr)
		if err == nil {
			_ = ws.Close()
			return http.StatusSwitchingProtocols
		}
		require.NotNil(t, resp, url)
		return resp.StatusCode
	}
	require.Equal(t, http.StatusUnauthorized, refused(base, nil))
	require.Equal(t, http.StatusUnauthorized, refused(base+"?token=wrong", nil))
	require.Equal(t, http.StatusForbidden, refused(base+"?token=tok", http.Header{"Origin": {"https://evil.example"}}))
	require.Equal(t, http.StatusBadRequest, refused(base+"?token=tok&control=1", nil), "a job's view is view-only")
	require.Equal(t, http.StatusNotFound, refused(wsURL(h.URL())+"/jobs/nope/live?token=tok", nil))
	require.Equal(t, http.StatusNotFound, refused(wsURL(h.URL())+"/sessions/s-nope/live?token=tok", nil))

	// The page only shows after navigate: wait for frames that change.
	v := dialLive(t, base+"?token=tok")
	v.frames(3, 30*time.Second)
	require.Equal(t, 1, a.Screencasts())
	v2 := dialLive(t, base, http.Header{"Authorization": {"Bearer tok"}})
	v2.frames(2, 20*time.Second)
	require.Equal(t, 1, a.Screencasts(), "two viewers, one screencast")
	reason, code := v.waitEnded(30 * time.Second)
	require.Equal(t, websocket.CloseNormalClosure, code)
	require.Equal(t, "job ended", reason)
	_, code = v2.waitEnded(10 * time.Second)
	require.Equal(t, websocket.CloseNormalClosure, code)
	require.Eventually(t, func() bool { return a.Screencasts() == 0 }, 10*time.Second, 20*time.Millisecond)
	require.Eventually(t, func() bool {
		return refused(base+"?token=tok", nil) == http.StatusConflict
	}, 10*time.Second, 50*time.Millisecond, "a finished job has no live view")

	st, b = do(t, "POST", h.URL()+"/jobs", `{"mode":"noop","params":{"sleep_ms":1}}`, auth...)
	require.Equal(t, http.StatusCreated, st, string(b))
	require.NoError(t, json.Unmarshal(b, &job))
	require.Equal(t, http.StatusConflict, refused(wsURL(h.URL())+"/jobs/"+job.ID+"/live?token=tok", nil), "noop runs no browser")
}

// TestLiveSlowViewerNoBacklog: a viewer that stops acknowledging is sent
// nothing more (one frame in flight) while another keeps its pace, and the
// hub's heap stays flat.
func TestLiveSlowViewerNoBacklog(t *testing.T) {
	if testing.Short() {
		t.Skip("drives Chromium; skipped with -short")
	}
	page := serveLivePage(t)
	h := startTestHub(t, testConfig(t))
	a := startLiveAgent(t, h.URL(), "wslow", 1)
	waitLoneWorker(t, h, func(w persistence.WorkerInfo) bool { return w.Alive }, 30*time.Second, 20*time.Millisecond)
	id := openSession(t, h.URL())
	st, b := do(t, "POST", h.URL()+"/sessions/"+id+"/commands", `{"op":"navigate","url":"`+page.URL+`"}`)
	require.Equal(t, http.StatusOK, st, string(b))

	fast := dialLive(t, liveLiveSessionURL(h, id, ""))
	fast.frames(3, 20*time.Second)
	slow := dialLive(t, liveLiveSessionURL(h, id, ""))
	// The slow viewer's socket is read (so TCP holds nothing back) but
	// never acknowledged.
	slowFrames := make(chan liveMsg, 100)
	go func() {
		for {
			m, err := slow.read(time.Minute)
			if err != nil {
				close(slowFrames)
				return
			}
			if m.Type == "frame" {
				slowFrames <- m
			}
		}
	}()
	var got []liveMsg
	select {
	case m := <-slowFrames:
		got = append(got, m)
	case <-time.After(20 * time.Second):
		t.Fatal("the slow viewer never got a first frame")
	}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	sentBefore := framesCount(h.Metrics(), metrics.LiveFramesSent)
	fastFrames := len(fast.frames(40, 60*time.Second))
	// Whatever reached the slow viewer's socket meanwhile: nothing new.
	time.Sleep(300 * time.Millisecond)
	for len(slowFrames) > 0 {
		got = append(got, <-slowFrames)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	sent := framesCount(h.Metrics(), metrics.LiveFramesSent) - sentBefore
	t.Logf("fast viewer: %d frames; slow viewer: %d (never acked); frames sent meanwhile: %.0f; heap %d → %d KiB",
		fastFrames, len(got), sent, before.HeapInuse>>10, after.HeapInuse>>10)
	require.Len(t, got, 1, "a viewer that does not acknowledge gets one frame, no backlog")
	require.GreaterOrEqual(t, fastFrames, 40)
	require.LessOrEqual(t, sent, float64(fastFrames)+5, "the frames sent are the fast viewer's")
	require.Less(t, int64(after.HeapInuse)-int64(before.HeapInuse), int64(16<<20), "hub heap flat")
	require.Equal(t, 1, a.Screencasts())
	// The slow viewer acknowledges at last: it gets the latest frame, not the ones it missed.
	slow.send(fmt.Sprintf(`{"type":"ack","seq":%d}`, got[0].Seq))
	select {
	case next := <-slowFrames:
		require.Greater(t, next.Seq, got[0].Seq+5, "the latest frame, skipping what it missed")
	case <-time.After(10 * time.Second):
		t.Fatal("the slow viewer's ack brought no frame")
	}
}

// TestLiveRecording: record: true stores a job's page as the asset
// recording.ndjson and a session's page with its downloads, one JSON line
// per JPEG frame, timed from the first.
func TestLiveRecording(t *testing.T) {
	if testing.Short() {
		t.Skip("drives Chromium; skipped with -short")
	}
	page := serveLivePage(t)
	h := startTestHub(t, testConfig(t))
	startChromiumAgent(t, h.URL(), "wrec", 1)
	waitLoneWorker(t, h, func(w persistence.WorkerInfo) bool { return w.Alive }, 30*time.Second, 20*time.Millisecond)

	checkRecording := func(url string) int {
		res, err := http.Get(url)
		require.NoError(t, err)
		defer res.Body.Close()
		require.Equal(t, http.StatusOK, res.StatusCode, url)
		require.Equal(t, "application/x-ndjson", res.Header.Get("Content-Type"))
		dec := json.NewDecoder(res.Body)
		n, lastT := 0, int64(-1)
		for dec.More() {
			var line struct {
				T    int64  `json:"t"`
				W    int    `json:"w"`
				H    int    `json:"h"`
				Data []byte `json:"data"`
			}
			require.NoError(t, dec.Decode(&line))
			require.Greater(t, line.T, lastT, "frames in time order")
			require.Positive(t, line.W)
			require.Positive(t, line.H)
			require.Equal(t, []byte{0xFF, 0xD8}, line.Data[:2], "a JPEG")
			lastT = line.T
			n++
		}
		require.LessOrEqual(t, float64(n), float64(lastT)/1000*5+2, "at most 5 frames a second")
		return n
	}

	st, b := do(t, "POST", h.URL()+"/jobs", `{"mode":"macro","params":{"record":true,"steps":[
		{"op":"navigate","url":"`+page.URL+`"},{"op":"wait","ms":2000}]}}`)
	require.Equal(t, http.StatusCreated, st, string(b))
	var job persistence.Job
	require.NoError(t, json.Unmarshal(b, &job))
	got := waitFinal(t, h.URL(), job.ID, 60*time.Second)
	require.Equal(t, persistence.StatusSucceeded, got.Status, "%s %s", got.Reason, got.Error)
	require.Contains(t, got.Assets, "recording.ndjson")
	n := checkRecording(h.URL() + "/jobs/" + job.ID + "/assets/recording.ndjson")
	require.GreaterOrEqual(t, n, 5, "two seconds of animation")

	st, b = do(t, "POST", h.URL()+"/jobs", `{"mode":"fetch","params":{"url":"http://x/","record":"yes"}}`)
	require.Equal(t, http.StatusBadRequest, st, "record is a boolean: %s", b)

	waitLoneWorker(t, h, func(w persistence.WorkerInfo) bool { return w.InFlight == 0 }, 20*time.Second, 50*time.Millisecond)
	st, b = do(t, "POST", h.URL()+"/sessions", `{"idle_timeout_s":60,"record":true}`)
	require.Equal(t, http.StatusCreated, st, string(b))
	var sess struct {
		ID string `json:"id"`
	}
	require.NoError(t, json.Unmarshal(b, &sess))
	st, b = do(t, "POST", h.URL()+"/sessions/"+sess.ID+"/commands", `{"op":"navigate","url":"`+page.URL+`"}`)
	require.Equal(t, http.StatusOK, st, string(b))
	time.Sleep(1500 * time.Millisecond) // the animation runs meanwhile
	st, b = do(t, "DELETE", h.URL()+"/sessions/"+sess.ID, "")
	require.Equal(t, http.StatusOK, st, string(b))
	var url string
	require.Eventually(t, func() bool {
		st, b := do(t, "GET", h.URL()+"/sessions/"+sess.ID+"/downloads", "")
		var l struct {
			Downloads []struct {
				Name string `json:"name"`
				URL  string `json:"url"`
			} `json:"downloads"`
		}
		_ = json.Unmarshal(b, &l)
		for _, d := range l.Downloads {
			if st == http.StatusOK && d.Name == "recording.ndjson" {
				url = d.URL
				return true
			}
		}
		return false
	}, 20*time.Second, 100*time.Millisecond, "the session's recording is kept with its downloads")
	if strings.HasPrefix(url, "/") {
		url = h.URL() + url
	}
	require.GreaterOrEqual(t, checkRecording(url), 3)
}
