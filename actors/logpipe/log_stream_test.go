package logpipe

import (
	"context"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/metrics"
	"github.com/paprika-hub/paprika/persistence"
	"github.com/paprika-hub/paprika/persistence/memory"
)

// countingLogs counts how often a stream reads the log's length.
type countingLogs struct {
	persistence.LogStore
	lens atomic.Int64
}

func (c *countingLogs) Len(ctx context.Context, id string) (int64, error) {
	c.lens.Add(1)
	return c.LogStore.Len(ctx, id)
}

// TestStreamWithoutLinesReadsNoPosition: a job that ends without a line
// stores its done sentinel without reading where the log is; a job with
// lines reads it once, before its first line, and resumes after lines
// another hub stored.
func TestStreamWithoutLinesReadsNoPosition(t *testing.T) {
	system := actor.NewActorSystem()
	logs := &countingLogs{LogStore: memory.NewLogStore()}
	d := &Deps{Logs: logs, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Metrics: metrics.NewMetrics(),
		Timing: Timing{LogBatchLines: 50, LogBatchWait: 10 * time.Millisecond, LogBudgetLines: 1000,
			GrainTimeout: time.Second, IdlePassivate: time.Minute}}
	r, err := Start(system, d, func(p *actor.Props, name string) (*actor.PID, error) {
		return system.Root.SpawnNamed(p, name)
	})
	require.NoError(t, err)
	ctx := context.Background()

	end := func(job string) {
		got := make(chan struct{}, 1)
		notify := system.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
			if _, ok := c.Message().(*Persisted); ok {
				got <- struct{}{}
			}
		}))
		pid, err := r.Stream(job)
		require.NoError(t, err)
		system.Root.Send(pid, &End{Attempt: 1, Notify: notify})
		select {
		case <-got:
		case <-time.After(5 * time.Second):
			t.Fatal("the end was not persisted")
		}
	}

	end("j-quiet")
	_, done, err := logs.Read(ctx, "j-quiet", 0, 10)
	require.NoError(t, err)
	require.True(t, done, "the done sentinel is stored")
	require.Zero(t, logs.lens.Load(), "no position read for a job without lines")

	// Another hub stored two lines of j-talk; this stream goes on after them.
	require.NoError(t, logs.Write(ctx, []persistence.LogBatch{{JobID: "j-talk", From: 0, Lines: []string{"a", "b"}}}))
	pid, err := r.Stream("j-talk")
	require.NoError(t, err)
	system.Root.Send(pid, &Line{Attempt: 1, Seq: 2, Text: "c"})
	end("j-talk")
	lines, done, err := logs.Read(ctx, "j-talk", 0, 10)
	require.NoError(t, err)
	require.True(t, done)
	require.Equal(t, []string{"a", "b", "c"}, lines)
	require.EqualValues(t, 1, logs.lens.Load(), "the position is read once, before the first line")
}

// TestDoneStreamPassivatesSoon: a stream whose done sentinel went out stops
// after DonePassivate, not the idle wait; one still taking lines stays; a
// line that comes after the stream went is refused by the incarnation it
// wakes, which reads from the store that the log is done.
func TestDoneStreamPassivatesSoon(t *testing.T) {
	system := actor.NewActorSystem()
	logs := memory.NewLogStore()
	m := metrics.NewMetrics()
	d := &Deps{Logs: logs, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Metrics: m,
		Timing: Timing{LogBatchLines: 50, LogBatchWait: 10 * time.Millisecond, LogBudgetLines: 1000,
			GrainTimeout: time.Second, IdlePassivate: time.Minute, DonePassivate: 100 * time.Millisecond}}
	r, err := Start(system, d, func(p *actor.Props, name string) (*actor.PID, error) {
		return system.Root.SpawnNamed(p, name)
	})
	require.NoError(t, err)
	ctx := context.Background()

	stopped := make(chan string, 4)
	watch := func(job string) *actor.PID {
		pid, err := r.Stream(job)
		require.NoError(t, err)
		system.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
			switch c.Message().(type) {
			case *actor.Started:
				c.Watch(pid)
			case *actor.Terminated:
				stopped <- job
			}
		}))
		return pid
	}
	done := watch("j-done")
	open := watch("j-open")
	system.Root.Send(done, &Line{Attempt: 1, Seq: 0, Text: "a"})
	system.Root.Send(done, &End{Attempt: 1})
	system.Root.Send(open, &Line{Attempt: 1, Seq: 0, Text: "x"})

	select {
	case job := <-stopped:
		require.Equal(t, "j-done", job, "the finished log's stream goes first")
	case <-time.After(5 * time.Second):
		t.Fatal("the finished log's stream is still up")
	}
	select {
	case job := <-stopped:
		t.Fatalf("%s stopped: an open log's stream waits out the idle time", job)
	case <-time.After(500 * time.Millisecond):
	}

	late, err := r.Stream("j-done") // a new incarnation
	require.NoError(t, err)
	require.NotEqual(t, done.Id, late.Id)
	before := duplicates(m)
	system.Root.Send(late, &Line{Attempt: 1, Seq: 1, Text: "late"})
	require.Eventually(t, func() bool { return duplicates(m) == before+1 },
		5*time.Second, 10*time.Millisecond, "the late line is refused")
	lines, isDone, err := logs.Read(ctx, "j-done", 0, 10)
	require.NoError(t, err)
	require.True(t, isDone)
	require.Equal(t, []string{"a"}, lines)
}

func duplicates(m *metrics.Metrics) float64 { return counterValue(m.LogLinesDuplicate) }

// counterValue reads a counter (-1 when it cannot be read).
func counterValue(c interface{ Write(*dto.Metric) error }) float64 {
	var v dto.Metric
	if c.Write(&v) != nil {
		return -1
	}
	return v.GetCounter().GetValue()
}
