package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/client"
)

func newClient(t testing.TB, url string) *client.Client {
	c, err := client.New([]string{url})
	require.NoError(t, err)
	return c
}

// checkLog asserts a noop job's log: exactly n lines, in order.
func checkLog(t testing.TB, url, id string, n int) {
	t.Helper()
	lines := logsOf(t, url, id)
	require.Len(t, lines, n, "job %s log", id)
	for i, l := range lines {
		require.Equal(t, fmt.Sprintf("noop line %d of %d", i+1, n), l, "job %s line %d", id, i)
	}
}

// TestTwoHundredNoopJobs: one hub, two worker processes, 200 jobs through
// the HTTP API. All succeed, both workers take some, no worker ever runs
// more than its lanes at once, no job runs twice, every log is whole.
func TestTwoHundredNoopJobs(t *testing.T) {
	data := t.TempDir()
	_, url := startHub(t, data, freePort(t))
	execLog := filepath.Join(t.TempDir(), "exec.log")
	const lanes = 4
	startWorker(t, url, "wa", lanes, execLog)
	startWorker(t, url, "wb", lanes, execLog)
	c := newClient(t, url)
	waitWorkers(t, c, 2)

	rng := rand.New(rand.NewPCG(1, 2))
	want := map[string]int{}
	var ids []string
	for i := 0; i < 200; i++ {
		n := rng.IntN(30)
		j, err := c.Submit(context.Background(), client.SubmitRequest{Mode: "noop",
			Params: map[string]any{"lines": n, "interval_ms": rng.IntN(3), "sleep_ms": rng.IntN(20)}}, "")
		require.NoError(t, err)
		want[j.ID] = n
		ids = append(ids, j.ID)
	}
	final := waitAllFinal(t, c, ids, 2*time.Minute)
	perWorker := map[string]int{}
	for id, j := range final {
		require.Equal(t, client.StatusSucceeded, j.Status, "job %s: %s %s", id, j.Reason, j.Error)
		require.Equal(t, 1, j.Attempts)
		require.JSONEq(t, `{"lines":`+strconv.Itoa(want[id])+`}`, string(j.Result))
		perWorker[j.WorkerID]++
		checkLog(t, url, id, want[id])
	}
	require.Len(t, perWorker, 2, "both workers ran jobs: %v", perWorker)
	execs := readExecs(t, execLog)
	seen := map[string]int{}
	for _, e := range execs {
		seen[e.job]++
		require.False(t, e.end.IsZero(), "execution of %s never ended", e.job)
	}
	require.Len(t, seen, 200)
	for id, n := range seen {
		require.Equal(t, 1, n, "job %s ran %d times", id, n)
	}
	for _, w := range []string{"wa", "wb"} {
		require.LessOrEqual(t, maxConcurrent(execs, w), lanes, "worker %s exceeded its lanes", w)
		require.Greater(t, maxConcurrent(execs, w), 1, "worker %s never ran jobs side by side", w)
	}
	t.Logf("per worker: %v", perWorker)
}

// TestDrainWorkerMidRun: a drained worker finishes what it runs and gets
// nothing new; the other worker takes the rest.
func TestDrainWorkerMidRun(t *testing.T) {
	_, url := startHub(t, t.TempDir(), freePort(t))
	execLog := filepath.Join(t.TempDir(), "exec.log")
	startWorker(t, url, "wa", 2, execLog)
	startWorker(t, url, "wb", 2, execLog)
	c := newClient(t, url)
	waitWorkers(t, c, 2)
	ctx := context.Background()
	var ids []string
	for i := 0; i < 4; i++ {
		j, err := c.Submit(ctx, client.SubmitRequest{Mode: "noop", Params: map[string]any{"lines": 3, "sleep_ms": 1500}}, "")
		require.NoError(t, err)
		ids = append(ids, j.ID)
	}
	// wait until wa runs something, then drain it
	require.Eventually(t, func() bool {
		for _, e := range readExecs(t, execLog) {
			if e.worker == "wa" {
				return true
			}
		}
		return false
	}, 10*time.Second, 20*time.Millisecond)
	w, err := c.SetWorkerStatus(ctx, "wa", "drain")
	require.NoError(t, err)
	require.Equal(t, "drain", w.Status)
	for i := 0; i < 8; i++ {
		j, err := c.Submit(ctx, client.SubmitRequest{Mode: "noop", Params: map[string]any{"lines": 2, "sleep_ms": 100}}, "")
		require.NoError(t, err)
		ids = append(ids, j.ID)
	}
	final := waitAllFinal(t, c, ids, time.Minute)
	for id, j := range final {
		require.Equal(t, client.StatusSucceeded, j.Status, "job %s: %s %s", id, j.Reason, j.Error)
	}
	// Jobs placed before the drain may start on wa a moment after it (the
	// assignment was already on the wire); none submitted after may.
	afterDrain := map[string]bool{}
	for _, id := range ids[4:] {
		afterDrain[id] = true
	}
	for _, e := range readExecs(t, execLog) {
		if e.worker == "wa" {
			require.False(t, afterDrain[e.job], "wa started job %s, submitted after it was drained", e.job)
		}
	}
	ws, err := c.Workers(ctx)
	require.NoError(t, err)
	for _, w := range ws {
		if w.ID == "wa" {
			require.Equal(t, "drain", w.Status)
			require.Equal(t, 0, w.InFlight)
		}
	}
}

// TestWorkerKilledMidJob: kill -9 a worker that runs jobs; after the orphan
// grace (3 s here) they end failed/worker_lost, never stuck running.
func TestWorkerKilledMidJob(t *testing.T) {
	_, url := startHub(t, t.TempDir(), freePort(t))
	execLog := filepath.Join(t.TempDir(), "exec.log")
	w := startWorker(t, url, "wk", 3, execLog)
	c := newClient(t, url)
	waitWorkers(t, c, 1)
	ctx := context.Background()
	var ids []string
	for i := 0; i < 3; i++ {
		j, err := c.Submit(ctx, client.SubmitRequest{Mode: "noop", Params: map[string]any{"lines": 2, "sleep_ms": 60000}}, "")
		require.NoError(t, err)
		ids = append(ids, j.ID)
	}
	require.Eventually(t, func() bool { return len(readExecs(t, execLog)) == 3 }, 10*time.Second, 20*time.Millisecond)
	for _, id := range ids {
		j, err := c.Get(ctx, id)
		require.NoError(t, err)
		require.Equal(t, client.StatusRunning, j.Status)
	}
	killedAt := time.Now()
	w.kill()
	final := waitAllFinal(t, c, ids, 30*time.Second)
	for id, j := range final {
		require.Equal(t, client.StatusFailed, j.Status, "job %s", id)
		require.Equal(t, client.ReasonWorkerLost, j.Reason, "job %s", id)
		require.GreaterOrEqual(t, j.FinishedAt.Sub(killedAt), 2*time.Second, "failed before the grace")
		lines := logsOf(t, url, id)
		require.LessOrEqual(t, len(lines), 2)
		require.True(t, len(lines) == 0 || strings.HasPrefix(lines[0], "noop line 1"))
	}
}
