package storetest

import (
	"encoding/json"
	"fmt"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/messages"
	"github.com/paprika-hub/paprika/persistence"
)

// jobTest is one subtest of RunJobStore; job_list.go and
// job_transitions.go add theirs.
type jobTest = subtest[persistence.JobStore]

// RunJobStore runs the JobStore conformance suite. newStore must return a
// fresh, empty, isolated store and close it in t.Cleanup.
func RunJobStore(t *testing.T, newStore func(t *testing.T) persistence.JobStore) {
	t.Helper()
	tests := []jobTest{
		{"CreateGet", testJobCreateGet},
		{"CreateKeepsIDAndCreatedAt", testJobCreateKeeps},
		{"CreateDuplicateID", testJobCreateDuplicateID},
		{"CreateUniqueIDs", testJobCreateUniqueIDs},
		{"NotFound", testJobNotFound},
		{"IdempotencyKey", testJobIdempotencyKey},
		{"IdempotencyKeyConcurrent", testJobIdempotencyConcurrent},
		{"ReturnsCopies", testJobReturnsCopies},
		{"CloseTwice", testJobCloseTwice},
		{"Priority", testJobPriority},
	}
	tests = append(tests, jobListTests...)
	tests = append(tests, jobTransitionTests...)
	tests = append(tests, jobRetryTests...)
	tests = append(tests, jobTenantTests...)
	runSuite(t, newStore, tests)
}

// newJob returns a job as the hub would submit it; i varies its params.
func newJob(i int) persistence.Job {
	return persistence.Job{
		Mode:        messages.ModeNoop,
		Params:      json.RawMessage(fmt.Sprintf(`{"lines": %d, "sleep_ms": 5}`, i)),
		MaxAttempts: 2,
		TimeoutS:    180,
		Labels:      map[string]string{"team": "qa", "n": fmt.Sprint(i)},
	}
}

// mustCreate stores j and returns what the store made of it.
func mustCreate(t *testing.T, s persistence.JobStore, j persistence.Job) persistence.Job {
	t.Helper()
	stored, created, err := s.Create(t.Context(), j)
	require.NoError(t, err)
	require.True(t, created)
	return stored
}

func mustGet(t *testing.T, s persistence.JobStore, id string) persistence.Job {
	t.Helper()
	j, err := s.Get(t.Context(), id)
	require.NoError(t, err)
	return j
}

func testJobCreateGet(t *testing.T, s persistence.JobStore) {
	before := time.Now()
	in := newJob(1)
	stored, created, err := s.Create(t.Context(), in)
	require.NoError(t, err)
	require.True(t, created)

	require.NotEmpty(t, stored.ID)
	require.Equal(t, url.PathEscape(stored.ID), stored.ID, "id must be URL-safe")
	require.Equal(t, persistence.StatusQueued, stored.Status)
	require.Equal(t, time.UTC, stored.CreatedAt.Location())
	require.WithinRange(t, stored.CreatedAt, before.Add(-time.Second), time.Now().Add(time.Second))
	require.Zero(t, stored.Attempts)
	require.Empty(t, stored.WorkerID)
	require.True(t, stored.StartedAt.IsZero())
	require.True(t, stored.FinishedAt.IsZero())

	want := in
	want.ID, want.Status, want.CreatedAt = stored.ID, persistence.StatusQueued, stored.CreatedAt
	requireJob(t, want, stored)

	got, err := s.Get(t.Context(), stored.ID)
	require.NoError(t, err)
	requireJob(t, want, got)
}

func testJobCreateKeeps(t *testing.T, s persistence.JobStore) {
	at := time.Date(2025, 3, 4, 5, 6, 7, 891_234_567, time.FixedZone("JST", 9*3600))
	in := newJob(2)
	in.ID = "job-given-1"
	in.CreatedAt = at
	stored := mustCreate(t, s, in)
	require.Equal(t, "job-given-1", stored.ID)
	requireTime(t, at, stored.CreatedAt, "created_at")

	got, err := s.Get(t.Context(), "job-given-1")
	require.NoError(t, err)
	requireTime(t, at, got.CreatedAt, "created_at")
	require.Equal(t, persistence.StatusQueued, got.Status)
}

func testJobCreateDuplicateID(t *testing.T, s persistence.JobStore) {
	in := newJob(3)
	in.ID = "dup"
	mustCreate(t, s, in)
	_, _, err := s.Create(t.Context(), in)
	require.ErrorIs(t, err, persistence.ErrConflict)
}

func testJobCreateUniqueIDs(t *testing.T, s persistence.JobStore) {
	const n = 100
	ids := make(chan string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			j, _, err := s.Create(t.Context(), newJob(i))
			if err == nil {
				ids <- j.ID
			}
		})
	}
	wg.Wait()
	close(ids)
	seen := make(map[string]bool)
	for id := range ids {
		require.False(t, seen[id], "id %s given twice", id)
		seen[id] = true
	}
	require.Len(t, seen, n)
}

func testJobNotFound(t *testing.T, s persistence.JobStore) {
	ctx := t.Context()
	_, err := s.Get(ctx, "missing")
	require.ErrorIs(t, err, persistence.ErrNotFound)
	_, err = s.Claim(ctx, "missing", "w1", time.Now())
	require.ErrorIs(t, err, persistence.ErrNotFound)
	require.ErrorIs(t, s.Unclaim(ctx, "missing", "w1", 1), persistence.ErrNotFound)
	require.ErrorIs(t, s.SetLane(ctx, "missing", 1, "lane"), persistence.ErrNotFound)
	require.ErrorIs(t, s.Requeue(ctx, "missing", 1), persistence.ErrNotFound)
	_, err = s.Finish(ctx, "missing", persistence.AnyAttempt,
		persistence.Finish{Status: persistence.StatusCanceled, Reason: persistence.ReasonCanceled})
	require.ErrorIs(t, err, persistence.ErrNotFound)
}

func testJobIdempotencyKey(t *testing.T, s persistence.JobStore) {
	first := newJob(1)
	first.IdempotencyKey = "key-1"
	a := mustCreate(t, s, first)
	require.Equal(t, "key-1", a.IdempotencyKey)

	again := newJob(2) // same key, other params: the first job wins
	again.IdempotencyKey = "key-1"
	b, created, err := s.Create(t.Context(), again)
	require.NoError(t, err)
	require.False(t, created)
	requireJob(t, a, b)

	other := newJob(3)
	other.IdempotencyKey = "key-2"
	c := mustCreate(t, s, other)
	require.NotEqual(t, a.ID, c.ID)

	// The key still answers once the job has moved on.
	_, err = s.Claim(t.Context(), a.ID, "w1", time.Now())
	require.NoError(t, err)
	d, created, err := s.Create(t.Context(), again)
	require.NoError(t, err)
	require.False(t, created)
	require.Equal(t, a.ID, d.ID)
	require.Equal(t, persistence.StatusRunning, d.Status)
}

func testJobIdempotencyConcurrent(t *testing.T, s persistence.JobStore) {
	const n = 16
	type result struct {
		id      string
		created bool
	}
	results, errs := AtOnce(n, func(i int) (result, error) {
		j := newJob(i)
		j.IdempotencyKey = "same-key"
		stored, created, err := s.Create(t.Context(), j)
		return result{stored.ID, created}, err
	})

	var ids []string
	createdCount := 0
	for i, r := range results {
		require.NoError(t, errs[i])
		ids = append(ids, r.id)
		if r.created {
			createdCount++
		}
	}
	require.Equal(t, 1, createdCount, "exactly one Create may create the job")
	for _, id := range ids {
		require.Equal(t, ids[0], id)
	}
	jobs, _, err := s.List(t.Context(), persistence.ListQuery{})
	require.NoError(t, err)
	require.Len(t, jobs, 1)
}

func testJobReturnsCopies(t *testing.T, s persistence.JobStore) {
	stored := mustCreate(t, s, newJob(1))
	stored.Labels["team"] = "changed"
	got, err := s.Get(t.Context(), stored.ID)
	require.NoError(t, err)
	require.Equal(t, "qa", got.Labels["team"])
	got.Labels["team"] = "changed again"
	again, err := s.Get(t.Context(), stored.ID)
	require.NoError(t, err)
	require.Equal(t, "qa", again.Labels["team"])
}

func testJobCloseTwice(t *testing.T, s persistence.JobStore) {
	mustCreate(t, s, newJob(1))
	require.NoError(t, s.Close())
	require.NoError(t, s.Close())
}

// testJobPriority: a job's priority is stored as given (0 too, which is a
// priority, not "unset"), survives a claim and a requeue (a restarted
// scheduler rebuilds its queue from the store), and one out of 0..9 is
// refused. WaitingFor is computed when served and never stored.
func testJobPriority(t *testing.T, s persistence.JobStore) {
	for _, p := range []int{persistence.MinPriority, 3, persistence.DefaultPriority, persistence.MaxPriority} {
		in := newJob(p)
		in.Priority = p
		in.WaitingFor = "a worker with a chromium lane"
		stored := mustCreate(t, s, in)
		require.Equal(t, p, stored.Priority)
		require.Empty(t, stored.WaitingFor)
		got, err := s.Get(t.Context(), stored.ID)
		require.NoError(t, err)
		require.Equal(t, p, got.Priority)
		require.Empty(t, got.WaitingFor)
		claimed, err := s.Claim(t.Context(), stored.ID, "w1", time.Now())
		require.NoError(t, err)
		require.Equal(t, p, claimed.Priority)
		require.NoError(t, s.Requeue(t.Context(), stored.ID, claimed.Attempts))
		page, _, err := s.List(t.Context(), persistence.ListQuery{Status: persistence.StatusQueued, OldestFirst: true, Limit: 1000})
		require.NoError(t, err)
		found := false
		for _, j := range page {
			if j.ID == stored.ID {
				found = true
				require.Equal(t, p, j.Priority)
			}
		}
		require.True(t, found, "requeued job %s listed", stored.ID)
	}
	for _, p := range []int{-1, persistence.MaxPriority + 1} {
		in := newJob(p)
		in.Priority = p
		_, _, err := s.Create(t.Context(), in)
		require.Error(t, err, "priority %d", p)
	}
}
