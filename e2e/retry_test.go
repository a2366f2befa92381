package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/client"
)

// TestDelayedJobsSurviveHubKill: delayed jobs and a retry waiting out its
// backoff are in MariaDB only when the hub is killed (-9); the restarted
// hub's scheduler rebuilds its heap from the store and runs each at its
// time, the retry after its backoff.
func TestDelayedJobsSurviveHubKill(t *testing.T) {
	f := newFleet(t, 1)
	f.startWorkers(1, 2)
	c := f.client()
	ctx := context.Background()

	var delayed []client.Job
	for _, d := range []float64{8, 10, 12} {
		j, err := c.Submit(ctx, client.SubmitRequest{Mode: client.ModeNoop, DelayS: &d, Params: map[string]any{"lines": 2}}, "")
		require.NoError(t, err)
		require.Equal(t, client.StatusScheduled, j.Status)
		delayed = append(delayed, j)
	}
	// Fails every attempt: the first at once, the second after a 6 s backoff.
	retry, err := c.Submit(ctx, client.SubmitRequest{Mode: client.ModeNoop, Params: map[string]any{"fail": true},
		MaxAttempts: 2, RetryBackoff: &client.RetryBackoff{BaseS: 6, MaxS: 6}}, "")
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		j, err := c.Get(ctx, retry.ID)
		return err == nil && j.Status == client.StatusScheduled && j.Attempts == 1
	}, 10*time.Second, 20*time.Millisecond, "the failed attempt waits for its retry")

	f.hubs[0].kill()
	time.Sleep(500 * time.Millisecond)
	f.startHub(0)

	for _, d := range delayed {
		j := waitFinal(t, c, d.ID, 40*time.Second)
		require.Equal(t, client.StatusSucceeded, j.Status, "job %s: %s", d.ID, j.Error)
		require.False(t, j.StartedAt.Before(d.RunAt), "job %s started %s, before its run_at %s", d.ID, j.StartedAt, d.RunAt)
		// The restarted hub had the worker back seconds before: placed at
		// once (bounded loosely here, on a shared machine; the hub tests
		// bound it at 100 ms).
		require.Less(t, j.StartedAt.Sub(d.RunAt), time.Second, "job %s placed %s after its run_at", d.ID, j.StartedAt.Sub(d.RunAt))
	}
	r := waitFinal(t, c, retry.ID, 40*time.Second)
	require.Equal(t, client.StatusFailed, r.Status)
	require.Equal(t, client.ReasonJobError, r.Reason)
	require.Equal(t, 2, r.Attempts)
	require.Len(t, r.AttemptsLog, 2)
	wait := r.AttemptsLog[1].QueuedAt.Sub(r.AttemptsLog[0].FinishedAt)
	require.InDelta(t, 6, wait.Seconds(), 0.6+0.01, "the retry waited its backoff across the restart")
	require.Less(t, r.AttemptsLog[1].StartedAt.Sub(r.AttemptsLog[1].QueuedAt), time.Second)
}

// waitFinal polls one job until it is final.
func waitFinal(t *testing.T, c *client.Client, id string, within time.Duration) client.Job {
	t.Helper()
	var j client.Job
	require.Eventually(t, func() bool {
		var err error
		j, err = c.Get(context.Background(), id)
		return err == nil && j.Status.Final()
	}, within, 20*time.Millisecond, "job %s never final (last %s)", id, j.Status)
	return j
}
