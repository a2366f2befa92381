package logpipe

import (
	"context"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/metrics"
	"github.com/paprika-hub/paprika/persistence/memory"
)

// TestStreamTakesItsHolderFromTheAssignment: a stream whose job this hub's
// link assigned knows the holder without reading the job, and still
// refuses a stranger's lines and end and a stale attempt's lines; a job
// this hub did not assign, an assignment the worker rejected, one of a
// closed link and one older than the TTL are asked of the store.
func TestStreamTakesItsHolderFromTheAssignment(t *testing.T) {
	system := actor.NewActorSystem()
	logs := memory.NewLogStore()
	var reads atomic.Int64
	holders := map[string][2]any{"j-store": {"w-a", 1}, "j-rejected": {"w-b", 1}, "j-closed": {"w-a", 1},
		"j-old": {"w-a", 1}, "j-book": {"w-a", 2}}
	now := time.Now()
	var clock atomic.Int64
	clock.Store(now.UnixNano())
	d := &Deps{Logs: logs, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Metrics: metrics.NewMetrics(),
		Now: func() time.Time { return time.Unix(0, clock.Load()) },
		Holder: func(_ context.Context, id string) (string, int, error) {
			reads.Add(1)
			h := holders[id]
			return h[0].(string), h[1].(int), nil
		},
		Timing: Timing{LogBatchLines: 50, LogBatchWait: 10 * time.Millisecond, LogBudgetLines: 1000,
			GrainTimeout: time.Second, IdlePassivate: time.Minute, HolderTTL: time.Minute}}
	r, err := Start(system, d, func(p *actor.Props, name string) (*actor.PID, error) {
		return system.Root.SpawnNamed(p, name)
	})
	require.NoError(t, err)
	ctx := context.Background()
	end := func(job, worker string, attempt int) {
		got := make(chan struct{}, 1)
		notify := system.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
			if _, ok := c.Message().(*Persisted); ok {
				got <- struct{}{}
			}
		}))
		pid, err := r.Stream(job)
		require.NoError(t, err)
		system.Root.Send(pid, &End{Worker: worker, Attempt: attempt, Notify: notify})
		select {
		case <-got:
		case <-time.After(5 * time.Second):
			t.Fatal("the end was not answered")
		}
	}
	line := func(job, worker string, attempt int, seq int64, text string) {
		pid, err := r.Stream(job)
		require.NoError(t, err)
		require.NoError(t, r.Acquire(ctx, 1)) // as a socket reader does
		system.Root.Send(pid, &Line{Worker: worker, Attempt: attempt, Seq: seq, Text: text})
	}
	fenced := func() int64 { return d.Metrics.Get("paprika_fenced_reports_total", "kind=log") }

	// Attempt 2 went to w-a through link L1; the store is never read.
	r.Assigned("j-book", "w-a", 2, "L1")
	line("j-book", "w-b", 2, 0, "stranger")
	line("j-book", "w-a", 1, 0, "stale")
	line("j-book", "w-a", 2, 0, "honest")
	end("j-book", "w-b", 2) // the stranger's end leaves the log open
	end("j-book", "w-a", 2)
	lines, done, err := logs.Read(ctx, "j-book", 0, 10)
	require.NoError(t, err)
	require.True(t, done)
	require.Equal(t, []string{"honest"}, lines)
	require.EqualValues(t, 3, fenced(), "the stranger's line and end and the stale line are refused")
	require.Zero(t, reads.Load(), "the holder came from the assignment")

	// No assignment here: the store answers.
	end("j-store", "w-a", 1)
	require.EqualValues(t, 1, reads.Load())

	// Rejected, closed, too old: each is asked of the store.
	r.Assigned("j-rejected", "w-a", 1, "L1")
	r.Rejected("j-rejected", 1, "L1")
	end("j-rejected", "w-a", 1) // the store says w-b holds it
	require.EqualValues(t, 2, reads.Load())
	require.EqualValues(t, 4, fenced())
	r.Assigned("j-closed", "w-a", 1, "L2")
	r.LinkClosed("L2")
	end("j-closed", "w-a", 1)
	require.EqualValues(t, 3, reads.Load())
	r.Assigned("j-old", "w-a", 1, "L1")
	clock.Add(int64(2 * time.Minute))
	end("j-old", "w-a", 1)
	require.EqualValues(t, 4, reads.Load())
	require.EqualValues(t, 4, fenced(), "honest ends from the store's holder pass")
}
