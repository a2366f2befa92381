package hub

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/messages"
	"github.com/paprika-hub/paprika/persistence"
)

// slowLogs makes every log write take delay: the done sentinel, which the
// link stores before it reports a job's end, included.
type slowLogs struct {
	persistence.LogStore
	delay time.Duration
}

func (s *slowLogs) Write(ctx context.Context, batches []persistence.LogBatch) error {
	select {
	case <-time.After(s.delay):
	case <-ctx.Done():
		return ctx.Err()
	}
	return s.LogStore.Write(ctx, batches)
}

// A job's finished_at is when its hub read the worker's report, not when
// the job grain got to it: that turn waits for the log's done sentinel to
// be stored (and, with several hubs, for a hop across the cluster), and
// the lane the report freed may be running the next job by then.
func TestFinishedAtIsWhenTheReportCame(t *testing.T) {
	const delay = time.Second
	h, err := New(testConfig(t), testLogger(t))
	require.NoError(t, err)
	slow := &slowLogs{LogStore: h.stores.Logs, delay: delay}
	h.stores.Logs, h.deps.Logs = slow, slow
	require.NoError(t, h.Start(context.Background()))
	t.Cleanup(func() { _ = h.Stop(context.Background()) })
	url := h.URL()

	l := dialRawLink(t, url, "w-stamp", 1)
	job := submit(t, url, `{"mode":"noop"}`)
	a := l.next(5 * time.Second)
	require.Equal(t, messages.TypeAssignJob, a.Type)
	l.send(messages.Frame{Type: messages.TypeJobStarted, JobID: job.ID, Attempt: a.Attempt, Lane: "sim://w-stamp/lane/0"})

	sent := time.Now()
	l.send(messages.Frame{Type: messages.TypeJobDone, JobID: job.ID, Attempt: a.Attempt, Result: []byte(`{}`)})
	var ack messages.Frame
	for ack.Type != messages.TypeJobAck {
		ack = l.next(10 * time.Second)
		require.NotEqual(t, "", ack.Type, "no job_ack came")
	}
	require.GreaterOrEqual(t, time.Since(sent), delay, "the end was acknowledged before its log was stored")

	j := getJob(t, url, job.ID)
	require.Equal(t, persistence.StatusSucceeded, j.Status)
	require.False(t, j.FinishedAt.Before(sent.Truncate(time.Millisecond)), "finished_at %s is before the report was sent (%s)", j.FinishedAt, sent)
	require.Less(t, j.FinishedAt.Sub(sent), delay/2,
		"finished_at is the grain's time, after the log write, not the report's")
	require.True(t, j.FinishedAt.After(j.StartedAt))
}
