package persistence_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/persistence"
	"github.com/paprika-hub/paprika/persistence/memory"
)

// countingLister counts the List calls and remembers each call's deadline.
type countingLister struct {
	persistence.JobLister
	calls     int
	deadlines []time.Time
	failAt    int // the call (from 1) that fails; 0 never
}

func (c *countingLister) List(ctx context.Context, q persistence.ListQuery) ([]persistence.Job, string, error) {
	c.calls++
	d, _ := ctx.Deadline()
	c.deadlines = append(c.deadlines, d)
	if c.calls == c.failAt {
		return nil, "", persistence.ErrUnavailable
	}
	return c.JobLister.List(ctx, q)
}

// storeWith holds n queued jobs; ids lists them oldest first.
func storeWith(t *testing.T, n int) (*memory.JobStore, []string) {
	t.Helper()
	s := memory.NewJobStore()
	t.Cleanup(func() { _ = s.Close() })
	var ids []string
	base := time.Now().Add(-time.Hour)
	for i := range n {
		j, _, err := s.Create(context.Background(), persistence.Job{Mode: "noop", CreatedAt: base.Add(time.Duration(i) * time.Second)})
		require.NoError(t, err)
		ids = append(ids, j.ID)
	}
	return s, ids
}

func collect(t *testing.T, seq func(func(persistence.Job, error) bool)) ([]string, error) {
	t.Helper()
	var ids []string
	for j, err := range seq {
		if err != nil {
			return ids, err
		}
		ids = append(ids, j.ID)
	}
	return ids, nil
}

func TestAllJobsPagesByCursor(t *testing.T) {
	t.Parallel()
	s, ids := storeWith(t, 7)
	l := &countingLister{JobLister: s}
	got, err := collect(t, persistence.AllJobs(context.Background(), l, persistence.ListQuery{Limit: 3, OldestFirst: true}))
	require.NoError(t, err)
	require.Equal(t, ids, got, "every job once, in order, across pages")
	require.Equal(t, 3, l.calls, "3+3+1")
	for _, d := range l.deadlines {
		require.True(t, d.IsZero(), "no page timeout unless asked")
	}

	// Newest first and a status filter pass through.
	_, err = s.Claim(context.Background(), ids[2], "w1", time.Time{})
	require.NoError(t, err)
	got, err = collect(t, persistence.AllJobs(context.Background(), s, persistence.ListQuery{Status: persistence.StatusQueued, Limit: 2}))
	require.NoError(t, err)
	require.Equal(t, []string{ids[6], ids[5], ids[4], ids[3], ids[1], ids[0]}, got)

	empty, _ := storeWith(t, 0)
	got, err = collect(t, persistence.AllJobs(context.Background(), empty, persistence.ListQuery{}))
	require.NoError(t, err)
	require.Empty(t, got)
}

func TestAllJobsStopsOnError(t *testing.T) {
	t.Parallel()
	s, ids := storeWith(t, 5)
	l := &countingLister{JobLister: s, failAt: 2}
	var errs int
	var got []string
	for j, err := range persistence.AllJobs(context.Background(), l, persistence.ListQuery{Limit: 2, OldestFirst: true}) {
		if err != nil {
			errs++
			require.ErrorIs(t, err, persistence.ErrUnavailable)
			require.Empty(t, j.ID)
			continue // the walk ends by itself after the error
		}
		got = append(got, j.ID)
	}
	require.Equal(t, 1, errs, "the error is yielded once")
	require.Equal(t, ids[:2], got, "the page before the error is delivered")
	require.Equal(t, 2, l.calls, "no page is read after the error")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := collect(t, persistence.AllJobs(ctx, s, persistence.ListQuery{}))
	require.ErrorIs(t, err, context.Canceled, "an ended ctx is the first page's error")
}

func TestAllJobsBreakReadsNoFurther(t *testing.T) {
	t.Parallel()
	s, ids := storeWith(t, 6)
	l := &countingLister{JobLister: s}
	var got []string
	for j, err := range persistence.AllJobs(context.Background(), l, persistence.ListQuery{Limit: 2, OldestFirst: true}) {
		require.NoError(t, err)
		got = append(got, j.ID)
		if len(got) == 3 {
			break
		}
	}
	require.Equal(t, ids[:3], got)
	require.Equal(t, 2, l.calls, "the third page is never read")
}

func TestAllJobsBounds(t *testing.T) {
	t.Parallel()
	s, ids := storeWith(t, 7)
	l := &countingLister{JobLister: s}
	start := time.Now()
	got, err := collect(t, persistence.AllJobs(context.Background(), l, persistence.ListQuery{Limit: 2, OldestFirst: true},
		persistence.MaxPages(2), persistence.PageTimeout(time.Minute)))
	require.NoError(t, err, "the page bound ends the walk quietly")
	require.Equal(t, ids[:4], got)
	require.Equal(t, 2, l.calls)
	for _, d := range l.deadlines {
		require.WithinDuration(t, start.Add(time.Minute), d, 10*time.Second, "each page gets its own deadline")
	}

	// A page timeout that expires fails that page, not the caller's ctx.
	slow := &slowLister{JobLister: s}
	_, err = collect(t, persistence.AllJobs(context.Background(), slow, persistence.ListQuery{}, persistence.PageTimeout(time.Millisecond)))
	require.ErrorIs(t, err, context.DeadlineExceeded)

	// Non-positive bounds mean none.
	got, err = collect(t, persistence.AllJobs(context.Background(), s, persistence.ListQuery{Limit: 1},
		persistence.MaxPages(0), persistence.PageTimeout(-1)))
	require.NoError(t, err)
	require.Len(t, got, len(ids))
}

// slowLister answers only when ctx ends.
type slowLister struct{ persistence.JobLister }

func (slowLister) List(ctx context.Context, _ persistence.ListQuery) ([]persistence.Job, string, error) {
	<-ctx.Done()
	return nil, "", errors.Join(persistence.ErrUnavailable, ctx.Err())
}
