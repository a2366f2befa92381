package e2e

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/client"
)

// TestTenantFloodLateTenant: tenant "flood" queues 500 long jobs, then
// tenant "late" submits 20 short ones. With equal weights the scheduler
// alternates between the two while both wait (README, "Tenants, quotas and
// pressure"), so between the first late submission and the last late
// placement at most 20 (w_flood/w_late × 20) flood jobs start, plus the
// lanes freed while the late jobs were still arriving (one per lane at
// most, the submissions being concurrent) — not the ~hundreds a FIFO
// would start. Every job succeeds, and the late tenant is done long
// before the flood drains.
func TestTenantFloodLateTenant(t *testing.T) {
	_, url := startHub(t, t.TempDir(), freePort(t))
	execLog := filepath.Join(t.TempDir(), "exec.log")
	const lanes = 4
	startWorker(t, url, "wa", lanes, execLog)
	startWorker(t, url, "wb", lanes, execLog)
	c := newClient(t, url)
	waitWorkers(t, c, 2)
	ctx := context.Background()

	var flood []string
	for range 500 {
		j, err := c.Submit(ctx, client.SubmitRequest{Mode: "noop", Tenant: "flood", Params: map[string]any{"sleep_ms": 400}}, "")
		require.NoError(t, err)
		flood = append(flood, j.ID)
	}
	lateFrom := time.Now()
	late := make([]string, 20)
	var wg sync.WaitGroup
	errs := make([]error, len(late))
	for i := range late {
		wg.Add(1)
		go func() {
			defer wg.Done()
			j, err := c.Submit(ctx, client.SubmitRequest{Mode: "noop", Tenant: "late", Params: map[string]any{"sleep_ms": 20}}, "")
			late[i], errs[i] = j.ID, err
		}()
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	lateJobs := waitAllFinal(t, c, late, 2*time.Minute)
	var lastLateStart, lastLateEnd time.Time
	for _, j := range lateJobs {
		require.Equal(t, client.StatusSucceeded, j.Status, "late job %s: %s", j.ID, j.Error)
		require.Equal(t, "late", j.Tenant)
		if j.StartedAt.After(lastLateStart) {
			lastLateStart = j.StartedAt
		}
		if j.FinishedAt.After(lastLateEnd) {
			lastLateEnd = j.FinishedAt
		}
	}
	floodJobs := waitAllFinal(t, c, flood, 5*time.Minute)
	waitingAtLate, startedMeanwhile, startedAfter := 0, 0, 0
	var floodDrained time.Time
	for _, j := range floodJobs {
		require.Equal(t, client.StatusSucceeded, j.Status, "flood job %s: %s", j.ID, j.Error)
		require.Equal(t, "flood", j.Tenant)
		if j.StartedAt.Before(lateFrom) {
			continue
		}
		waitingAtLate++
		if j.StartedAt.After(lastLateStart) {
			startedAfter++
		} else {
			startedMeanwhile++
		}
		if j.FinishedAt.After(floodDrained) {
			floodDrained = j.FinishedAt
		}
	}
	bound := 20*1/1 + 2*lanes // weights 1:1, plus the lanes freed while the late jobs arrived
	t.Logf("flood jobs queued when the late tenant came: %d; started before its last job: %d (bound %d); late done %s after its first submit, flood drained %s after",
		waitingAtLate, startedMeanwhile, bound, lastLateEnd.Sub(lateFrom).Round(time.Millisecond), floodDrained.Sub(lateFrom).Round(time.Millisecond))
	require.LessOrEqual(t, startedMeanwhile, bound)
	// Long before the flood drains: all but bound of the flood jobs that
	// were waiting when the late tenant came were still waiting when its
	// last job started (a FIFO would have run every one of them first).
	require.GreaterOrEqual(t, startedAfter, waitingAtLate-bound)
	require.Greater(t, waitingAtLate, 2*bound, "the flood's backlog was there to overtake")
	require.True(t, lastLateEnd.Before(floodDrained))
}
