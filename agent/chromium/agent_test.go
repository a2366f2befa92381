package chromium

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/agent"
	"github.com/paprika-hub/paprika/messages"
)

// miniHub is the hub side of one worker link, plus the asset upload
// endpoint (PUT /jobs/{id}/assets/{name}); enough to drive an agent.
type miniHub struct {
	t     testing.TB
	srv   *httptest.Server
	token string
	wg    sync.WaitGroup // link handlers

	mu      sync.Mutex
	ws      *websocket.Conn
	wmu     sync.Mutex // serializes writes to ws
	frames  []messages.Frame
	taken   []bool
	changed chan struct{}
	assets  map[string]upload // by "job/name"
	auths   []string
}

func newMiniHub(t testing.TB, token string) *miniHub {
	h := &miniHub{t: t, token: token, changed: make(chan struct{}), assets: map[string]upload{}}
	var up websocket.Upgrader
	mux := http.NewServeMux()
	mux.HandleFunc("GET /workers/{id}/link", func(w http.ResponseWriter, r *http.Request) {
		ws, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		h.wg.Add(1)
		defer h.wg.Done()
		h.mu.Lock()
		h.ws = ws
		h.mu.Unlock()
		defer ws.Close()
		for {
			_, data, err := ws.ReadMessage()
			if err != nil {
				return
			}
			f, err := messages.DecodeFrame(data)
			if err != nil {
				t.Errorf("mini hub: bad frame %s: %v", data, err)
				continue
			}
			switch f.Type {
			case messages.TypeHello:
				h.send(messages.Frame{Type: messages.TypeWelcome, WorkerID: f.WorkerID, HeartbeatIntervalMS: 100, HubID: "mini"})
			case messages.TypeJobDone, messages.TypeJobFailed:
				if f.Reason != agent.ReasonRejected {
					h.send(messages.Frame{Type: messages.TypeJobAck, JobID: f.JobID, Attempt: f.Attempt})
				}
			}
			h.mu.Lock()
			h.frames = append(h.frames, f)
			h.taken = append(h.taken, false)
			close(h.changed)
			h.changed = make(chan struct{})
			h.mu.Unlock()
		}
	})
	mux.HandleFunc("PUT /jobs/{id}/assets/{name}", func(w http.ResponseWriter, r *http.Request) {
		data, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		h.mu.Lock()
		h.auths = append(h.auths, r.Header.Get("Authorization"))
		h.assets[r.PathValue("id")+"/"+r.PathValue("name")] = upload{r.PathValue("id"), r.PathValue("name"), r.Header.Get("Content-Type"), data}
		h.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})
	h.srv = httptest.NewServer(mux)
	t.Cleanup(func() {
		h.srv.Close()
		h.mu.Lock()
		if h.ws != nil {
			_ = h.ws.Close()
		}
		h.mu.Unlock()
		h.wg.Wait()
	})
	return h
}

func (h *miniHub) send(f messages.Frame) {
	b, err := f.Encode()
	require.NoError(h.t, err)
	h.mu.Lock()
	ws := h.ws
	h.mu.Unlock()
	h.wmu.Lock()
	defer h.wmu.Unlock()
	_ = ws.WriteMessage(websocket.TextMessage, b)
}

// wait returns the oldest frame not returned before that matches.
func (h *miniHub) wait(what string, match func(messages.Frame) bool) messages.Frame {
	h.t.Helper()
	deadline := time.NewTimer(waitTimeout)
	defer deadline.Stop()
	for {
		h.mu.Lock()
		for i, f := range h.frames {
			if !h.taken[i] && match(f) {
				h.taken[i] = true
				h.mu.Unlock()
				return f
			}
		}
		ch := h.changed
		h.mu.Unlock()
		select {
		case <-ch:
		case <-deadline.C:
			h.t.Fatalf("mini hub: no %s within %s", what, waitTimeout)
		}
	}
}

// command sends a session command and returns its session_result.
func (h *miniHub) command(sessionID, commandID string, cmd map[string]any) messages.Frame {
	h.t.Helper()
	raw, err := json.Marshal(cmd)
	require.NoError(h.t, err)
	h.send(messages.Frame{Type: messages.TypeSessionCommand, SessionID: sessionID, CommandID: commandID, Command: raw})
	return h.wait("session_result "+commandID, func(f messages.Frame) bool {
		return f.Type == messages.TypeSessionResult && f.CommandID == commandID
	})
}

// heartbeat waits for a heartbeat reporting inFlight.
func (h *miniHub) heartbeat(inFlight int) {
	h.t.Helper()
	h.wait(fmt.Sprintf("heartbeat with in_flight %d", inFlight), func(f messages.Frame) bool {
		return f.Type == messages.TypeHeartbeat && f.Stats.InFlight == inFlight
	})
}

func (h *miniHub) asset(key string) (upload, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	u, ok := h.assets[key]
	return u, ok
}

// TestAgentWithChromium drives a real agent with a chromium driver through
// the worker link: sessions (open, navigate, text, screenshot, close, the
// lane freed), a fetch job whose assets reach the hub through
// agent.UploadAsset, and the agent's stop closing a session.
func TestAgentWithChromium(t *testing.T) {
	s := newSite(t)
	hub := newMiniHub(t, "w-token")

	// The wiring `paprika worker --driver chromium` needs: the driver is
	// built before the agent, and its uploader calls the agent, which
	// exists by the time a job runs.
	var a *agent.Agent
	d, err := New(Config{
		Lanes: 1, WorkDir: t.TempDir(), Logger: testLogger(t),
		Upload: func(ctx context.Context, jobID, name, contentType string, r io.Reader, size int64) error {
			return a.UploadAsset(ctx, jobID, name, contentType, r, size)
		},
	})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.Close()) })
	a, err = agent.New(agent.Config{
		HubURLs: []string{hub.srv.URL}, ID: "w-test", Lanes: 1, DriverImpl: d, Token: "w-token",
		StopTimeout: 5 * time.Second, FlushTimeout: 2 * time.Second, WorkDir: t.TempDir(), Logger: testLogger(t),
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			require.NoError(t, <-done)
		}
	}
	t.Cleanup(stop)

	hello := hub.wait("hello", func(f messages.Frame) bool { return f.Type == messages.TypeHello })
	require.Equal(t, []string{agent.DriverChromium}, hello.Capabilities.Drivers)
	require.Equal(t, []string{"chromium://w-test/lane/0"}, hello.Capabilities.LaneURLs)

	// A session holds the only lane.
	r := hub.command("s1", "c1", map[string]any{"op": "open"})
	require.True(t, r.OK, r.Error)
	require.Equal(t, []string{messages.LaneIdle}, hello.LaneStates)
	var raw map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(r.Result, &raw))
	require.NotContains(t, raw, "devtools_url", "the lane's name, never its DevTools URL")
	var res struct {
		Lane    string            `json:"lane"`
		Browser map[string]string `json:"browser"`
	}
	require.NoError(t, json.Unmarshal(r.Result, &res))
	require.Equal(t, "chromium://w-test/lane/0", res.Lane)
	require.Contains(t, res.Browser["Browser"], "Chrome", "the lane's version, for the gateway's /json/version")
	require.NotContains(t, res.Browser, "webSocketDebuggerUrl")
	// The lane's new state reaches the hub in a heartbeat.
	hub.wait("heartbeat with lane 0 held by the session", func(f messages.Frame) bool {
		return f.Type == messages.TypeHeartbeat && slices.Equal(f.LaneStates, []string{messages.LaneSession})
	})
	hub.heartbeat(1)

	r = hub.command("s2", "c2", map[string]any{"op": "open"})
	require.False(t, r.OK)
	require.Equal(t, "no free lane (1 of 1 busy)", r.Error)
	hub.send(messages.Frame{Type: messages.TypeAssignJob, JobID: "j-busy", Attempt: 1, Mode: "fetch", Params: json.RawMessage(`{"url":"` + s.URL + `/static"}`)})
	f := hub.wait("job_failed j-busy", func(f messages.Frame) bool { return f.JobID == "j-busy" && f.Type == messages.TypeJobFailed })
	require.Equal(t, agent.ReasonRejected, f.Reason)

	r = hub.command("s1", "c3", map[string]any{"op": "navigate", "url": s.URL + "/static"})
	require.True(t, r.OK, r.Error)
	require.JSONEq(t, `{"status":200,"url":"`+s.URL+`/static","title":"Static page"}`, string(r.Result))
	r = hub.command("s1", "c4", map[string]any{"op": "text", "selector": "#h"})
	require.True(t, r.OK, r.Error)
	require.JSONEq(t, `{"text":"Hello paprika"}`, string(r.Result))
	r = hub.command("s1", "c5", map[string]any{"op": "screenshot"})
	require.True(t, r.OK, r.Error)
	var shot struct {
		PNG   string `json:"png_base64"`
		Bytes int    `json:"bytes"`
	}
	require.NoError(t, json.Unmarshal(r.Result, &shot))
	data, err := base64.StdEncoding.DecodeString(shot.PNG)
	require.NoError(t, err)
	require.Len(t, data, shot.Bytes)
	_, err = png.Decode(bytes.NewReader(data))
	require.NoError(t, err)
	r = hub.command("s1", "c6", map[string]any{"op": "click", "selector": "#missing", "timeout_ms": 200})
	require.False(t, r.OK)
	require.Equal(t, "click #missing: timed out after 200ms waiting for #missing", r.Error)
	r = hub.command("s1", "c7", map[string]any{"op": "fly"})
	require.False(t, r.OK)
	require.Contains(t, r.Error, `unknown op "fly"`)

	r = hub.command("s1", "c8", map[string]any{"op": "close"})
	require.True(t, r.OK, r.Error)
	require.JSONEq(t, `{"was_open":true}`, string(r.Result))
	hub.wait("heartbeat with lane 0 idle again", func(f messages.Frame) bool {
		return f.Type == messages.TypeHeartbeat && slices.Equal(f.LaneStates, []string{messages.LaneIdle})
	})
	hub.heartbeat(0)
	r = hub.command("s1", "c9", map[string]any{"op": "text", "selector": "#h"})
	require.Equal(t, "no session s1 on this worker", r.Error)

	// The lane is free again: a job runs, and its assets reach the hub.
	hub.send(messages.Frame{Type: messages.TypeAssignJob, JobID: "j-fetch", Attempt: 1, Mode: "fetch", Params: json.RawMessage(`{"url":"` + s.URL + `/static"}`)})
	f = hub.wait("job_done j-fetch", func(f messages.Frame) bool {
		return f.JobID == "j-fetch" && (f.Type == messages.TypeJobDone || f.Type == messages.TypeJobFailed)
	})
	require.Equal(t, messages.TypeJobDone, f.Type, f.Error)
	require.Equal(t, []string{"page.html", "screenshot.png"}, f.Assets)
	page, ok := hub.asset("j-fetch/page.html")
	require.True(t, ok)
	require.Equal(t, "text/html; charset=utf-8", page.contentType)
	require.Contains(t, string(page.data), "Hello paprika")
	shotAsset, ok := hub.asset("j-fetch/screenshot.png")
	require.True(t, ok)
	require.True(t, isPNG(shotAsset.data))
	hub.mu.Lock()
	require.Equal(t, []string{"Bearer w-token", "Bearer w-token"}, hub.auths)
	hub.mu.Unlock()

	// A session still open when the agent stops is closed, and its lane freed.
	r = hub.command("s3", "c10", map[string]any{"op": "open"})
	require.True(t, r.OK, r.Error)
	r = hub.command("s3", "c11", map[string]any{"op": "navigate", "url": s.URL + "/static"})
	require.True(t, r.OK, r.Error)
	stop()
	require.Empty(t, d.lanes[0].sem, "the session released the lane")
	b := d.lanes[0].browser()
	require.NotNil(t, b)
	n, err := b.pages(2 * time.Second)
	require.NoError(t, err)
	require.Zero(t, n, "the session's page is closed")
}
