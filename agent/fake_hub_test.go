package agent

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/messages"
)

// waitTimeout bounds every wait of the tests; generous for a loaded 2-core
// machine running with -race.
const waitTimeout = 10 * time.Second

// recvFrame is a frame the fake hub received, with the connection it came on
// (0 for the hub's first connection, 1 for the second, …).
type recvFrame struct {
	conn int // connection index on this hub
	n    int // arrival index on this hub
	f    messages.Frame
}

// fakeHub speaks the hub side of the worker link over an httptest server:
// it answers hello with welcome (or id_taken), acknowledges final job frames
// when autoAck is on, and records every frame it receives.
type fakeHub struct {
	t        *testing.T
	srv      *httptest.Server
	upgrader websocket.Upgrader
	wg       sync.WaitGroup // handler goroutines

	mu          sync.Mutex
	conns       []*fakeConn
	frames      []recvFrame
	consumed    []bool        // per frame: returned by waitFor already
	changed     chan struct{} // closed and replaced on every new frame
	taken       map[string]bool
	autoAck     bool
	heartbeatMS int64
	auths       []string
	paths       []string
	closeCodes  []int
	closed      bool
	noPong      bool // swallow pings, like a hub that hangs
	// onLeaving answers a leaving frame; nil: a leave_ack at once.
	onLeaving func(c *fakeConn)
	// relinkTo, when set, answers a hello that lists hub_urls with relink
	// to it, as a hub that does not own the worker's grain does.
	relinkTo string
}

// fakeConn is one worker link on the fake hub.
type fakeConn struct {
	ws  *websocket.Conn
	wmu sync.Mutex
}

func (c *fakeConn) send(t *testing.T, f messages.Frame) {
	b, err := f.Encode()
	require.NoError(t, err)
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_ = c.ws.WriteMessage(websocket.TextMessage, b) // a dropped link is the test's business
}

func newFakeHub(t *testing.T) *fakeHub {
	t.Helper()
	h := &fakeHub{t: t, changed: make(chan struct{}), taken: map[string]bool{}, autoAck: true, heartbeatMS: 50}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /workers/{id}/link", h.serveLink)
	h.srv = httptest.NewServer(mux)
	t.Cleanup(h.close)
	return h
}

func (h *fakeHub) url() string { return h.srv.URL }

func (h *fakeHub) serveLink(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		http.Error(w, "closed", http.StatusServiceUnavailable)
		return
	}
	h.wg.Add(1) // under mu, so never concurrent with close's Wait
	h.mu.Unlock()
	defer h.wg.Done()
	ws, err := h.upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	c := &fakeConn{ws: ws}
	h.mu.Lock()
	if h.noPong {
		ws.SetPingHandler(func(string) error { return nil })
	}
	idx := len(h.conns)
	h.conns = append(h.conns, c)
	h.auths = append(h.auths, r.Header.Get("Authorization"))
	h.paths = append(h.paths, r.URL.Path)
	h.mu.Unlock()
	defer ws.Close()
	for {
		_, data, err := ws.ReadMessage()
		if err != nil {
			var ce *websocket.CloseError
			if errors.As(err, &ce) {
				h.mu.Lock()
				h.closeCodes = append(h.closeCodes, ce.Code)
				h.mu.Unlock()
			}
			return
		}
		f, err := messages.DecodeFrame(data)
		if err != nil {
			h.t.Errorf("fake hub: agent sent a bad frame %s: %v", data, err)
			continue
		}
		h.mu.Lock()
		h.frames = append(h.frames, recvFrame{conn: idx, n: len(h.frames), f: f})
		h.consumed = append(h.consumed, false)
		close(h.changed)
		h.changed = make(chan struct{})
		taken, ack, hb, onLeaving, relinkTo := h.taken[f.WorkerID], h.autoAck, h.heartbeatMS, h.onLeaving, h.relinkTo
		h.mu.Unlock()
		switch {
		case f.Type == messages.TypeHello && relinkTo != "" && len(f.HubURLs) > 0:
			c.send(h.t, messages.Frame{Type: messages.TypeRelink, HubURL: relinkTo})
		case f.Type == messages.TypeLeaving && onLeaving != nil:
			onLeaving(c)
		case f.Type == messages.TypeLeaving:
			c.send(h.t, messages.Frame{Type: messages.TypeLeaveAck})
		case f.Type == messages.TypeHello && taken:
			c.send(h.t, messages.Frame{Type: messages.TypeError, Code: CodeIDTaken, Message: "id held by another ip"})
		case f.Type == messages.TypeHello:
			c.send(h.t, messages.Frame{Type: messages.TypeWelcome, WorkerID: f.WorkerID, HeartbeatIntervalMS: hb, HubID: "fake"})
		case ack && isFinal(f):
			c.send(h.t, messages.Frame{Type: messages.TypeJobAck, JobID: f.JobID, Attempt: f.Attempt})
		}
	}
}

func isFinal(f messages.Frame) bool {
	return f.Type == messages.TypeJobDone || (f.Type == messages.TypeJobFailed && f.Reason != ReasonRejected)
}

// setAutoAck turns automatic job_ack on or off.
func (h *fakeHub) setAutoAck(on bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.autoAck = on
}

// answerLeaving makes the hub answer leaving frames with fn.
func (h *fakeHub) answerLeaving(fn func(c *fakeConn)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.onLeaving = fn
}

// takeID makes the hub answer a hello for id with id_taken.
func (h *fakeHub) takeID(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.taken[id] = true
}

// relink makes the hub answer a hello that lists hub_urls with relink to u.
func (h *fakeHub) relink(u string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.relinkTo = u
}

// swallowPings makes the hub stop answering pings, like a hung hub.
func (h *fakeHub) swallowPings() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.noPong = true
}

// send writes a frame on the hub's newest connection.
func (h *fakeHub) send(f messages.Frame) {
	h.mu.Lock()
	require.NotEmpty(h.t, h.conns, "fake hub has no connection")
	c := h.conns[len(h.conns)-1]
	h.mu.Unlock()
	c.send(h.t, f)
}

// sendRaw writes bytes as a text frame on the hub's newest connection.
func (h *fakeHub) sendRaw(b []byte) {
	h.mu.Lock()
	require.NotEmpty(h.t, h.conns, "fake hub has no connection")
	c := h.conns[len(h.conns)-1]
	h.mu.Unlock()
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_ = c.ws.WriteMessage(websocket.TextMessage, b)
}

// assign sends an assign_job for a noop job with the given params JSON.
func (h *fakeHub) assign(id, params string) {
	h.send(messages.Frame{Type: messages.TypeAssignJob, JobID: id, Attempt: 1, Mode: "noop", Params: []byte(params)})
}

// dropAll cuts every connection without a close frame, like a dead hub.
func (h *fakeHub) dropAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range h.conns {
		_ = c.ws.NetConn().Close()
	}
}

func (h *fakeHub) close() {
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	h.srv.Close()
	h.dropAll()
	h.wg.Wait()
}

// waitFor returns the oldest frame not returned before that matches match,
// waiting for one to arrive if needed. Frames of unrelated matchers are left
// for them, so frames of concurrent jobs can be awaited in any order.
func (h *fakeHub) waitFor(match func(recvFrame) bool, what string) recvFrame {
	h.t.Helper()
	deadline := time.NewTimer(waitTimeout)
	defer deadline.Stop()
	for {
		h.mu.Lock()
		for i, rf := range h.frames {
			if !h.consumed[i] && match(rf) {
				h.consumed[i] = true
				h.mu.Unlock()
				return rf
			}
		}
		ch := h.changed
		h.mu.Unlock()
		select {
		case <-ch:
		case <-deadline.C:
			h.t.Fatalf("fake hub: no %s within %s; got %s", what, waitTimeout, h.describe())
		}
	}
}

// waitType waits for the next frame of a type.
func (h *fakeHub) waitType(typ string) recvFrame {
	h.t.Helper()
	return h.waitFor(func(rf recvFrame) bool { return rf.f.Type == typ }, typ)
}

// jobFrames collects the next frames of one job up to and including its
// final frame (job_done or job_failed), skipping other frames.
func (h *fakeHub) jobFrames(jobID string) []recvFrame {
	h.t.Helper()
	var out []recvFrame
	for {
		rf := h.waitFor(func(rf recvFrame) bool { return rf.f.JobID == jobID }, "frame of job "+jobID)
		out = append(out, rf)
		if rf.f.Type == messages.TypeJobDone || rf.f.Type == messages.TypeJobFailed {
			return out
		}
	}
}

// mark is the arrival index the next frame will get.
func (h *fakeHub) mark() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.frames)
}

// heartbeatAfter waits for a heartbeat that arrived at or after mark.
func (h *fakeHub) heartbeatAfter(mark int) messages.Frame {
	h.t.Helper()
	return h.waitFor(func(rf recvFrame) bool { return rf.n >= mark && rf.f.Type == messages.TypeHeartbeat }, "heartbeat").f
}

// all returns a copy of every frame received so far.
func (h *fakeHub) all() []recvFrame {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]recvFrame(nil), h.frames...)
}

func (h *fakeHub) connCount() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.conns)
}

func (h *fakeHub) describe() string {
	var b strings.Builder
	all := h.all()
	if len(all) > 20 {
		fmt.Fprintf(&b, "\n  … %d earlier frames", len(all)-20)
		all = all[len(all)-20:]
	}
	for _, rf := range all {
		b.WriteString("\n  ")
		enc, _ := rf.f.Encode()
		b.Write(enc)
	}
	return b.String()
}
