package worker

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/messages"
)

// waitTimeout bounds every wait; generous for a loaded machine under -race.
const waitTimeout = 15 * time.Second

// fakeHub is the hub side of one worker link: it welcomes hello, acks final
// job frames, stores assets, and hands every frame to the test.
type fakeHub struct {
	t        *testing.T
	srv      *httptest.Server
	upgrader websocket.Upgrader
	frames   chan messages.Frame
	conn     chan *websocket.Conn

	mu     sync.Mutex
	wmu    sync.Mutex
	ws     *websocket.Conn
	assets map[string][]byte // "job/name" → body
}

func newFakeHub(t *testing.T) *fakeHub {
	h := &fakeHub{t: t, frames: make(chan messages.Frame, 4096), conn: make(chan *websocket.Conn, 4), assets: map[string][]byte{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /workers/{id}/link", h.serveLink)
	mux.HandleFunc("PUT /jobs/{id}/assets/{name}", func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		h.mu.Lock()
		h.assets[r.PathValue("id")+"/"+r.PathValue("name")] = b
		h.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})
	h.srv = httptest.NewServer(mux)
	t.Cleanup(h.srv.Close)
	return h
}

func (h *fakeHub) serveLink(w http.ResponseWriter, r *http.Request) {
	ws, err := h.upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	defer ws.Close()
	h.mu.Lock()
	h.ws = ws
	h.mu.Unlock()
	for {
		_, data, err := ws.ReadMessage()
		if err != nil {
			return
		}
		f, err := messages.DecodeFrame(data)
		if err != nil {
			h.t.Errorf("fake hub: bad frame %s: %v", data, err)
			continue
		}
		switch f.Type {
		case messages.TypeHello:
			h.send(messages.Frame{Type: messages.TypeWelcome, WorkerID: f.WorkerID, HeartbeatIntervalMS: 100, HubID: "fake"})
		case messages.TypeJobDone, messages.TypeJobFailed:
			h.send(messages.Frame{Type: messages.TypeJobAck, JobID: f.JobID, Attempt: f.Attempt})
		}
		h.frames <- f
	}
}

func (h *fakeHub) send(f messages.Frame) {
	b, err := f.Encode()
	require.NoError(h.t, err)
	h.mu.Lock()
	ws := h.ws
	h.mu.Unlock()
	h.wmu.Lock()
	defer h.wmu.Unlock()
	_ = ws.WriteMessage(websocket.TextMessage, b)
}

// waitFor returns the next frame of type typ for job (any job when ""),
// skipping others.
func (h *fakeHub) waitFor(typ, job string) messages.Frame {
	h.t.Helper()
	deadline := time.After(waitTimeout)
	for {
		select {
		case f := <-h.frames:
			if f.Type == typ && (job == "" || f.JobID == job) {
				return f
			}
		case <-deadline:
			h.t.Fatalf("no %s frame for job %q within %s", typ, job, waitTimeout)
		}
	}
}

// waitFinal returns job's job_done or job_failed.
func (h *fakeHub) waitFinal(job string) messages.Frame {
	h.t.Helper()
	return h.waitFinalWithin(job, waitTimeout)
}

// waitFinalWithin is waitFinal with a bound of its own (a browser start on
// a loaded machine takes longer than waitTimeout).
func (h *fakeHub) waitFinalWithin(job string, within time.Duration) messages.Frame {
	h.t.Helper()
	deadline := time.After(within)
	for {
		select {
		case f := <-h.frames:
			if f.JobID == job && (f.Type == messages.TypeJobDone || f.Type == messages.TypeJobFailed) {
				return f
			}
		case <-deadline:
			h.t.Fatalf("no final frame for job %q within %s", job, within)
		}
	}
}

func (h *fakeHub) asset(key string) []byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.assets[key]
}
