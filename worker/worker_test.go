package worker

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/agent"
	"github.com/paprika-hub/paprika/messages"
)

// startWorker runs w against h until the test ends.
func startWorker(t *testing.T, w *Worker) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			assert.NoError(t, err)
		case <-time.After(waitTimeout):
			t.Error("worker did not stop")
		}
	})
}

func newTestWorker(t *testing.T, h *fakeHub, lanes int) *Worker {
	t.Helper()
	w, err := New(Options{Hubs: []string{h.srv.URL}, ID: "w1", Lanes: lanes, AbandonAfter: 100 * time.Millisecond,
		Agent: agent.Config{StopTimeout: time.Second, FlushTimeout: time.Second}})
	require.NoError(t, err)
	return w
}

func assign(h *fakeHub, id, mode, params string, deadline time.Duration) {
	f := messages.Frame{Type: messages.TypeAssignJob, JobID: id, Attempt: 1, Mode: mode}
	if params != "" {
		f.Params = json.RawMessage(params)
	}
	if deadline > 0 {
		f.Deadline = time.Now().Add(deadline).UnixMilli()
	}
	h.send(f)
}

func TestWorkerHelloDeclaresModes(t *testing.T) {
	h := newFakeHub(t)
	w := newTestWorker(t, h, 2)
	schema := json.RawMessage(`{"type":"object","required":["url"]}`)
	w.Handle("http-check", func(context.Context, *Job) (any, error) { return nil, nil }, Schema(schema))
	startWorker(t, w)
	hello := h.waitFor(messages.TypeHello, "")
	require.NotNil(t, hello.Capabilities)
	assert.Equal(t, []messages.ModeDecl{{Name: messages.ModeNoop}, {Name: "http-check", Schema: schema}}, hello.Capabilities.Modes)
	assert.Equal(t, 2, hello.Capabilities.MaxConcurrent)
}

func TestWorkerResultLogsAndAssets(t *testing.T) {
	h := newFakeHub(t)
	w := newTestWorker(t, h, 1)
	w.Handle("greet", func(ctx context.Context, j *Job) (any, error) {
		var p struct {
			Name string `json:"name"`
		}
		if err := j.Decode(&p); err != nil {
			return nil, err
		}
		j.Log("hello " + p.Name)
		j.Logf("attempt %d", j.Attempt())
		if err := j.Upload("greeting.txt", "text/plain", strings.NewReader("hi "+p.Name)); err != nil {
			return nil, err
		}
		if _, err := j.Lane(); !errors.Is(err, ErrNoLane) {
			return nil, errors.New("a mode without NeedsChromium got a lane")
		}
		return map[string]string{"greeting": "hi " + p.Name, "job": j.ID()}, nil
	})
	startWorker(t, w)
	h.waitFor(messages.TypeHello, "")
	assign(h, "j1", "greet", `{"name":"ada"}`, 0)
	l1 := h.waitFor(messages.TypeJobLog, "j1")
	assert.Equal(t, "hello ada", l1.Line)
	l2 := h.waitFor(messages.TypeJobLog, "j1")
	assert.Equal(t, "attempt 1", l2.Line)
	done := h.waitFinal("j1")
	require.Equal(t, messages.TypeJobDone, done.Type, done.Error)
	assert.JSONEq(t, `{"greeting":"hi ada","job":"j1"}`, string(done.Result))
	assert.Equal(t, []string{"greeting.txt"}, done.Assets)
	assert.Equal(t, "hi ada", string(h.asset("j1/greeting.txt")))
}

func TestWorkerBuiltinNoopThroughHandle(t *testing.T) {
	h := newFakeHub(t)
	w := newTestWorker(t, h, 1)
	startWorker(t, w)
	h.waitFor(messages.TypeHello, "")
	assign(h, "n1", messages.ModeNoop, `{"lines":2}`, 0)
	done := h.waitFinal("n1")
	require.Equal(t, messages.TypeJobDone, done.Type, done.Error)
	assert.JSONEq(t, `{"lines":2}`, string(done.Result))
	assign(h, "n2", messages.ModeNoop, `{"fail":true}`, 0)
	failed := h.waitFinal("n2")
	assert.Equal(t, messages.TypeJobFailed, failed.Type)
	assert.Equal(t, agent.ReasonJobError, failed.Reason)
	assert.False(t, failed.Permanent)
}

func TestWorkerPermanentAndPlainErrors(t *testing.T) {
	h := newFakeHub(t)
	w := newTestWorker(t, h, 1)
	w.Handle("fail", func(_ context.Context, j *Job) (any, error) {
		var p struct {
			Permanent bool `json:"permanent"`
		}
		if err := j.Decode(&p); err != nil {
			return nil, err
		}
		if p.Permanent {
			return nil, Permanent(errors.New("the page is gone for good"))
		}
		return nil, errors.New("flaky upstream")
	})
	startWorker(t, w)
	h.waitFor(messages.TypeHello, "")

	assign(h, "p1", "fail", `{"permanent":true}`, 0)
	f := h.waitFinal("p1")
	assert.Equal(t, messages.TypeJobFailed, f.Type)
	assert.Equal(t, agent.ReasonJobError, f.Reason)
	assert.True(t, f.Permanent)
	assert.Contains(t, f.Error, "the page is gone for good")

	assign(h, "p2", "fail", `{"permanent":false}`, 0)
	f = h.waitFinal("p2")
	assert.Equal(t, agent.ReasonJobError, f.Reason)
	assert.False(t, f.Permanent)
	assert.Contains(t, f.Error, "flaky upstream")

	// Params that do not decode fail for good: another attempt decodes them no better.
	assign(h, "p3", "fail", `{"permanent":"yes"}`, 0)
	f = h.waitFinal("p3")
	assert.Equal(t, agent.ReasonJobError, f.Reason)
	assert.True(t, f.Permanent)
	assert.Contains(t, f.Error, "params of mode fail")
}

func TestWorkerPanicFailsAttemptAndKeepsServing(t *testing.T) {
	h := newFakeHub(t)
	w := newTestWorker(t, h, 1)
	w.Handle("boom", func(context.Context, *Job) (any, error) { panic("kaboom 42") })
	w.Handle("ok", func(context.Context, *Job) (any, error) { return 7, nil })
	startWorker(t, w)
	h.waitFor(messages.TypeHello, "")
	assign(h, "b1", "boom", "", 0)
	f := h.waitFinal("b1")
	assert.Equal(t, messages.TypeJobFailed, f.Type)
	assert.Equal(t, agent.ReasonJobError, f.Reason)
	assert.False(t, f.Permanent)
	assert.Contains(t, f.Error, "handler panic: kaboom 42")
	assign(h, "b2", "ok", "", 0)
	f = h.waitFinal("b2")
	require.Equal(t, messages.TypeJobDone, f.Type, f.Error)
	assert.Equal(t, "7", string(f.Result))
}

func TestWorkerAbandonsHandlerIgnoringDeadline(t *testing.T) {
	h := newFakeHub(t)
	w := newTestWorker(t, h, 1)
	release := make(chan struct{})
	returned := make(chan struct{})
	w.Handle("stubborn", func(context.Context, *Job) (any, error) {
		defer close(returned)
		<-release // ignores its context
		return "late", nil
	})
	w.Handle("ok", func(context.Context, *Job) (any, error) { return "on time", nil })
	startWorker(t, w)
	h.waitFor(messages.TypeHello, "")
	assign(h, "s1", "stubborn", "", 300*time.Millisecond)
	f := h.waitFinal("s1")
	assert.Equal(t, messages.TypeJobFailed, f.Type)
	assert.Equal(t, agent.ReasonDeadlineExceeded, f.Reason)

	// The lane stays taken while the handler runs on: the worker says so
	// and refuses work for it.
	// (A heartbeat sent before the hub's ack of s1 reached the worker
	// still counts s1's report as running too, so wait for the ack's.)
	require.Eventually(t, func() bool {
		hb := h.waitFor(messages.TypeHeartbeat, "")
		return hb.Stats != nil && hb.Stats.InFlight == 1
	}, waitTimeout, 10*time.Millisecond, "the abandoned handler's lane counts as in flight")
	assign(h, "s2", "ok", "", 0)
	rej := h.waitFinal("s2")
	assert.Equal(t, agent.ReasonRejected, rej.Reason)

	close(release)
	<-returned
	// Freed once the handler returned; its late result is never sent.
	require.Eventually(t, func() bool {
		hb := h.waitFor(messages.TypeHeartbeat, "")
		return hb.Stats != nil && hb.Stats.InFlight == 0
	}, waitTimeout, 10*time.Millisecond)
	assign(h, "s3", "ok", "", 0)
	ok := h.waitFinal("s3")
	require.Equal(t, messages.TypeJobDone, ok.Type, ok.Error)
	assert.Equal(t, `"on time"`, string(ok.Result))
	for {
		select {
		case f := <-h.frames:
			assert.NotEqual(t, "s1", f.JobID, "a frame of the abandoned attempt after its failure: %+v", f)
			continue
		default:
		}
		break
	}
}

func TestWorkerCancelAndUnknownMode(t *testing.T) {
	h := newFakeHub(t)
	w := newTestWorker(t, h, 1)
	started := make(chan struct{})
	w.Handle("wait", func(ctx context.Context, j *Job) (any, error) {
		close(started)
		<-ctx.Done()
		return nil, ctx.Err()
	})
	startWorker(t, w)
	h.waitFor(messages.TypeHello, "")
	assign(h, "c1", "wait", "", 0)
	<-started
	h.send(messages.Frame{Type: messages.TypeCancelJob, JobID: "c1", Attempt: 1})
	f := h.waitFinal("c1")
	assert.Equal(t, agent.ReasonCanceled, f.Reason)

	assign(h, "u1", "nobody-serves-this", "", 0)
	f = h.waitFinal("u1")
	assert.Equal(t, agent.ReasonLaneError, f.Reason)
	assert.Contains(t, f.Error, `mode "nobody-serves-this" is not served by this worker`)
}

func TestWorkerRefusesBadRegistrations(t *testing.T) {
	h := newFakeHub(t)
	nop := func(context.Context, *Job) (any, error) { return nil, nil }
	for name, reg := range map[string]func(w *Worker){
		"bad name":        func(w *Worker) { w.Handle("Bad Name", nop) },
		"twice":           func(w *Worker) { w.Handle("x", nop); w.Handle("x", nop) },
		"builtin taken":   func(w *Worker) { w.Handle(messages.ModeNoop, nop) },
		"chromium needed": func(w *Worker) { w.Handle("shot", nop, NeedsChromium()) },
		"schema":          func(w *Worker) { w.Handle("y", nop, Schema(json.RawMessage(`[1]`))) },
		"nil handler":     func(w *Worker) { w.Handle("z", nil) },
	} {
		t.Run(name, func(t *testing.T) {
			w := newTestWorker(t, h, 1)
			reg(w)
			err := w.Run(context.Background()) // returns at once: nothing links
			require.Error(t, err)
		})
	}
	_, err := New(Options{Hubs: []string{h.srv.URL}, Driver: "firefox"})
	require.Error(t, err)
	w, err := New(Options{Hubs: []string{h.srv.URL}, NoBuiltins: true})
	require.NoError(t, err)
	w.Handle(messages.ModeNoop, nop) // NoBuiltins frees the name
	assert.Equal(t, []messages.ModeDecl{{Name: messages.ModeNoop}}, w.Modes())
	require.NoError(t, w.Close())
}
