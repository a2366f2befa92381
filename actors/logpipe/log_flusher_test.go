package logpipe

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/actors/supervise"
	"github.com/paprika-hub/paprika/metrics"
	"github.com/paprika-hub/paprika/persistence"
	"github.com/paprika-hub/paprika/persistence/memory"
)

// A tick the flusher did not arm itself (one its earlier incarnation's
// timer sent just before a restart stopped it) writes but does not arm
// another: the flusher keeps one tick chain, not one per restart that
// raced a tick.
func TestFlusherKeepsOneTickChain(t *testing.T) {
	system := actor.NewActorSystem()
	d := &Deps{Logs: memory.NewLogStore(), Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Metrics: metrics.NewMetrics(),
		Timing: Timing{LogBatchLines: 50, LogBatchWait: 10 * time.Millisecond, LogBudgetLines: 1000,
			GrainTimeout: 10 * time.Second, IdlePassivate: time.Minute, DonePassivate: time.Minute, HolderTTL: time.Minute}}
	r, err := Start(system, d, func(p *actor.Props, name string) (*actor.PID, error) {
		return system.Root.SpawnNamed(p, name)
	})
	require.NoError(t, err)
	t.Cleanup(func() { system.Shutdown() })
	live := func() int64 { return supervise.LiveTimersIn(system, "log_flusher") }
	require.Eventually(t, func() bool { return live() == 1 }, 5*time.Second, time.Millisecond, "the flusher arms its tick")

	for i := 0; i < 3; i++ {
		system.Root.Send(r.pid, &toFlusher{msg: &flusherTick{}})
	}
	require.NoError(t, r.Drain(5*time.Second)) // the stray ticks are behind us
	// With a chain per stray tick the count would stay at 4; each chain
	// re-arms at once, so a few samples across several periods tell.
	for i := 0; i < 20; i++ {
		time.Sleep(3 * time.Millisecond)
		require.LessOrEqual(t, live(), int64(1), "a stray tick started a tick chain of its own")
	}
}

func TestCoalesceMergesContiguousBatchesOfAJob(t *testing.T) {
	req := func(job string, from int64, n int, done bool) *flushReq {
		lines := make([]string, n)
		return &flushReq{hasBatch: true, batch: persistence.LogBatch{JobID: job, From: from, Lines: lines, Done: done}}
	}
	out := coalesce([]*flushReq{
		req("a", 0, 50, false), req("b", 0, 3, false), req("a", 50, 0, true), // full batch + done sentinel
		{notify: nil},                               // a notification only
		req("b", 10, 2, false),                      // not contiguous with b's first batch: kept apart
		req("c", 0, 1, true), req("c", 1, 1, false), // after done: never merged
	})
	require.Len(t, out, 5)
	require.Equal(t, "a", out[0].JobID)
	require.Len(t, out[0].Lines, 50)
	require.True(t, out[0].Done)
	require.Equal(t, int64(10), out[2].From)
	require.True(t, out[3].Done)
	require.Equal(t, int64(1), out[4].From)
}
