package main

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/client"
)

// seedJobs puts two jobs into the hub: j1 succeeded, j2 running.
func seedJobs(h *fakeHub) {
	h.addJob(client.Job{
		ID: "j1", Mode: "noop", Status: client.StatusSucceeded, WorkerID: "w50150", Attempts: 1, MaxAttempts: 1,
		CreatedAt: testNow.Add(-10 * time.Minute), StartedAt: testNow.Add(-10 * time.Minute),
		FinishedAt: testNow.Add(-10*time.Minute + 1500*time.Millisecond),
	}, "hello", "world")
	h.addJob(client.Job{
		ID: "j2", Mode: "fetch", Status: client.StatusRunning, WorkerID: "w50151", Attempts: 1, MaxAttempts: 3,
		CreatedAt: testNow.Add(-30 * time.Second), StartedAt: testNow.Add(-20 * time.Second),
	})
}

func TestJobsList(t *testing.T) {
	t.Parallel()
	h, srv := setup(t)
	seedJobs(h)
	env := map[string]string{envHub: srv.URL}

	want := "" +
		"ID  MODE   STATUS     REASON  WORKER  ATTEMPTS  AGE  DURATION\n" +
		"j2  fetch  running    -       w50151  1/3       30s  20s\n" +
		"j1  noop   succeeded  -       w50150  1/1       10m  1.5s\n"
	for _, args := range [][]string{{"jobs"}, {"jobs", "ls"}} {
		r := runCLI(t, env, args...)
		require.Equal(t, exitOK, r.code, r.stderr)
		require.Equal(t, want, r.stdout)
	}

	r := runCLI(t, env, "jobs", "ls", "--status", "running", "--json")
	require.Equal(t, exitOK, r.code, r.stderr)
	var page client.Page
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &page))
	require.Len(t, page.Jobs, 1)
	require.Equal(t, "j2", page.Jobs[0].ID)

	r = runCLI(t, env, "jobs", "ls", "--limit", "1")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Equal(t, "more: paprika jobs ls --cursor cur-j2\n", r.stderr)
}

func TestJobsGet(t *testing.T) {
	t.Parallel()
	h, srv := setup(t)
	seedJobs(h)
	r := runCLI(t, nil, "jobs", "get", "j1", "--hub", srv.URL) // a flag after the ID
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "STATUS    succeeded\n")
	require.Contains(t, r.stdout, "DURATION  1.5s\n")

	r = runCLI(t, nil, "jobs", "get", "nope", "--hub", srv.URL)
	require.Equal(t, exitFail, r.code)
	require.Equal(t, "paprika jobs get: GET /jobs/nope: 404 not_found: no job nope\n", r.stderr)
}

func TestJobsLogs(t *testing.T) {
	t.Parallel()
	h, srv := setup(t)
	seedJobs(h)
	env := map[string]string{envHub: srv.URL}
	for _, args := range [][]string{
		{"jobs", "logs", "j1"},
		{"jobs", "logs", "j1", "-f"},
		{"jobs", "logs", "-f", "j1"},
		{"jobs", "logs", "--follow", "j1"},
	} {
		r := runCLI(t, env, args...)
		require.Equal(t, exitOK, r.code, r.stderr)
		require.Equal(t, "hello\nworld\n", r.stdout, args)
	}
}

func TestJobsCancel(t *testing.T) {
	t.Parallel()
	h, srv := setup(t)
	seedJobs(h)
	env := map[string]string{envHub: srv.URL}

	r := runCLI(t, env, "jobs", "cancel", "j2")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Equal(t, "job j2 canceled\n", r.stdout)

	r = runCLI(t, env, "jobs", "cancel", "j1")
	require.Equal(t, exitFail, r.code)
	require.Equal(t, "paprika jobs cancel: POST /jobs/j1/cancel: 409 job_final: job j1 is already succeeded\n", r.stderr)
}
