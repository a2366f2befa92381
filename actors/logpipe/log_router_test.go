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
	"github.com/paprika-hub/paprika/persistence"
	"github.com/paprika-hub/paprika/persistence/memory"
)

// gatedLogs holds every write until the gate opens: the store has not
// got the done sentinel yet.
type gatedLogs struct {
	persistence.LogStore
	gate chan struct{}
}

func (g *gatedLogs) Write(ctx context.Context, batches []persistence.LogBatch) error {
	select {
	case <-g.gate:
	case <-ctx.Done():
		return ctx.Err()
	}
	return g.LogStore.Write(ctx, batches)
}

// TestEndWithoutStream: the end of a job with no stream on the hub, whose
// holder the hub's link noted, stores the done sentinel without a stream;
// a stranger's end is fenced the same way; a late line for the ended job
// wakes a stream that starts done, so the line is refused even before the
// store has the sentinel; an end whose holder is not noted, and one that
// keeps the log open, take a stream, as before.
func TestEndWithoutStream(t *testing.T) {
	system := actor.NewActorSystem()
	logs := &gatedLogs{LogStore: memory.NewLogStore(), gate: make(chan struct{})}
	m := metrics.NewMetrics()
	var holderReads atomic.Int64
	d := &Deps{Logs: logs, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Metrics: m,
		Timing: Timing{LogBatchLines: 50, LogBatchWait: 10 * time.Millisecond, LogBudgetLines: 1000,
			GrainTimeout: 10 * time.Second, IdlePassivate: time.Minute, DonePassivate: time.Minute, HolderTTL: time.Minute},
		Holder: func(context.Context, string) (string, int, error) {
			holderReads.Add(1)
			return "w1", 1, nil
		}}
	r, err := Start(system, d, func(p *actor.Props, name string) (*actor.PID, error) {
		return system.Root.SpawnNamed(p, name)
	})
	require.NoError(t, err)
	ctx := context.Background()

	persisted := make(chan string, 8)
	notify := system.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		if p, ok := c.Message().(*Persisted); ok {
			persisted <- p.Payload.(string)
		}
	}))
	end := func(job, worker string, keepOpen bool) {
		r.Route(system.Root, job, &End{Worker: worker, Attempt: 1, Notify: notify, Payload: job, KeepOpen: keepOpen})
	}
	waitPersisted := func(job string) {
		t.Helper()
		select {
		case got := <-persisted:
			require.Equal(t, job, got)
		case <-time.After(5 * time.Second):
			t.Fatalf("the end of %s was not confirmed", job)
		}
	}

	// A stranger's end: fenced, confirmed (the grain refuses it), no stream.
	r.Assigned("j-other", "w1", 1, "link-a")
	fencedBefore := counterValue(m.FencedReports.WithLabelValues("log"))
	end("j-other", "w2", false)
	waitPersisted("j-other")
	require.Equal(t, fencedBefore+1, counterValue(m.FencedReports.WithLabelValues("log")))

	// The holder's end: no stream; its confirmation waits for the store.
	r.Assigned("j-quiet", "w1", 1, "link-a")
	end("j-quiet", "w1", false)
	require.Never(t, func() bool { return len(persisted) > 0 }, 200*time.Millisecond, 10*time.Millisecond,
		"confirmed before the store took the done sentinel")
	require.Zero(t, counterValue(m.LogStreams), "no stream for a job that ended without a line")

	// Turns the router did not arm (an earlier incarnation's, sent just
	// before a restart) do not age what it remembers: two would have
	// forgotten j-quiet.
	system.Root.Send(r.pid, &endedTurn{})
	system.Root.Send(r.pid, &endedTurn{})

	// A late line for it, while the store still has no sentinel: the stream
	// it wakes starts done and refuses it.
	dupBefore := duplicates(m)
	late, err := r.Stream("j-quiet")
	require.NoError(t, err)
	require.NoError(t, r.Acquire(ctx, 1)) // as a socket reader does
	system.Root.Send(late, &Line{Worker: "w1", Attempt: 1, Seq: 0, Text: "late"})
	require.Eventually(t, func() bool { return duplicates(m) == dupBefore+1 },
		5*time.Second, 10*time.Millisecond, "the late line is refused")
	require.Equal(t, float64(1), counterValue(m.LogStreams))

	close(logs.gate)
	waitPersisted("j-quiet")
	lines, done, err := logs.Read(ctx, "j-quiet", 0, 10)
	require.NoError(t, err)
	require.True(t, done, "the done sentinel is stored")
	require.Empty(t, lines)
	_, done, err = logs.Read(ctx, "j-other", 0, 10)
	require.NoError(t, err)
	require.False(t, done, "a stranger's end leaves the log open")
	require.EqualValues(t, 1, holderReads.Load(), "the noted assignments answered for the ends; the late line's stream asked")

	// No noted assignment: a stream, which asks the store for the holder.
	end("j-unnoted", "w1", false)
	waitPersisted("j-unnoted")
	require.Equal(t, float64(2), counterValue(m.LogStreams))
	require.EqualValues(t, 2, holderReads.Load())

	// An end that keeps the log open for a retry: a stream, which holds it open.
	r.Assigned("j-retry", "w1", 1, "link-a")
	end("j-retry", "w1", true)
	waitPersisted("j-retry")
	require.Equal(t, float64(3), counterValue(m.LogStreams))
	_, done, err = logs.Read(ctx, "j-retry", 0, 10)
	require.NoError(t, err)
	require.False(t, done)
}
