package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/client"
)

func TestSubmitPrintsIDAndSendsTypedParams(t *testing.T) {
	t.Parallel()
	h, srv := setup(t)
	steps := filepath.Join(t.TempDir(), "steps.json")
	require.NoError(t, os.WriteFile(steps, []byte(`[{"op": "navigate", "url": "https://example.com"}]`+"\n"), 0o600))

	r := runCLI(t, nil, "submit", "--hub", srv.URL, "--mode", "noop",
		"--param", "lines=3", "--param", "url=https://example.com/a?b=c", "--param", "screenshot=false",
		"--param", "steps=@"+steps, "--param", "ratio=0.5", "--param", "name=@@handle",
		"--label", "team=qa", "--label", "env=ci", "--timeout-s", "30", "--max-attempts", "2")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Equal(t, "j1\n", r.stdout)
	require.Empty(t, r.stderr)

	h.mu.Lock()
	defer h.mu.Unlock()
	require.Len(t, h.seen, 1)
	got := h.seen[0]
	require.True(t, strings.HasPrefix(got.key, "pk-"), "Submit generates an idempotency key: %q", got.key)
	require.Empty(t, got.token)
	require.JSONEq(t, `"noop"`, string(got.body["mode"]))
	require.JSONEq(t, `{"lines": 3, "url": "https://example.com/a?b=c", "screenshot": false,
		"steps": [{"op": "navigate", "url": "https://example.com"}], "ratio": 0.5, "name": "@handle"}`, string(got.body["params"]))
	require.JSONEq(t, `{"team": "qa", "env": "ci"}`, string(got.body["labels"]))
	require.JSONEq(t, `30`, string(got.body["timeout_s"]))
	require.JSONEq(t, `2`, string(got.body["max_attempts"]))
}

func TestSubmitLeavesDefaultsToTheHub(t *testing.T) {
	t.Parallel()
	h, srv := setup(t)
	r := runCLI(t, map[string]string{envHub: srv.URL}, "submit", "--mode", "noop")
	require.Equal(t, exitOK, r.code, r.stderr)
	h.mu.Lock()
	defer h.mu.Unlock()
	require.Equal(t, []string{"mode"}, keysOf(h.seen[0].body), "no params, labels, timeout_s or max_attempts sent")
}

func keysOf(m map[string]json.RawMessage) []string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}

func TestSubmitIdempotencyKeyFlag(t *testing.T) {
	t.Parallel()
	h, srv := setup(t)
	for range 2 {
		r := runCLI(t, nil, "submit", "--hub", srv.URL, "--mode", "noop", "--idempotency-key", "nightly-2026-03-04")
		require.Equal(t, exitOK, r.code, r.stderr)
		require.Equal(t, "j1\n", r.stdout, "the same key gives the same job")
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	require.Len(t, h.seen, 2)
	require.Equal(t, "nightly-2026-03-04", h.seen[1].key)
}

func TestSubmitFollowStreamsLogAndSucceeds(t *testing.T) {
	t.Parallel()
	_, srv := setup(t)
	r := runCLI(t, nil, "submit", "--hub", srv.URL, "--mode", "noop", "--param", "lines=3", "--follow")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Equal(t, "j1\nline 1\nline 2\nline 3\n", r.stdout)
	require.Equal(t, "job j1 succeeded in 1.2s\n", r.stderr)
}

func TestSubmitFollowFailedJobExitsOne(t *testing.T) {
	t.Parallel()
	_, srv := setup(t)
	r := runCLI(t, nil, "submit", "--hub", srv.URL, "--mode", "noop", "--param", "fail=true", "--param", "lines=1", "--follow")
	require.Equal(t, exitFail, r.code)
	require.Equal(t, "j1\nline 1\n", r.stdout)
	require.Equal(t, "job j1 failed (job_error): asked to fail\n", r.stderr)
}

func TestSubmitWait(t *testing.T) {
	t.Parallel()
	_, srv := setup(t)
	r := runCLI(t, nil, "submit", "--hub", srv.URL, "--mode", "noop", "--wait")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Equal(t, "j1\n", r.stdout)

	r = runCLI(t, nil, "submit", "--hub", srv.URL, "--mode", "noop", "--param", "fail=true", "--wait")
	require.Equal(t, exitFail, r.code)
	require.Equal(t, "j2\n", r.stdout)
	require.Contains(t, r.stderr, "job j2 failed (job_error): asked to fail")

	// Without --wait a failing job still submits fine.
	r = runCLI(t, nil, "submit", "--hub", srv.URL, "--mode", "noop", "--param", "fail=true")
	require.Equal(t, exitOK, r.code, r.stderr)
}

func TestSubmitJSON(t *testing.T) {
	t.Parallel()
	_, srv := setup(t)
	r := runCLI(t, nil, "submit", "--hub", srv.URL, "--mode", "noop", "--param", "lines=2", "--follow", "--json")
	require.Equal(t, exitOK, r.code, r.stderr)
	var job client.Job
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &job), "stdout holds only the job: %q", r.stdout)
	require.Equal(t, client.StatusSucceeded, job.Status)
	require.JSONEq(t, `{"lines":2}`, string(job.Result))
	require.Equal(t, "line 1\nline 2\njob j1 succeeded in 1.2s\n", r.stderr)
}

func TestSubmitRejectedByHub(t *testing.T) {
	t.Parallel()
	_, srv := setup(t)
	r := runCLI(t, nil, "submit", "--hub", srv.URL, "--mode", "teleport")
	require.Equal(t, exitFail, r.code)
	require.Empty(t, r.stdout)
	require.Equal(t, "paprika submit: POST /jobs: 400 invalid_mode: mode \"teleport\" is not one of noop, fetch, macro\n", r.stderr)
}
