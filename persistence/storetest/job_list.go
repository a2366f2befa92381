package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/persistence"
)

var jobListTests = []jobTest{
	{"ListEmpty", testListEmpty},
	{"ListNewestFirst", testListNewestFirst},
	{"ListOldestFirst", testListOldestFirst},
	{"ListSameCreatedAt", testListSameCreatedAt},
	{"ListCursorStableNewestFirst", testListStableNewestFirst},
	{"ListCursorStableOldestFirst", testListStableOldestFirst},
	{"ListStatusFilter", testListStatusFilter},
	{"ListLimit", testListLimit},
	{"ListBadCursor", testListBadCursor},
	{"ListFilters", testListFilters},
}

// createAt stores n jobs created one millisecond apart from base, in that
// order, and returns them.
func createAt(t *testing.T, s persistence.JobStore, base time.Time, n int) []persistence.Job {
	t.Helper()
	jobs := make([]persistence.Job, n)
	for i := range n {
		j := newJob(i)
		j.CreatedAt = base.Add(time.Duration(i) * time.Millisecond)
		jobs[i] = mustCreate(t, s, j)
	}
	return jobs
}

// listAll reads every page of q, calling between after each page but the
// last, and fails on a runaway cursor.
func listAll(t *testing.T, s persistence.JobStore, q persistence.ListQuery, between func(page int)) []persistence.Job {
	t.Helper()
	var all []persistence.Job
	for page := 0; ; page++ {
		require.Less(t, page, 10_000, "cursor never ends")
		jobs, next, err := s.List(t.Context(), q)
		require.NoError(t, err)
		if q.Limit > 0 {
			require.LessOrEqual(t, len(jobs), q.Limit)
		}
		all = append(all, jobs...)
		if next == "" {
			return all
		}
		require.NotEmpty(t, jobs, "a page with a next cursor must not be empty")
		if between != nil {
			between(page)
		}
		q.Cursor = next
	}
}

func ids(jobs []persistence.Job) []string {
	out := make([]string, len(jobs))
	for i, j := range jobs {
		out[i] = j.ID
	}
	return out
}

func reversed(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[len(s)-1-i] = v
	}
	return out
}

// requireOrdered checks jobs are in created_at order (descending unless
// oldestFirst) and that no id repeats.
func requireOrdered(t *testing.T, jobs []persistence.Job, oldestFirst bool) {
	t.Helper()
	seen := make(map[string]bool, len(jobs))
	for i, j := range jobs {
		require.False(t, seen[j.ID], "job %s listed twice", j.ID)
		seen[j.ID] = true
		if i == 0 {
			continue
		}
		prev := jobs[i-1].CreatedAt
		if oldestFirst {
			require.False(t, j.CreatedAt.Before(prev), "job %d out of order", i)
		} else {
			require.False(t, j.CreatedAt.After(prev), "job %d out of order", i)
		}
	}
}

func testListEmpty(t *testing.T, s persistence.JobStore) {
	for _, oldest := range []bool{false, true} {
		jobs, next, err := s.List(t.Context(), persistence.ListQuery{OldestFirst: oldest})
		require.NoError(t, err)
		require.Empty(t, jobs)
		require.Empty(t, next)
	}
}

func testListNewestFirst(t *testing.T, s persistence.JobStore) {
	created := createAt(t, s, time.Now().Add(-time.Hour).Truncate(time.Millisecond), 7)
	pages := 0
	got := listAll(t, s, persistence.ListQuery{Limit: 3}, func(int) { pages++ })
	require.Equal(t, 2, pages, "7 jobs by 3 make 3 pages")
	require.Equal(t, reversed(ids(created)), ids(got))
	for i, j := range got {
		requireJob(t, created[len(created)-1-i], j)
	}

	// A limit that divides the count exactly ends with next == "" on the
	// last full page or one empty page; either way nothing repeats.
	got = listAll(t, s, persistence.ListQuery{Limit: 7}, nil)
	require.Equal(t, reversed(ids(created)), ids(got))
}

func testListOldestFirst(t *testing.T, s persistence.JobStore) {
	created := createAt(t, s, time.Now().Add(-time.Hour).Truncate(time.Millisecond), 7)
	got := listAll(t, s, persistence.ListQuery{Limit: 2, OldestFirst: true}, nil)
	require.Equal(t, ids(created), ids(got))
}

func testListSameCreatedAt(t *testing.T, s persistence.JobStore) {
	at := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
	want := make(map[string]bool)
	for i := range 9 {
		j := newJob(i)
		j.CreatedAt = at
		want[mustCreate(t, s, j).ID] = true
	}
	for _, oldest := range []bool{false, true} {
		got := listAll(t, s, persistence.ListQuery{Limit: 2, OldestFirst: oldest}, nil)
		requireOrdered(t, got, oldest)
		require.Len(t, got, len(want), "ties on created_at must neither repeat nor vanish")
		for _, j := range got {
			require.True(t, want[j.ID])
		}
	}
}

// testListStableNewestFirst creates jobs between page reads: newer ones
// (which an offset cursor would count, repeating jobs) and older ones
// (which belong after the cursor). Every original job must appear once.
func testListStableNewestFirst(t *testing.T, s persistence.JobStore) {
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	created := createAt(t, s, base, 10)
	extra := 0
	got := listAll(t, s, persistence.ListQuery{Limit: 3}, func(page int) {
		for k := range 4 {
			j := newJob(100 + extra)
			extra++
			if k == 3 {
				j.CreatedAt = base.Add(-time.Duration(extra) * time.Minute) // older than all
			} // else: created now, newer than all
			mustCreate(t, s, j)
		}
	})
	requireOrdered(t, got, false)
	requireContainsOnce(t, got, created)
}

func testListStableOldestFirst(t *testing.T, s persistence.JobStore) {
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	created := createAt(t, s, base, 10)
	extra := 0
	got := listAll(t, s, persistence.ListQuery{Limit: 3, OldestFirst: true}, func(page int) {
		for k := range 4 {
			j := newJob(100 + extra)
			extra++
			if k < 3 {
				j.CreatedAt = base.Add(-time.Duration(extra) * time.Minute) // older than all
			} // else: created now, newer than all
			mustCreate(t, s, j)
		}
	})
	requireOrdered(t, got, true)
	requireContainsOnce(t, got, created)
}

// requireContainsOnce checks every job of want appears in got exactly once.
func requireContainsOnce(t *testing.T, got, want []persistence.Job) {
	t.Helper()
	count := make(map[string]int)
	for _, j := range got {
		count[j.ID]++
	}
	for _, j := range want {
		require.Equal(t, 1, count[j.ID], "job %s listed %d times", j.ID, count[j.ID])
	}
}

func testListStatusFilter(t *testing.T, s persistence.JobStore) {
	ctx := t.Context()
	created := createAt(t, s, time.Now().Add(-time.Hour).Truncate(time.Millisecond), 6)
	for _, i := range []int{1, 3, 4} {
		_, err := s.Claim(ctx, created[i].ID, "w1", time.Now())
		require.NoError(t, err)
	}
	_, err := s.Finish(ctx, created[3].ID, 1, persistence.Finish{Status: persistence.StatusSucceeded})
	require.NoError(t, err)

	cases := map[persistence.Status][]int{
		persistence.StatusQueued:    {5, 2, 0},
		persistence.StatusRunning:   {4, 1},
		persistence.StatusSucceeded: {3},
		persistence.StatusFailed:    nil,
	}
	for status, want := range cases {
		for _, limit := range []int{1, 2, 0} {
			got := listAll(t, s, persistence.ListQuery{Status: status, Limit: limit}, nil)
			wantIDs := make([]string, len(want))
			for k, i := range want {
				wantIDs[k] = created[i].ID
			}
			require.Equal(t, wantIDs, ids(got), "status %s limit %d", status, limit)
			for _, j := range got {
				require.Equal(t, status, j.Status)
			}
			got = listAll(t, s, persistence.ListQuery{Status: status, Limit: limit, OldestFirst: true}, nil)
			require.Equal(t, reversed(wantIDs), ids(got), "status %s limit %d oldest first", status, limit)
		}
	}
}

func testListLimit(t *testing.T, s persistence.JobStore) {
	ctx := t.Context()
	created := createAt(t, s, time.Now().Add(-time.Hour).Truncate(time.Millisecond), 55)

	jobs, next, err := s.List(ctx, persistence.ListQuery{})
	require.NoError(t, err)
	require.Len(t, jobs, 50, "limit 0 means 50")
	require.NotEmpty(t, next)
	rest, next, err := s.List(ctx, persistence.ListQuery{Cursor: next})
	require.NoError(t, err)
	require.Len(t, rest, 5)
	require.Empty(t, next)

	jobs, next, err = s.List(ctx, persistence.ListQuery{Limit: 1})
	require.NoError(t, err)
	require.Len(t, jobs, 1)
	require.Equal(t, created[54].ID, jobs[0].ID)
	require.NotEmpty(t, next)

	jobs, next, err = s.List(ctx, persistence.ListQuery{Limit: 1000})
	require.NoError(t, err)
	require.Len(t, jobs, 55)
	require.Empty(t, next)

	for _, bad := range []int{-1, 1001} {
		_, _, err = s.List(ctx, persistence.ListQuery{Limit: bad})
		require.Error(t, err, fmt.Sprintf("limit %d", bad))
	}
}

func testListBadCursor(t *testing.T, s persistence.JobStore) {
	createAt(t, s, time.Now().Add(-time.Hour), 2)
	_, _, err := s.List(t.Context(), persistence.ListQuery{Cursor: "%%% not a cursor"})
	require.ErrorIs(t, err, persistence.ErrBadCursor, "the API answers 400 for it, not 500")
}
