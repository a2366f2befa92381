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
// be stored (and, with several hubs, for a hop across the cluster). The
// slot goes back when the report is read too (JobLaneFreed), so the lane's
// next job is placed while the log is written, and is claimed after the
// first job's finished_at.
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
	require.Equal(t, job.ID, a.JobID)
	l.send(messages.Frame{Type: messages.TypeJobStarted, JobID: job.ID, Attempt: a.Attempt, Lane: "sim://w-stamp/lane/0"})
	next := submit(t, url, `{"mode":"noop"}`) // waits for the one lane
	require.Eventually(t, func() bool { return getJob(t, url, job.ID).Lane != "" }, 5*time.Second, 10*time.Millisecond)

	sent := time.Now()
	l.send(messages.Frame{Type: messages.TypeJobDone, JobID: job.ID, Attempt: a.Attempt, Result: []byte(`{}`)})
	b := l.next(10 * time.Second)
	require.Equal(t, messages.TypeAssignJob, b.Type, "the freed lane's next job comes first, before the end's ack")
	require.Equal(t, next.ID, b.JobID)
	require.Less(t, time.Since(sent), delay/2, "the next job waited for the log's write")
	ack := l.next(10 * time.Second)
	require.Equal(t, messages.TypeJobAck, ack.Type)
	require.Equal(t, job.ID, ack.JobID)
	require.GreaterOrEqual(t, time.Since(sent), delay, "the end was acknowledged before its log was stored")

	j := getJob(t, url, job.ID)
	require.Equal(t, persistence.StatusSucceeded, j.Status)
	require.False(t, j.FinishedAt.Before(sent.Truncate(time.Millisecond)), "finished_at %s is before the report was sent (%s)", j.FinishedAt, sent)
	require.Less(t, j.FinishedAt.Sub(sent), delay/2,
		"finished_at is the grain's time, after the log write, not the report's")
	require.True(t, j.FinishedAt.After(j.StartedAt))
	require.False(t, getJob(t, url, next.ID).StartedAt.Before(j.FinishedAt), "the next job was claimed before the lane's job ended")
}

// A job_done from a worker that does not hold the attempt frees no slot:
// the holder's lane stays taken, so the job waiting for it stays queued,
// until the holder's own report.
func TestLaneFreedOnlyByTheHolder(t *testing.T) {
	h := startTestHub(t, testConfig(t))
	url := h.URL()
	links := map[string]*rawLink{"w-one": dialRawLink(t, url, "w-one", 1), "w-two": dialRawLink(t, url, "w-two", 1)}
	held := map[string]messages.Frame{} // worker → its assignment
	for _, body := range []string{`{"mode":"noop"}`, `{"mode":"noop"}`} {
		submit(t, url, body)
	}
	for id, l := range links {
		a := l.next(5 * time.Second)
		require.Equal(t, messages.TypeAssignJob, a.Type, id)
		l.send(messages.Frame{Type: messages.TypeJobStarted, JobID: a.JobID, Attempt: a.Attempt, Lane: "sim://" + id + "/lane/0"})
		held[id] = a
	}
	for _, a := range held {
		require.Eventually(t, func() bool { return getJob(t, url, a.JobID).Lane != "" }, 5*time.Second, 10*time.Millisecond)
	}
	waiting := submit(t, url, `{"mode":"noop"}`)

	// w-two reports w-one's job done.
	one := held["w-one"]
	links["w-two"].send(messages.Frame{Type: messages.TypeJobDone, JobID: one.JobID, Attempt: one.Attempt, Result: []byte(`{}`)})
	require.Equal(t, messages.TypeJobAck, links["w-two"].next(5*time.Second).Type, "a stale report is acked as decided")
	require.Never(t, func() bool { return getJob(t, url, waiting.ID).Status != persistence.StatusQueued }, 500*time.Millisecond, 20*time.Millisecond,
		"a stranger's job_done freed the holder's slot")
	require.Equal(t, persistence.StatusRunning, getJob(t, url, one.JobID).Status)

	// The holder's own report frees it.
	links["w-one"].send(messages.Frame{Type: messages.TypeJobDone, JobID: one.JobID, Attempt: one.Attempt, Result: []byte(`{}`)})
	for {
		f := links["w-one"].next(5 * time.Second)
		require.NotEqual(t, "", f.Type, "the waiting job never came")
		if f.Type == messages.TypeAssignJob {
			require.Equal(t, waiting.ID, f.JobID)
			break
		}
	}
}
