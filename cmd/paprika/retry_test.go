package main

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/client"
)

// retry is the fake hub's POST /jobs/{id}/retry: a failed job is queued
// again with room for one more attempt; anything else is 409 not_failed.
func (h *fakeHub) retry(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	defer h.mu.Unlock()
	j, ok := h.job(w, r)
	if !ok {
		return
	}
	if j.Status != client.StatusFailed {
		replyError(w, http.StatusConflict, "not_failed", "job "+j.ID+" is "+string(j.Status)+", not failed")
		return
	}
	j.Status, j.Reason, j.Error = client.StatusQueued, "", ""
	j.MaxAttempts = max(j.MaxAttempts, j.Attempts+1)
	reply(w, http.StatusOK, j)
}

func TestJobsRetry(t *testing.T) {
	t.Parallel()
	h, srv := setup(t)
	seedJobs(h)
	h.addJob(client.Job{ID: "j3", Mode: "noop", Status: client.StatusFailed, Reason: client.ReasonJobError,
		Attempts: 2, MaxAttempts: 2, CreatedAt: testNow.Add(-time.Minute),
		AttemptsLog: []client.Attempt{{Attempt: 1, WorkerID: "w1", Status: client.StatusFailed, Reason: client.ReasonJobError, Error: "boom"}}})
	env := map[string]string{envHub: srv.URL}

	r := runCLI(t, env, "jobs", "get", "j3")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "ATTEMPT 1  failed (job_error) on w1: boom\n")

	r = runCLI(t, env, "jobs", "retry", "j3", "j1")
	require.Equal(t, exitFail, r.code)
	require.Equal(t, "job j3 queued again (attempt 3 of 3)\n", r.stdout)
	require.Equal(t, "paprika jobs retry: POST /jobs/j1/retry: 409 not_failed: job j1 is succeeded, not failed\n", r.stderr)

	r = runCLI(t, env, "jobs", "retry")
	require.Equal(t, exitUsage, r.code)
}
