package e2e

import (
	"context"
	"encoding/json"
	"net/http"
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

// TestTenantQuotasSurviveHubKill: a tenant's max_running and max_queued
// hold across a hub kill -9 on MariaDB: the restarted hub's scheduler
// counts the tenant's running and queued jobs from the store before it
// places anything, so it never runs two of its jobs at once, and a submit
// past the queue quota is still refused once its load is read.
func TestTenantQuotasSurviveHubKill(t *testing.T) {
	f := newFleetWith(t, 1, func(env []string) []string {
		return append(env, "PAPRIKA_SCHEDULER_TENANT_QUOTAS=acme=running:1/queued:2")
	})
	f.startWorkers(1, 4)
	c := f.client()
	ctx := context.Background()
	// Each job runs 10 s: the first still runs when the restarted hub is
	// asked, so two are queued then.
	acme := func() (client.Job, error) {
		// timeout_s counts from the submit and the three run one after
		// the other: leave room for a loaded machine's gaps between them.
		return c.Submit(ctx, client.SubmitRequest{Mode: client.ModeNoop, Tenant: "acme", TimeoutS: 120, Params: map[string]any{"sleep_ms": 10000}}, "")
	}
	var ids []string
	for i := range 3 {
		if i > 0 {
			// The API counts a tenant's queue from a load read at most a
			// second old plus its own submits since: wait out a read, so
			// the running job is not counted as queued too.
			time.Sleep(1200 * time.Millisecond)
		}
		j, err := acme()
		require.NoError(t, err, "acme job %d: one running and two queued are within the quotas", i+1)
		ids = append(ids, j.ID)
	}
	require.Eventually(t, func() bool {
		j, err := c.Get(ctx, ids[0])
		return err == nil && j.Status == client.StatusRunning
	}, 10*time.Second, 20*time.Millisecond, "the first acme job runs")

	f.hubs[0].kill()
	time.Sleep(500 * time.Millisecond)
	f.startHub(0)

	// Once the restarted hub's scheduler has counted the store (its load
	// shows the two queued jobs again), a third queued job is refused.
	require.Eventually(t, func() bool {
		st, b := httpDo(t, "GET", f.urls[0]+"/pressure", "")
		var p struct {
			Queued int `json:"queued"`
		}
		return st == http.StatusOK && json.Unmarshal(b, &p) == nil && p.Queued >= 2
	}, 20*time.Second, 100*time.Millisecond, "the restarted hub's scheduler counts the queued acme jobs")
	time.Sleep(1200 * time.Millisecond) // a load read after the count
	_, err := acme()
	e, ok := client.AsAPIError(err)
	require.True(t, ok, "the restarted hub refuses acme past its queue quota: %v", err)
	require.Equal(t, "tenant_quota", e.Code)

	var jobs []client.Job
	for _, id := range ids {
		jobs = append(jobs, waitFinal(t, c, id, 90*time.Second))
	}
	// Never two acme jobs at once, before or after the kill (the final
	// attempt of each: a job the hub lost may have run again).
	for i, a := range jobs {
		require.Equal(t, client.StatusSucceeded, a.Status, "job %s: %s", a.ID, a.Error)
		for _, b := range jobs[i+1:] {
			overlap := a.StartedAt.Before(b.FinishedAt) && b.StartedAt.Before(a.FinishedAt)
			require.False(t, overlap, "acme jobs %s [%s, %s] and %s [%s, %s] ran at once",
				a.ID, a.StartedAt, a.FinishedAt, b.ID, b.StartedAt, b.FinishedAt)
		}
	}
}
