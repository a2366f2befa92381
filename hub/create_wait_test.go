package hub

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/persistence"
)

// commitsOf is the embedded job store's commit count.
func commitsOf(t *testing.T, h *Hub) func() int64 {
	c, ok := h.stores.Jobs.(interface{ Commits() int64 })
	require.True(t, ok, "the embedded job store counts its commits")
	return c.Commits
}

// TestSubmitSharesItsClaimsCommit: on the embedded store, a job submitted
// while a lane is free is created and claimed in one commit — its grain
// woke as the create went to the committer, and its claim started the
// commit the create waited for — and its lane and final state share a
// second: two commits per job where there were three.
func TestSubmitSharesItsClaimsCommit(t *testing.T) {
	cfg := testConfig(t)
	require.NoError(t, cfg.Set("jobs.create_commit_wait", "100ms"))
	require.NoError(t, cfg.Set("jobs.finish_commit_wait", "100ms"))
	require.NoError(t, cfg.Set("jobs.group_commit_wait", "0s"))
	h := startTestHub(t, cfg)
	startAgent(t, h.URL(), "wa", 1)
	waitFinal(t, h.URL(), submit(t, h.URL(), `{"mode":"noop"}`).ID, 20*time.Second) // the worker is linked

	commits := commitsOf(t, h)
	const jobs = 5
	before := commits()
	for range jobs {
		j := waitFinal(t, h.URL(), submit(t, h.URL(), `{"mode":"noop"}`).ID, 20*time.Second)
		require.Equal(t, persistence.StatusSucceeded, j.Status, "%s %s", j.Reason, j.Error)
		require.False(t, j.StartedAt.After(j.FinishedAt))
	}
	// A final state read back is committed: every job's writes are in.
	require.LessOrEqual(t, commits()-before, int64(2*jobs+1), "create+claim, then lane+final, per job")
}

// TestBatchItemsDoNotWaitForCompany: the items of POST /jobs:batch are
// created together, in one commit, which does not wait the create wait
// for a claim that no free lane makes: with no worker and a 100 ms wait,
// 50 items that each waited would take 5 s. They are listed in the
// batch's order.
func TestBatchItemsDoNotWaitForCompany(t *testing.T) {
	cfg := testConfig(t)
	require.NoError(t, cfg.Set("jobs.create_commit_wait", "100ms"))
	h := startTestHub(t, cfg)
	commits := commitsOf(t, h)
	var items []string
	for i := range 50 {
		items = append(items, fmt.Sprintf(`{"mode":"noop","labels":{"i":"%d"}}`, i))
	}
	before := commits()
	start := time.Now()
	st, b := do(t, "POST", h.URL()+"/jobs:batch", "["+strings.Join(items, ",")+"]")
	took := time.Since(start)
	require.Equal(t, http.StatusCreated, st, string(b))
	require.Less(t, took, 4*time.Second, fmt.Sprintf("50 items took %s: they waited for company", took))
	require.Equal(t, int64(1), commits()-before, "one commit for the batch")

	listed, _, err := h.stores.Jobs.List(context.Background(), persistence.ListQuery{OldestFirst: true, Limit: 100})
	require.NoError(t, err)
	require.Len(t, listed, 50)
	for i, j := range listed {
		require.Equal(t, fmt.Sprint(i), j.Labels["i"], "listed in the batch's order")
	}
}
