package storetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/persistence"
)

// RunLogStore runs the LogStore conformance suite. newStore must return a
// fresh, empty, isolated store and release it in t.Cleanup.
func RunLogStore(t *testing.T, newStore func(t *testing.T) persistence.LogStore) {
	t.Helper()
	runSuite(t, newStore, []subtest[persistence.LogStore]{
		{"WriteReadLen", testLogWriteReadLen},
		{"Done", testLogDone},
		{"Subscribe", testLogSubscribe},
		{"SubscribeSeveralJobs", testLogSubscribeSeveralJobs},
		{"Follow", testLogFollow},
		{"CloseEndsChannel", testLogCloseEndsChannel},
		{"ContextEndsSubscription", testLogContextEnds},
	})
}

func lines(from, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("line %d", from+i)
	}
	return out
}

func batch(job string, from, n int) persistence.LogBatch {
	return persistence.LogBatch{JobID: job, From: int64(from), Lines: lines(from, n)}
}

// nextEvent returns the next event of sub, failing t if none comes soon or
// the channel closed.
func nextEvent(t *testing.T, sub persistence.LogSubscription) persistence.LogEvent {
	t.Helper()
	select {
	case ev, ok := <-sub.C():
		require.True(t, ok, "subscription closed")
		return ev
	case <-time.After(waitTimeout):
		t.Fatalf("no event within %s", waitTimeout)
		return persistence.LogEvent{}
	}
}

// requireClosed drains sub until its channel closes.
func requireClosed(t *testing.T, sub persistence.LogSubscription) {
	t.Helper()
	timeout := time.After(waitTimeout)
	for {
		select {
		case _, ok := <-sub.C():
			if !ok {
				return
			}
		case <-timeout:
			t.Fatalf("subscription not closed within %s", waitTimeout)
		}
	}
}

func testLogWriteReadLen(t *testing.T, s persistence.LogStore) {
	ctx := t.Context()
	// Two jobs, three batches, one call.
	require.NoError(t, s.Write(ctx, []persistence.LogBatch{batch("a", 0, 3), batch("b", 0, 1), batch("a", 3, 2)}))

	got, done, err := s.Read(ctx, "a", 0, 0)
	require.NoError(t, err)
	require.False(t, done)
	require.Equal(t, lines(0, 5), got)

	got, _, err = s.Read(ctx, "a", 2, 2)
	require.NoError(t, err)
	require.Equal(t, lines(2, 2), got)
	got, _, err = s.Read(ctx, "a", 4, 10)
	require.NoError(t, err)
	require.Equal(t, lines(4, 1), got)
	for _, from := range []int64{5, 100} {
		got, _, err = s.Read(ctx, "a", from, 0)
		require.NoError(t, err)
		require.Empty(t, got)
	}

	n, err := s.Len(ctx, "a")
	require.NoError(t, err)
	require.EqualValues(t, 5, n)
	n, err = s.Len(ctx, "b")
	require.NoError(t, err)
	require.EqualValues(t, 1, n)

	n, err = s.Len(ctx, "unknown")
	require.NoError(t, err)
	require.Zero(t, n)
	got, done, err = s.Read(ctx, "unknown", 0, 0)
	require.NoError(t, err)
	require.Empty(t, got)
	require.False(t, done)
}

func testLogDone(t *testing.T, s persistence.LogStore) {
	ctx := t.Context()
	require.NoError(t, s.Write(ctx, []persistence.LogBatch{batch("a", 0, 2)}))
	last := batch("a", 2, 1)
	last.Done = true
	require.NoError(t, s.Write(ctx, []persistence.LogBatch{last}))
	got, done, err := s.Read(ctx, "a", 0, 0)
	require.NoError(t, err)
	require.True(t, done)
	require.Equal(t, lines(0, 3), got)
	_, done, err = s.Read(ctx, "a", 3, 0)
	require.NoError(t, err)
	require.True(t, done, "done is reported past the last line too")

	// A done marker with no lines (the job ended silently).
	require.NoError(t, s.Write(ctx, []persistence.LogBatch{{JobID: "quiet", Done: true}}))
	got, done, err = s.Read(ctx, "quiet", 0, 0)
	require.NoError(t, err)
	require.True(t, done)
	require.Empty(t, got)
}

func testLogSubscribe(t *testing.T, s persistence.LogStore) {
	ctx := t.Context()
	require.NoError(t, s.Write(ctx, []persistence.LogBatch{batch("a", 0, 3)}))
	sub, err := s.Subscribe(ctx, "a")
	require.NoError(t, err)
	defer sub.Close()

	require.NoError(t, s.Write(ctx, []persistence.LogBatch{batch("other", 0, 4), batch("a", 3, 2)}))
	ev := nextEvent(t, sub)
	require.Equal(t, "a", ev.JobID)
	require.EqualValues(t, 3, ev.From)
	require.Equal(t, lines(3, 2), ev.Lines)
	require.False(t, ev.Done)

	last := batch("a", 5, 1)
	last.Done = true
	require.NoError(t, s.Write(ctx, []persistence.LogBatch{last}))
	ev = nextEvent(t, sub)
	require.EqualValues(t, 5, ev.From)
	require.Equal(t, lines(5, 1), ev.Lines)
	require.True(t, ev.Done)
}

func testLogSubscribeSeveralJobs(t *testing.T, s persistence.LogStore) {
	ctx := t.Context()
	subA, err := s.Subscribe(ctx, "a")
	require.NoError(t, err)
	defer subA.Close()
	subA2, err := s.Subscribe(ctx, "a")
	require.NoError(t, err)
	defer subA2.Close()
	subB, err := s.Subscribe(ctx, "b")
	require.NoError(t, err)
	defer subB.Close()

	require.NoError(t, s.Write(ctx, []persistence.LogBatch{batch("a", 0, 2), batch("b", 0, 3)}))
	require.NoError(t, s.Write(ctx, []persistence.LogBatch{batch("b", 3, 1)}))
	for _, sub := range []persistence.LogSubscription{subA, subA2} {
		ev := nextEvent(t, sub)
		require.Equal(t, "a", ev.JobID)
		require.Equal(t, lines(0, 2), ev.Lines)
	}
	ev := nextEvent(t, subB)
	require.Equal(t, lines(0, 3), ev.Lines)
	ev = nextEvent(t, subB)
	require.EqualValues(t, 3, ev.From)
	require.Equal(t, lines(3, 1), ev.Lines)

	// subA saw nothing of b: its next event is a's next batch.
	require.NoError(t, s.Write(ctx, []persistence.LogBatch{batch("a", 2, 1)}))
	ev = nextEvent(t, subA)
	require.EqualValues(t, 2, ev.From)
}

// Follow reads jobID's whole log the documented way and returns it once the
// done marker arrives: subscribe, read the backlog, then take events,
// skipping lines already read. A channel that closes before the done marker
// means the store dropped the subscriber: it subscribes again and resumes
// from the stored log. An event that starts past the lines read so far is
// a gap, reported as an error.
func Follow(ctx context.Context, s persistence.LogStore, jobID string) ([]string, error) {
	return Resume(ctx, s, jobID, nil)
}

// Resume is Follow for a follower that already took the lines got (from a
// subscription the store dropped): it reads on from len(got).
func Resume(ctx context.Context, s persistence.LogStore, jobID string, got []string) ([]string, error) {
	for {
		sub, err := s.Subscribe(ctx, jobID)
		if err != nil {
			return got, err
		}
		backlog, done, err := s.Read(ctx, jobID, int64(len(got)), 0)
		if err != nil {
			sub.Close()
			return got, err
		}
		got = append(got, backlog...)
		if !done {
			if got, done, err = Drain(ctx, sub, got); err != nil {
				sub.Close()
				return got, err
			}
		}
		if done {
			return got, sub.Close()
		}
		// Dropped: subscribe again and read on from the stored log.
	}
}

// Drain appends the lines of sub's events to got, skipping those got
// already holds, until the done marker (done true) or until the channel
// closes (done false: the store dropped the subscriber). An event that
// starts past got is a gap, reported as an error, as is the end of ctx.
func Drain(ctx context.Context, sub persistence.LogSubscription, got []string) (_ []string, done bool, _ error) {
	for {
		select {
		case ev, ok := <-sub.C():
			if !ok {
				return got, false, nil
			}
			next := int64(len(got))
			if ev.From > next {
				return got, false, fmt.Errorf("gap: event from %d, have %d lines", ev.From, next)
			}
			if skip := next - ev.From; skip < int64(len(ev.Lines)) {
				got = append(got, ev.Lines[skip:]...)
			}
			if ev.Done {
				return got, true, nil
			}
		case <-ctx.Done():
			return got, false, ctx.Err()
		}
	}
}

// testLogFollow writes one job's log in random-sized batches (mixed with
// another job's) while followers join at different points, one after the
// end; each must get every line exactly once, in order.
func testLogFollow(t *testing.T, s persistence.LogStore) {
	const total = 3000
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()

	joins := []int{0, total / 4, total / 2, 3 * total / 4}
	marks := make([]chan struct{}, len(joins))
	for i := range marks {
		marks[i] = make(chan struct{})
	}
	results := make([][]string, len(joins)+1)
	errs := make([]error, len(joins)+1)
	var wg sync.WaitGroup
	for k := range joins {
		wg.Go(func() {
			select {
			case <-marks[k]:
				results[k], errs[k] = Follow(ctx, s, "job")
			case <-ctx.Done():
				errs[k] = ctx.Err()
			}
		})
	}

	rng := rand.New(rand.NewPCG(1, 2))
	written, mark := 0, 0
	for written < total {
		for mark < len(joins) && written >= joins[mark] {
			close(marks[mark])
			mark++
		}
		n := min(1+rng.IntN(25), total-written)
		b := batch("job", written, n)
		b.Done = written+n == total
		noise := batch("noise", written, 1)
		require.NoError(t, s.Write(ctx, []persistence.LogBatch{noise, b}))
		written += n
		if rng.IntN(4) == 0 {
			time.Sleep(100 * time.Microsecond) // let followers interleave
		}
	}
	for ; mark < len(joins); mark++ {
		close(marks[mark])
	}
	k := len(joins)
	wg.Go(func() { results[k], errs[k] = Follow(ctx, s, "job") })
	wg.Wait()

	want := lines(0, total)
	for k := range results {
		require.NoError(t, errs[k], "follower %d", k)
		require.Equal(t, want, results[k], "follower %d", k)
	}
}

func testLogCloseEndsChannel(t *testing.T, s persistence.LogStore) {
	ctx := t.Context()
	sub, err := s.Subscribe(ctx, "a")
	require.NoError(t, err)
	require.NoError(t, s.Write(ctx, []persistence.LogBatch{batch("a", 0, 1)}))
	require.NoError(t, sub.Close())
	requireClosed(t, sub)
	require.NoError(t, sub.Close(), "second Close")
	require.NoError(t, s.Write(ctx, []persistence.LogBatch{batch("a", 1, 1)}), "write after a follower left")
}

func testLogContextEnds(t *testing.T, s persistence.LogStore) {
	ctx, cancel := context.WithCancel(t.Context())
	sub, err := s.Subscribe(ctx, "a")
	require.NoError(t, err)
	cancel()
	requireClosed(t, sub)
	require.NoError(t, sub.Close())
	require.NoError(t, s.Write(t.Context(), []persistence.LogBatch{batch("a", 0, 1)}))
}
