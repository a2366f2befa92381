package worker

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/paprika-hub/paprika/agent"
	"github.com/paprika-hub/paprika/messages"
)

// feedHub is a hub that keeps a worker's lanes full: every final frame is
// acknowledged and answered with the next assignment, until total jobs
// were assigned. It does as little as a hub can, so the process's CPU is
// mostly the worker's.
type feedHub struct {
	srv      *httptest.Server
	mode     string
	lanes    int
	total    int64
	assigned atomic.Int64
	finished atomic.Int64
	done     chan struct{}
	once     sync.Once
}

func newFeedHub(b *testing.B, mode string, lanes, total int) *feedHub {
	h := &feedHub{mode: mode, lanes: lanes, total: int64(total), done: make(chan struct{})}
	up := websocket.Upgrader{}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer ws.Close()
		send := func(f messages.Frame) {
			data, _ := f.Encode()
			_ = ws.WriteMessage(websocket.TextMessage, data)
		}
		next := func() {
			if n := h.assigned.Add(1); n <= h.total {
				send(messages.Frame{Type: messages.TypeAssignJob, JobID: "j" + strconv.FormatInt(n, 10), Attempt: 1, Mode: h.mode})
			}
		}
		for {
			_, data, err := ws.ReadMessage()
			if err != nil {
				return
			}
			f, err := messages.DecodeFrame(data)
			if err != nil {
				b.Errorf("bad frame: %v", err)
				return
			}
			switch f.Type {
			case messages.TypeHello:
				send(messages.Frame{Type: messages.TypeWelcome, WorkerID: f.WorkerID, HeartbeatIntervalMS: 1000, HubID: "feed"})
				for range h.lanes {
					next()
				}
			case messages.TypeJobDone, messages.TypeJobFailed:
				if f.Type == messages.TypeJobFailed {
					b.Errorf("job %s failed: %s %s", f.JobID, f.Reason, f.Error)
				}
				send(messages.Frame{Type: messages.TypeJobAck, JobID: f.JobID, Attempt: f.Attempt})
				if h.finished.Add(1) == h.total {
					h.once.Do(func() { close(h.done) })
				}
				next()
			}
		}
	}))
	return h
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkDispatch measures what a job costs the worker process with a
// handler that does nothing: the agent running noop on its driver (the
// path before the library), the library's built-in noop handler, and a
// custom no-op handler registered with Handle. 4 lanes kept full.
func BenchmarkDispatch(b *testing.B) {
	const lanes = 4
	quiet := agent.Config{HeartbeatInterval: time.Second}
	for _, v := range []struct {
		name, mode string
		run        func(hub string) (func(context.Context) error, error)
	}{
		{"agent-noop", messages.ModeNoop, func(hub string) (func(context.Context) error, error) {
			cfg := quiet
			cfg.HubURLs, cfg.ID, cfg.Lanes, cfg.Logger = []string{hub}, "bench", lanes, discard
			a, err := agent.New(cfg)
			if err != nil {
				return nil, err
			}
			return a.Run, nil
		}},
		{"builtin-noop", messages.ModeNoop, func(hub string) (func(context.Context) error, error) {
			w, err := New(Options{Hubs: []string{hub}, ID: "bench", Lanes: lanes, Logger: discard, Agent: quiet})
			if err != nil {
				return nil, err
			}
			return w.Run, nil
		}},
		{"custom-noop", "nothing", func(hub string) (func(context.Context) error, error) {
			w, err := New(Options{Hubs: []string{hub}, ID: "bench", Lanes: lanes, Logger: discard, Agent: quiet, NoBuiltins: true})
			if err != nil {
				return nil, err
			}
			w.Handle("nothing", func(context.Context, *Job) (any, error) { return nil, nil })
			return w.Run, nil
		}},
	} {
		b.Run(v.name, func(b *testing.B) {
			h := newFeedHub(b, v.mode, lanes, b.N)
			defer h.srv.Close()
			run, err := v.run(h.srv.URL)
			if err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			stopped := make(chan struct{})
			b.ResetTimer()
			cpu0, t0 := cpuTime(), time.Now()
			go func() { defer close(stopped); _ = run(ctx) }()
			<-h.done
			cpu, wall := cpuTime()-cpu0, time.Since(t0)
			b.StopTimer()
			cancel()
			<-stopped
			b.ReportMetric(float64(b.N)/wall.Seconds(), "jobs/s")
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/job")
		})
	}
}

// discard is a logger that drops everything (the agent logs every job).
var discard = slog.New(slog.DiscardHandler)

// BenchmarkDispatchCall is the library's own share of a job, without the
// link: the agent's call into the driver (agent-noop) against the
// library's dispatch of the built-in noop and of a custom no-op handler
// (a goroutine per job, the panic guard, the result's encoding).
func BenchmarkDispatchCall(b *testing.B) {
	w, err := New(Options{Hubs: []string{"http://127.0.0.1:1"}, Logger: discard})
	if err != nil {
		b.Fatal(err)
	}
	w.Handle("nothing", func(context.Context, *Job) (any, error) { return nil, nil })
	w.started = true // as Run does, without linking
	emit := func(string) error { return nil }
	ctx := context.Background()
	for _, v := range []struct {
		name string
		run  func(agent.Job) (agent.Result, error)
	}{
		{"agent-noop", func(j agent.Job) (agent.Result, error) { return agent.SimulatedDriver{}.Run(ctx, 0, j, emit) }},
		{"builtin-noop", func(j agent.Job) (agent.Result, error) { return w.dispatch(ctx, 0, j, emit) }},
		{"custom-noop", func(j agent.Job) (agent.Result, error) {
			j.Mode = "nothing"
			return w.dispatch(ctx, 0, j, emit)
		}},
	} {
		b.Run(v.name, func(b *testing.B) {
			b.ReportAllocs()
			j := agent.Job{ID: "j", Attempt: 1, Mode: messages.ModeNoop}
			for b.Loop() {
				if _, err := v.run(j); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
