package bolt_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/persistence"
	"github.com/paprika-hub/paprika/persistence/bolt"
	"github.com/paprika-hub/paprika/persistence/storetest"
)

// open opens a store in a new file under t's temporary directory, in a
// directory Open must create, and closes it at the end of the test.
func open(t *testing.T, opts ...bolt.Option) (*bolt.JobStore, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "data", "jobs.db")
	s, err := bolt.Open(path, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s, path
}

func TestJobStore(t *testing.T) {
	t.Parallel()
	storetest.RunJobStore(t, func(t *testing.T) persistence.JobStore {
		s, _ := open(t)
		return s
	})
}

// TestReopen closes and reopens the file: every job, its state, the
// indexes and the idempotency keys survive.
func TestReopen(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "data", "jobs.db")
	s, err := bolt.Open(path)
	require.NoError(t, err)

	var ids []string
	base := time.Now().Add(-time.Hour)
	for i := range 5 {
		j, _, err := s.Create(ctx, persistence.Job{
			Mode:           "noop",
			Params:         json.RawMessage(`{"lines":1}`),
			CreatedAt:      base.Add(time.Duration(i) * time.Second),
			IdempotencyKey: "key-" + string(rune('a'+i)),
		})
		require.NoError(t, err)
		ids = append(ids, j.ID)
	}
	_, err = s.Claim(ctx, ids[1], "w1", time.Now())
	require.NoError(t, err)
	require.NoError(t, s.SetLane(ctx, ids[1], 1, "lane-1"))
	_, err = s.Claim(ctx, ids[2], "w1", time.Now())
	require.NoError(t, err)
	done, err := s.Finish(ctx, ids[2], 1, persistence.Finish{Status: persistence.StatusSucceeded, Result: json.RawMessage(`{"ok":true}`)})
	require.NoError(t, err)
	before, _, err := s.List(ctx, persistence.ListQuery{})
	require.NoError(t, err)
	require.NoError(t, s.Close())

	s, err = bolt.Open(path)
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()

	after, _, err := s.List(ctx, persistence.ListQuery{})
	require.NoError(t, err)
	require.Equal(t, before, after)

	running, _, err := s.List(ctx, persistence.ListQuery{Status: persistence.StatusRunning})
	require.NoError(t, err)
	require.Len(t, running, 1)
	require.Equal(t, ids[1], running[0].ID)
	require.Equal(t, "lane-1", running[0].Lane)

	got, err := s.Get(ctx, ids[2])
	require.NoError(t, err)
	require.Equal(t, done, got)

	again, created, err := s.Create(ctx, persistence.Job{Mode: "noop", IdempotencyKey: "key-a"})
	require.NoError(t, err)
	require.False(t, created, "idempotency keys survive a restart")
	require.Equal(t, ids[0], again.ID)

	// Transitions still fence after the restart.
	_, err = s.Claim(ctx, ids[1], "w2", time.Now())
	require.ErrorIs(t, err, persistence.ErrConflict)
}

// TestLocked: a second Open of the same file (a second hub on the same data
// directory) fails clearly instead of waiting forever.
func TestLocked(t *testing.T) {
	t.Parallel()
	_, path := open(t)
	_, err := bolt.Open(path, bolt.WithLockTimeout(50*time.Millisecond))
	require.ErrorContains(t, err, "locked")
}

func TestClosedIsUnavailable(t *testing.T) {
	t.Parallel()
	s, err := bolt.Open(filepath.Join(t.TempDir(), "jobs.db"))
	require.NoError(t, err)
	j, _, err := s.Create(context.Background(), persistence.Job{Mode: "noop"})
	require.NoError(t, err)
	require.NoError(t, s.Close())

	_, err = s.Get(context.Background(), j.ID)
	require.ErrorIs(t, err, persistence.ErrUnavailable)
	_, err = s.Claim(context.Background(), j.ID, "w1", time.Now())
	require.ErrorIs(t, err, persistence.ErrUnavailable)
	_, _, err = s.List(context.Background(), persistence.ListQuery{})
	require.ErrorIs(t, err, persistence.ErrUnavailable)
}

// TestGroupCommitConcurrentTransitions: many callers' transitions share
// commits, each answered with its own verdict: exactly one of the racing
// claims of a job wins, and a refused one rolls nothing else back.
func TestGroupCommitConcurrentTransitions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "jobs.db")
	s, err := bolt.Open(path)
	require.NoError(t, err)
	ctx := context.Background()
	const n = 64
	ids := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			j, created, err := s.Create(ctx, persistence.Job{Mode: "noop", TimeoutS: 60, MaxAttempts: 1})
			assert.NoError(t, err)
			assert.True(t, created)
			ids[i] = j.ID
		}()
	}
	wg.Wait()
	var wins atomic.Int64
	for i := range n {
		for w := range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := s.Claim(ctx, ids[i], fmt.Sprintf("w%d", w), time.Now()); err == nil {
					wins.Add(1)
				} else {
					assert.ErrorIs(t, err, persistence.ErrConflict)
				}
			}()
		}
	}
	wg.Wait()
	require.EqualValues(t, n, wins.Load(), "one claim per job wins")
	_, err = s.Claim(ctx, "no-such-job", "w0", time.Now())
	require.ErrorIs(t, err, persistence.ErrNotFound)
	require.NoError(t, s.Close())

	// Durable: reopened, every job is running.
	s, err = bolt.Open(path)
	require.NoError(t, err)
	defer s.Close()
	for _, id := range ids {
		j, err := s.Get(ctx, id)
		require.NoError(t, err)
		require.Equal(t, persistence.StatusRunning, j.Status)
	}
	require.NoError(t, s.Close())
	_, err = s.Claim(ctx, ids[0], "w0", time.Now())
	require.ErrorIs(t, err, persistence.ErrUnavailable)
}

// TestListMergesStatuses: listing every status walks the status ranges as
// one sequence, so jobs spread over queued, running and final statuses
// come out in creation order, page after page, each exactly once.
func TestListMergesStatuses(t *testing.T) {
	t.Parallel()
	s, _ := open(t)
	ctx := t.Context()
	base := time.Now().Add(-time.Hour)
	var want []string
	for i := range 23 {
		j, _, err := s.Create(ctx, persistence.Job{Mode: "noop", MaxAttempts: 1, TimeoutS: 60,
			CreatedAt: base.Add(time.Duration(i*7%23) * time.Second)}) // created out of submission order
		require.NoError(t, err)
		switch i % 3 {
		case 1:
			_, err = s.Claim(ctx, j.ID, "w1", time.Now())
		case 2:
			_, err = s.Finish(ctx, j.ID, persistence.AnyAttempt, persistence.Finish{Status: persistence.StatusCanceled, Reason: persistence.ReasonCanceled})
		}
		require.NoError(t, err)
		want = append(want, j.ID)
	}
	byCreated := func(oldestFirst bool) []string {
		jobs := make(map[string]persistence.Job)
		for _, id := range want {
			j, err := s.Get(ctx, id)
			require.NoError(t, err)
			jobs[id] = j
		}
		ids := append([]string(nil), want...)
		slices.SortFunc(ids, func(a, b string) int {
			c := jobs[a].CreatedAt.Compare(jobs[b].CreatedAt)
			if oldestFirst {
				return c
			}
			return -c
		})
		return ids
	}
	for _, oldestFirst := range []bool{false, true} {
		var got []string
		cursor := ""
		for {
			page, next, err := s.List(ctx, persistence.ListQuery{Limit: 4, Cursor: cursor, OldestFirst: oldestFirst})
			require.NoError(t, err)
			for _, j := range page {
				got = append(got, j.ID)
			}
			if next == "" {
				break
			}
			cursor = next
		}
		require.Equal(t, byCreated(oldestFirst), got, "oldest first: %v", oldestFirst)
	}
}

// TestJobStoreGroupWait: the conformance suite with commits that wait
// for company (WithGroupWait).
func TestJobStoreGroupWait(t *testing.T) {
	t.Parallel()
	storetest.RunJobStore(t, func(t *testing.T) persistence.JobStore {
		s, _ := open(t, bolt.WithGroupWait(time.Millisecond))
		return s
	})
}

// TestGroupWaitSharesCommits: writes that come one at a time, faster than
// the group wait, share commits (each waits for up to three more); a
// lone write after a quiet spell does not wait; without a wait every one
// of those paced writes has a commit of its own.
func TestGroupWaitSharesCommits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// A wait far longer than the test: a write that waited would show.
	s, _ := open(t, bolt.WithGroupWait(time.Minute))
	start := time.Now()
	_, _, err := s.Create(ctx, persistence.Job{Mode: "noop", TimeoutS: 60, MaxAttempts: 1})
	require.NoError(t, err)
	require.Less(t, time.Since(start), 30*time.Second, "the first write waited for company")
	require.EqualValues(t, 1, bolt.Commits(s))

	const n = 200
	s, _ = open(t, bolt.WithGroupWait(50*time.Millisecond))
	storetest.CreatePaced(t, s, n, 2*time.Millisecond)
	require.LessOrEqual(t, bolt.Commits(s), int64(n/2), "paced writes shared commits")
	t.Logf("group wait 50ms: %d writes in %d commits", n, bolt.Commits(s))

	s, _ = open(t)
	storetest.CreatePaced(t, s, 20, 20*time.Millisecond)
	t.Logf("no group wait: %d writes in %d commits", 20, bolt.Commits(s))
	require.GreaterOrEqual(t, bolt.Commits(s), int64(10), "without a wait, writes 20 ms apart hardly share a commit")
}

// TestIndexPagesFillUp: the index buckets grow at their right edge (a job's
// status entry by creation time, the SDK's time-ordered idempotency keys),
// and their pages are left ~90 % full when they split, not half empty.
func TestIndexPagesFillUp(t *testing.T) {
	s, _ := open(t)
	ctx := context.Background()
	for range 1000 {
		shortLife(ctx, t, s)
	}
	for _, name := range []string{"by_status", "idempotency"} {
		fill, err := bolt.LeafFill(s, name)
		require.NoError(t, err)
		assert.Greater(t, fill, 0.8, "%s leaf pages in use", name)
	}
}

// TestStuckCommitBoundsTheWait: a caller's wait for its commit ends with
// its context (an actor's turn must not hang on a stuck disk), and it
// learns whether its write may still land: one the committer had taken
// may; one still queued behind it is dropped, never written later.
func TestStuckCommitBoundsTheWait(t *testing.T) {
	t.Parallel()
	s, _ := open(t)
	bg := context.Background()
	a, _, err := s.Create(bg, persistence.Job{Mode: "noop"})
	require.NoError(t, err)
	b, _, err := s.Create(bg, persistence.Job{Mode: "noop"})
	require.NoError(t, err)

	release := bolt.HoldWriter(s)
	claim := func(id string) error {
		ctx, cancel := context.WithTimeout(bg, 100*time.Millisecond)
		defer cancel()
		_, err := s.Claim(ctx, id, "w1", time.Now())
		return err
	}
	// a's claim is taken by the committer, whose commit then waits for
	// the writer lock; b's stays queued behind it.
	errA := claim(a.ID)
	errB := claim(b.ID)
	for _, err := range []error{errA, errB} {
		require.ErrorIs(t, err, persistence.ErrUnavailable)
		require.ErrorIs(t, err, context.DeadlineExceeded)
	}
	require.ErrorContains(t, errA, "may have been written")
	require.ErrorContains(t, errB, "nothing written")
	release()

	require.Eventually(t, func() bool {
		got, err := s.Get(bg, a.ID)
		return err == nil && got.Status == persistence.StatusRunning
	}, 5*time.Second, 5*time.Millisecond, "the taken claim lands once the disk answers")
	// A later commit has run (the store answers again); b is untouched.
	c, _, err := s.Create(bg, persistence.Job{Mode: "noop"})
	require.NoError(t, err)
	require.NotEmpty(t, c.ID)
	got, err := s.Get(bg, b.ID)
	require.NoError(t, err)
	require.Equal(t, persistence.StatusQueued, got.Status, "a dropped write is never written")
	require.Zero(t, got.Attempts)
}

// TestJobStoreFinishWait: the conformance suite with final states that
// wait to ride other writes' commits (WithFinishWait).
func TestJobStoreFinishWait(t *testing.T) {
	t.Parallel()
	storetest.RunJobStore(t, func(t *testing.T) persistence.JobStore {
		s, _ := open(t, bolt.WithGroupWait(time.Millisecond), bolt.WithFinishWait(5*time.Millisecond))
		return s
	})
}

// runningJob creates and claims a job in s.
func runningJob(t *testing.T, s *bolt.JobStore) persistence.Job {
	t.Helper()
	ctx := context.Background()
	j, _, err := s.Create(ctx, persistence.Job{Mode: "noop", TimeoutS: 60, MaxAttempts: 1})
	require.NoError(t, err)
	j, err = s.Claim(ctx, j.ID, "w1", time.Now())
	require.NoError(t, err)
	return j
}

// finishAsync runs a's Finish (the final state a lazy write) in the
// background; its answer comes on the channel returned.
func finishAsync(ctx context.Context, s *bolt.JobStore, j persistence.Job) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := s.Finish(ctx, j.ID, j.Attempts, persistence.Finish{Status: persistence.StatusSucceeded, Lane: "0"})
		done <- err
	}()
	return done
}

// TestFinishRidesAnotherCommit: with a finish wait longer than the test, a
// final state starts no commit of its own: it waits, unanswered and
// unwritten, until another write starts one, and then both are answered
// after that one commit; the lane (SetLane) rides the same way.
func TestFinishRidesAnotherCommit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := open(t, bolt.WithFinishWait(time.Minute))
	a := runningJob(t, s)
	b := runningJob(t, s)
	before := bolt.Commits(s)

	done := finishAsync(ctx, s, a)
	laneDone := make(chan error, 1)
	go func() { laneDone <- s.SetLane(ctx, b.ID, b.Attempts, "3") }()
	require.Eventually(t, func() bool { return bolt.LazyWaiting(s) == 2 }, 10*time.Second, time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("the final state committed on its own: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	require.Equal(t, before, bolt.Commits(s), "no commit while only lazy writes wait")
	got, err := s.Get(ctx, a.ID)
	require.NoError(t, err)
	require.Equal(t, persistence.StatusRunning, got.Status, "not written before a commit carries it")

	// A create (an urgent write) starts a commit: the waiting writes ride it.
	_, _, err = s.Create(ctx, persistence.Job{Mode: "noop", TimeoutS: 60, MaxAttempts: 1})
	require.NoError(t, err)
	require.NoError(t, <-done)
	require.NoError(t, <-laneDone)
	require.Equal(t, before+1, bolt.Commits(s), "the create and the waiting writes shared one commit")
	got, err = s.Get(ctx, a.ID)
	require.NoError(t, err)
	require.Equal(t, persistence.StatusSucceeded, got.Status)
	got, err = s.Get(ctx, b.ID)
	require.NoError(t, err)
	require.Equal(t, "3", got.Lane)
}

// TestLoneFinishCommitsAfterItsWait: a final state with no other write
// to ride commits on its own once its wait is over, and without a finish
// wait it commits at once.
func TestLoneFinishCommitsAfterItsWait(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, wait := range []time.Duration{0, 20 * time.Millisecond} {
		s, _ := open(t, bolt.WithFinishWait(wait))
		j := runningJob(t, s)
		before := bolt.Commits(s)
		start := time.Now()
		require.NoError(t, <-finishAsync(ctx, s, j), "wait %s", wait)
		require.GreaterOrEqual(t, time.Since(start), wait, "the final state waited for company first")
		require.Equal(t, before+1, bolt.Commits(s))
		got, err := s.Get(ctx, j.ID)
		require.NoError(t, err)
		require.Equal(t, persistence.StatusSucceeded, got.Status)
	}
}

// TestWaitingFinishBoundsAndClose: a final state whose caller gives up
// while it waits is dropped, never written later; one still waiting when
// the store closes is written and answered before Close returns.
func TestWaitingFinishBoundsAndClose(t *testing.T) {
	t.Parallel()
	bg := context.Background()
	path := filepath.Join(t.TempDir(), "jobs.db")
	s, err := bolt.Open(path, bolt.WithFinishWait(time.Minute))
	require.NoError(t, err)
	a := runningJob(t, s)
	b := runningJob(t, s)

	ctx, cancel := context.WithTimeout(bg, 100*time.Millisecond)
	defer cancel()
	err = <-finishAsync(ctx, s, a)
	require.ErrorIs(t, err, persistence.ErrUnavailable)
	require.ErrorContains(t, err, "nothing written")
	_, _, err = s.Create(bg, persistence.Job{Mode: "noop", TimeoutS: 60, MaxAttempts: 1}) // a commit the dropped write could ride
	require.NoError(t, err)
	got, err := s.Get(bg, a.ID)
	require.NoError(t, err)
	require.Equal(t, persistence.StatusRunning, got.Status, "a dropped write is never written")

	done := finishAsync(bg, s, b)
	require.Eventually(t, func() bool { return bolt.LazyWaiting(s) == 1 }, 10*time.Second, time.Millisecond)
	require.NoError(t, s.Close())
	require.NoError(t, <-done, "a waiting write is answered at Close")
	s, err = bolt.Open(path)
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	got, err = s.Get(bg, b.ID)
	require.NoError(t, err)
	require.Equal(t, persistence.StatusSucceeded, got.Status, "written before Close returned")
}
