package bolt_test

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/persistence"
	"github.com/paprika-hub/paprika/persistence/bolt"
	"github.com/paprika-hub/paprika/persistence/storetest"
)

// announcing is a job store whose Create goes through CreateAnnounced and
// counts the announcements, as the hub's submit does.
type announcing struct {
	*bolt.JobStore
	announced atomic.Int64
}

func (a *announcing) Create(ctx context.Context, j persistence.Job) (persistence.Job, bool, error) {
	return a.CreateAnnounced(ctx, j, func(persistence.Job) { a.announced.Add(1) })
}

// TestJobStoreCreateWait: the conformance suite with every create
// announced and waiting for a commit to share (WithCreateWait) —
// idempotency keys, duplicate ids and listings as with a plain Create.
func TestJobStoreCreateWait(t *testing.T) {
	t.Parallel()
	storetest.RunJobStore(t, func(t *testing.T) persistence.JobStore {
		s, _ := open(t, bolt.WithGroupWait(time.Millisecond), bolt.WithFinishWait(5*time.Millisecond),
			bolt.WithCreateWait(2*time.Millisecond))
		return &announcing{JobStore: s}
	})
}

// createAsync runs CreateAnnounced in the background: the job announced
// comes on the first channel, the answer on the second.
func createAsync(ctx context.Context, s *bolt.JobStore, j persistence.Job) (<-chan persistence.Job, <-chan error) {
	announced, done := make(chan persistence.Job, 1), make(chan error, 1)
	go func() {
		_, _, err := s.CreateAnnounced(ctx, j, func(j persistence.Job) { announced <- j })
		done <- err
	}()
	return announced, done
}

// TestCreateSharesItsClaimsCommit: with a create wait longer than the
// test, a new job is announced before it is written, its create waits,
// unanswered and unwritten, and the claim made from the announcement
// starts the one commit that writes both — the create first, so the claim
// finds its job — and answers both.
func TestCreateSharesItsClaimsCommit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := open(t, bolt.WithCreateWait(time.Minute))
	before := bolt.Commits(s)
	announced, done := createAsync(ctx, s, persistence.Job{Mode: "noop", TimeoutS: 60, MaxAttempts: 1, IdempotencyKey: "k1"})
	j := <-announced
	require.NotEmpty(t, j.ID)
	require.Equal(t, persistence.StatusQueued, j.Status)
	require.Eventually(t, func() bool { return bolt.LazyWaiting(s) == 1 }, 10*time.Second, time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("the create was answered before any commit: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	require.Equal(t, before, bolt.Commits(s), "no commit while only the create waits")
	_, err := s.Get(ctx, j.ID)
	require.ErrorIs(t, err, persistence.ErrNotFound, "not written before a commit carries it")

	claimed, err := s.Claim(ctx, j.ID, "w1", time.Now())
	require.NoError(t, err, "the claim found the create it rode with")
	require.Equal(t, persistence.StatusRunning, claimed.Status)
	require.NoError(t, <-done)
	require.Equal(t, before+1, bolt.Commits(s), "the create and its claim shared one commit")
	got, err := s.Get(ctx, j.ID)
	require.NoError(t, err)
	require.Equal(t, persistence.StatusRunning, got.Status)
}

// TestCreateAnnouncedOnlyWhenCertain: a create whose idempotency key is
// stored is not announced (it answers the stored job), and of two creates
// of one new key under way together only the first is: the second waits
// for it and answers its job.
func TestCreateAnnouncedOnlyWhenCertain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := open(t, bolt.WithCreateWait(time.Minute))

	first, firstDone := createAsync(ctx, s, persistence.Job{Mode: "noop", TimeoutS: 60, IdempotencyKey: "same"})
	j := <-first
	var calls atomic.Int64
	type answer struct {
		j       persistence.Job
		created bool
		err     error
	}
	second := make(chan answer, 1)
	go func() {
		got, created, err := s.CreateAnnounced(ctx, persistence.Job{Mode: "noop", TimeoutS: 60, IdempotencyKey: "same"},
			func(persistence.Job) { calls.Add(1) })
		second <- answer{got, created, err}
	}()
	select {
	case a := <-second:
		t.Fatalf("the second create of a key went while the first was under way: %+v", a)
	case <-time.After(50 * time.Millisecond):
	}
	_, err := s.Claim(ctx, j.ID, "w1", time.Now()) // starts the first's commit
	require.NoError(t, err)
	require.NoError(t, <-firstDone)
	a := <-second
	require.NoError(t, a.err)
	require.False(t, a.created)
	require.Equal(t, j.ID, a.j.ID, "the second answers the first's job")

	// Stored already: answered at once, not announced, nothing waits.
	start := time.Now()
	got, created, err := s.CreateAnnounced(ctx, persistence.Job{Mode: "noop", TimeoutS: 60, IdempotencyKey: "same"},
		func(persistence.Job) { calls.Add(1) })
	require.NoError(t, err)
	require.False(t, created)
	require.Equal(t, j.ID, got.ID)
	require.Less(t, time.Since(start), 30*time.Second, "a create not announced does not wait")
	require.Zero(t, calls.Load(), "no duplicate was announced")
}

// TestAnnouncedCreateIsHeld: once announced, a create is written even if
// its caller stops waiting — its error says it may have been — since the
// caller acted on it; a delayed job, and a create under WithoutCommitWait
// (a batch's item), commit without waiting.
func TestAnnouncedCreateIsHeld(t *testing.T) {
	t.Parallel()
	bg := context.Background()
	path := filepath.Join(t.TempDir(), "jobs.db")
	s, err := bolt.Open(path, bolt.WithCreateWait(time.Minute))
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(bg)
	announced, done := createAsync(ctx, s, persistence.Job{Mode: "noop", TimeoutS: 60})
	j := <-announced
	cancel()
	err = <-done
	require.ErrorIs(t, err, persistence.ErrUnavailable)
	require.ErrorContains(t, err, "may have been written")

	// Neither of these waits the minute; the first one's commit carries
	// the held create as well.
	start := time.Now()
	_, done = createAsync(persistence.WithoutCommitWait(bg), s, persistence.Job{Mode: "noop", TimeoutS: 60})
	require.NoError(t, <-done)
	_, done = createAsync(bg, s, persistence.Job{Mode: "noop", TimeoutS: 60, Status: persistence.StatusScheduled, RunAt: time.Now().Add(time.Hour)})
	require.NoError(t, <-done)
	require.Less(t, time.Since(start), 30*time.Second)
	got, err := s.Get(bg, j.ID)
	require.NoError(t, err, "the held create was written")
	require.Equal(t, persistence.StatusQueued, got.Status)

	// One still waiting at Close is written before Close returns.
	announced, done = createAsync(bg, s, persistence.Job{Mode: "noop", TimeoutS: 60})
	j = <-announced
	require.NoError(t, s.Close())
	require.NoError(t, <-done)
	s, err = bolt.Open(path)
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	_, err = s.Get(bg, j.ID)
	require.NoError(t, err)
}

// TestLoneCreateCommitsAfterItsWait: an announced create that no claim
// follows (no lane free) commits on its own once its wait is over.
func TestLoneCreateCommitsAfterItsWait(t *testing.T) {
	t.Parallel()
	s, _ := open(t, bolt.WithCreateWait(20*time.Millisecond))
	before := bolt.Commits(s)
	start := time.Now()
	_, done := createAsync(context.Background(), s, persistence.Job{Mode: "noop", TimeoutS: 60})
	require.NoError(t, <-done)
	require.GreaterOrEqual(t, time.Since(start), 20*time.Millisecond)
	require.Equal(t, before+1, bolt.Commits(s))
}
