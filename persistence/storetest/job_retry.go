package storetest

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/persistence"
)

var jobRetryTests = []jobTest{
	{"ScheduledCreatePromote", testJobScheduledCreatePromote},
	{"ScheduledCreateRejects", testJobScheduledCreateRejects},
	{"Reschedule", testJobReschedule},
	{"RescheduleFrom", testJobRescheduleFrom},
	{"Revive", testJobRevive},
	{"AttemptsLogBounded", testJobAttemptsLogBounded},
	{"CancelScheduled", testJobCancelScheduled},
}

func newScheduled(i int, runAt time.Time) persistence.Job {
	j := newJob(i)
	j.Status, j.RunAt = persistence.StatusScheduled, runAt
	j.RetryBackoff = &persistence.RetryBackoff{BaseS: 0.5, MaxS: 60}
	return j
}

// requireAttempt checks one attempts log entry.
func requireAttempt(t *testing.T, want, got persistence.Attempt) {
	t.Helper()
	require.Equal(t, want.Attempt, got.Attempt, "attempt")
	require.Equal(t, want.WorkerID, got.WorkerID, "worker_id")
	require.Equal(t, want.Lane, got.Lane, "lane")
	require.Equal(t, want.Hub, got.Hub, "hub")
	require.Equal(t, want.Status, got.Status, "status")
	require.Equal(t, want.Reason, got.Reason, "reason")
	require.Equal(t, want.Error, got.Error, "error")
	requireTime(t, want.QueuedAt, got.QueuedAt, "queued_at")
	requireTime(t, want.StartedAt, got.StartedAt, "started_at")
	requireTime(t, want.FinishedAt, got.FinishedAt, "finished_at")
}

func testJobScheduledCreatePromote(t *testing.T, s persistence.JobStore) {
	ctx := t.Context()
	runAt := time.Now().Add(time.Hour).In(zone)
	j := mustCreate(t, s, newScheduled(1, runAt))
	require.Equal(t, persistence.StatusScheduled, j.Status)
	requireTime(t, runAt, j.RunAt, "run_at")
	require.Equal(t, &persistence.RetryBackoff{BaseS: 0.5, MaxS: 60}, j.RetryBackoff)
	got, err := s.Get(ctx, j.ID)
	require.NoError(t, err)
	requireJob(t, j, got)
	requireTime(t, runAt, got.RunAt, "run_at")
	require.Equal(t, j.RetryBackoff, got.RetryBackoff)
	require.True(t, got.Deadline().Equal(got.RunAt.Add(180*time.Second)), "timeout_s counts from run_at")

	queued := mustCreate(t, s, newJob(2))
	page, _, err := s.List(ctx, persistence.ListQuery{Status: persistence.StatusScheduled})
	require.NoError(t, err)
	require.Len(t, page, 1)
	require.Equal(t, j.ID, page[0].ID)

	_, err = s.Claim(ctx, j.ID, "w1", time.Now())
	require.ErrorIs(t, err, persistence.ErrConflict, "a scheduled job is not claimable")
	_, err = s.Promote(ctx, queued.ID)
	require.ErrorIs(t, err, persistence.ErrConflict, "promote of a queued job")
	_, err = s.Promote(ctx, "nosuchjob")
	require.ErrorIs(t, err, persistence.ErrNotFound)

	p, err := s.Promote(ctx, j.ID)
	require.NoError(t, err)
	want := j
	want.Status = persistence.StatusQueued
	requireJob(t, want, p)
	requireTime(t, runAt, p.RunAt, "run_at kept")
	_, err = s.Promote(ctx, j.ID)
	require.ErrorIs(t, err, persistence.ErrConflict, "second promote")
	c, err := s.Claim(ctx, j.ID, "w1", time.Now())
	require.NoError(t, err)
	require.Equal(t, 1, c.Attempts)
}

func testJobScheduledCreateRejects(t *testing.T, s persistence.JobStore) {
	ctx := t.Context()
	noRunAt := newJob(1)
	noRunAt.Status = persistence.StatusScheduled
	_, _, err := s.Create(ctx, noRunAt)
	require.Error(t, err, "scheduled without run_at")
	queuedRunAt := newJob(2)
	queuedRunAt.RunAt = time.Now().Add(time.Minute)
	_, _, err = s.Create(ctx, queuedRunAt)
	require.Error(t, err, "run_at on a queued job")
	bad := newScheduled(3, time.Now().Add(time.Minute))
	bad.RetryBackoff.MaxS = 0.1
	_, _, err = s.Create(ctx, bad)
	require.Error(t, err, "retry_backoff max_s below base_s")
}

func testJobReschedule(t *testing.T, s persistence.JobStore) {
	ctx := t.Context()
	j := mustCreate(t, s, newJob(1))
	_, err := s.Reschedule(ctx, j.ID, 1, persistence.Reschedule{RunAt: time.Now()})
	require.ErrorIs(t, err, persistence.ErrConflict, "reschedule of a queued job")

	started := time.Now().Add(-time.Second).In(zone)
	_, err = s.Claim(ctx, j.ID, "w1", started)
	require.NoError(t, err)
	require.NoError(t, s.SetLane(ctx, j.ID, 1, "lane-1"))
	ended := time.Now().In(zone)
	runAt := ended.Add(16 * time.Second)
	r := persistence.Reschedule{RunAt: runAt, Reason: persistence.ReasonJobError, Error: "boom", At: ended, Hub: "hub-a"}
	_, err = s.Reschedule(ctx, j.ID, 2, r)
	require.ErrorIs(t, err, persistence.ErrConflict, "stale attempt")
	got, err := s.Reschedule(ctx, j.ID, 1, r)
	require.NoError(t, err)
	want := j
	want.Status, want.Attempts = persistence.StatusScheduled, 1 // unassigned; the attempt counts
	requireJob(t, want, got)
	requireTime(t, runAt, got.RunAt, "run_at")
	first := persistence.Attempt{Attempt: 1, WorkerID: "w1", Lane: "lane-1", Hub: "hub-a", QueuedAt: j.CreatedAt,
		StartedAt: started, FinishedAt: ended, Status: persistence.StatusFailed, Reason: persistence.ReasonJobError, Error: "boom"}
	require.Len(t, got.AttemptsLog, 1)
	requireAttempt(t, first, got.AttemptsLog[0])
	read, err := s.Get(ctx, j.ID)
	require.NoError(t, err)
	requireJob(t, want, read)
	require.Len(t, read.AttemptsLog, 1)
	requireAttempt(t, first, read.AttemptsLog[0])
	require.True(t, read.Deadline().Equal(read.RunAt.Add(180*time.Second)), "the retry's deadline counts from its run_at")

	// The stale worker of attempt 1 cannot finish it.
	_, err = s.Finish(ctx, j.ID, 1, persistence.Finish{Status: persistence.StatusSucceeded})
	require.ErrorIs(t, err, persistence.ErrConflict)

	_, err = s.Promote(ctx, j.ID)
	require.NoError(t, err)
	_, err = s.Claim(ctx, j.ID, "w2", time.Now())
	require.NoError(t, err)
	done, err := s.Finish(ctx, j.ID, 2, persistence.Finish{Status: persistence.StatusFailed,
		Reason: persistence.ReasonJobError, Error: "boom again", Hub: "hub-b"})
	require.NoError(t, err)
	require.Len(t, done.AttemptsLog, 2)
	second := done.AttemptsLog[1]
	require.Equal(t, 2, second.Attempt)
	require.Equal(t, "w2", second.WorkerID)
	require.Equal(t, "hub-b", second.Hub)
	require.Equal(t, "boom again", second.Error)
	requireTime(t, runAt, second.QueuedAt, "a retry waits from its run_at")
	requireTime(t, done.FinishedAt, second.FinishedAt, "finished_at")
	read, err = s.Get(ctx, j.ID)
	require.NoError(t, err)
	require.Len(t, read.AttemptsLog, 2)
	requireAttempt(t, first, read.AttemptsLog[0])
	requireAttempt(t, second, read.AttemptsLog[1])
}

func testJobRevive(t *testing.T, s persistence.JobStore) {
	ctx := t.Context()
	j := mustCreate(t, s, newJob(1)) // max_attempts 2
	_, err := s.Revive(ctx, j.ID, time.Now())
	require.ErrorIs(t, err, persistence.ErrConflict, "revive of a queued job")
	_, err = s.Revive(ctx, "nosuchjob", time.Now())
	require.ErrorIs(t, err, persistence.ErrNotFound)
	for attempt := 1; attempt <= 2; attempt++ {
		_, err = s.Claim(ctx, j.ID, "w1", time.Now())
		require.NoError(t, err)
		if attempt == 1 {
			require.NoError(t, s.Requeue(ctx, j.ID, 1))
		}
	}
	failed, err := s.Finish(ctx, j.ID, 2, persistence.Finish{Status: persistence.StatusFailed,
		Reason: persistence.ReasonJobError, Error: "boom"})
	require.NoError(t, err)
	require.Len(t, failed.AttemptsLog, 2)
	require.Equal(t, persistence.ReasonWorkerLost, failed.AttemptsLog[0].Reason)

	at := time.Now().Add(time.Second).In(zone)
	got, err := s.Revive(ctx, j.ID, at)
	require.NoError(t, err)
	want := j
	want.Status, want.Attempts, want.MaxAttempts = persistence.StatusQueued, 2, 3
	requireJob(t, want, got) // reason, error, worker, times cleared
	requireTime(t, at, got.RunAt, "run_at: due now, deadline afresh")
	require.Len(t, got.AttemptsLog, 2, "the log is kept")
	_, err = s.Revive(ctx, j.ID, at)
	require.ErrorIs(t, err, persistence.ErrConflict, "second revive")
	c, err := s.Claim(ctx, j.ID, "w2", time.Now())
	require.NoError(t, err)
	require.Equal(t, 3, c.Attempts)

	ok := mustCreate(t, s, newJob(2))
	_, err = s.Claim(ctx, ok.ID, "w1", time.Now())
	require.NoError(t, err)
	_, err = s.Finish(ctx, ok.ID, 1, persistence.Finish{Status: persistence.StatusSucceeded})
	require.NoError(t, err)
	_, err = s.Revive(ctx, ok.ID, at)
	require.ErrorIs(t, err, persistence.ErrConflict, "revive of a succeeded job")
}

func testJobAttemptsLogBounded(t *testing.T, s persistence.JobStore) {
	ctx := t.Context()
	j := mustCreate(t, s, newJob(1))
	long := strings.Repeat("é", persistence.MaxAttemptError) // 2 bytes each
	n := persistence.MaxAttemptsLog + 3
	for attempt := 1; attempt <= n; attempt++ {
		_, err := s.Claim(ctx, j.ID, "w1", time.Now())
		require.NoError(t, err)
		_, err = s.Reschedule(ctx, j.ID, attempt, persistence.Reschedule{RunAt: time.Now(), Reason: persistence.ReasonJobError, Error: long})
		require.NoError(t, err)
		_, err = s.Promote(ctx, j.ID)
		require.NoError(t, err)
	}
	got, err := s.Get(ctx, j.ID)
	require.NoError(t, err)
	require.Len(t, got.AttemptsLog, persistence.MaxAttemptsLog)
	require.Equal(t, n-persistence.MaxAttemptsLog+1, got.AttemptsLog[0].Attempt, "the latest attempts are kept")
	require.Equal(t, n, got.AttemptsLog[persistence.MaxAttemptsLog-1].Attempt)
	for _, a := range got.AttemptsLog {
		require.LessOrEqual(t, len(a.Error), persistence.MaxAttemptError)
		require.True(t, strings.HasPrefix(long, a.Error) && a.Error != "", "cut at a rune boundary")
	}
}

func testJobCancelScheduled(t *testing.T, s persistence.JobStore) {
	ctx := t.Context()
	j := mustCreate(t, s, newScheduled(1, time.Now().Add(time.Hour)))
	got, err := s.Finish(ctx, j.ID, persistence.AnyAttempt, persistence.Finish{Status: persistence.StatusCanceled,
		Reason: persistence.ReasonCanceled})
	require.NoError(t, err)
	require.Equal(t, persistence.StatusCanceled, got.Status)
	require.Empty(t, got.AttemptsLog, "no attempt ran")
	_, err = s.Promote(ctx, j.ID)
	require.ErrorIs(t, err, persistence.ErrConflict, "a canceled job is not promoted")
}

// testJobRescheduleFrom: Reschedule.From is a hint as Finish.From is (see
// testJobFinishFrom).
func testJobRescheduleFrom(t *testing.T, s persistence.JobStore) {
	ctx := t.Context()
	j := mustCreate(t, s, newJob(1))
	started := time.Now().Add(-time.Second).In(zone)
	claimed, err := s.Claim(ctx, j.ID, "w1", started)
	require.NoError(t, err)
	require.NoError(t, s.SetLane(ctx, j.ID, 1, "lane-1"))
	copied := claimed
	copied.Lane = "lane-1" // as stored
	ended := time.Now().In(zone)
	runAt := ended.Add(16 * time.Second)
	r := persistence.Reschedule{RunAt: runAt, Reason: persistence.ReasonJobError, Error: "boom", At: ended, Hub: "hub-a", From: &copied}
	got, err := s.Reschedule(ctx, j.ID, 1, r)
	require.NoError(t, err)
	want := j
	want.Status, want.Attempts = persistence.StatusScheduled, 1
	first := persistence.Attempt{Attempt: 1, WorkerID: "w1", Lane: "lane-1", Hub: "hub-a", QueuedAt: j.CreatedAt,
		StartedAt: started, FinishedAt: ended, Status: persistence.StatusFailed, Reason: persistence.ReasonJobError, Error: "boom"}
	for _, job := range []persistence.Job{got, mustGet(t, s, j.ID)} {
		requireJob(t, want, job)
		requireTime(t, runAt, job.RunAt, "run_at")
		require.Len(t, job.AttemptsLog, 1)
		requireAttempt(t, first, job.AttemptsLog[0])
	}

	// A lane stored since the copy: the stored one goes to the log.
	j = mustCreate(t, s, newJob(2))
	claimed, err = s.Claim(ctx, j.ID, "w1", time.Now())
	require.NoError(t, err)
	require.NoError(t, s.SetLane(ctx, j.ID, 1, "lane-0"))
	got, err = s.Reschedule(ctx, j.ID, 1, persistence.Reschedule{RunAt: time.Now().Add(time.Hour), Lane: "lane-9", From: &claimed})
	require.NoError(t, err)
	require.Equal(t, persistence.StatusScheduled, got.Status)
	require.Len(t, got.AttemptsLog, 1)
	require.Equal(t, "lane-0", got.AttemptsLog[0].Lane)

	// An ended attempt: refused, and left as it is.
	j = mustCreate(t, s, newJob(3))
	claimed, err = s.Claim(ctx, j.ID, "w1", time.Now())
	require.NoError(t, err)
	done, err := s.Finish(ctx, j.ID, 1, persistence.Finish{Status: persistence.StatusSucceeded})
	require.NoError(t, err)
	_, err = s.Reschedule(ctx, j.ID, 1, persistence.Reschedule{RunAt: time.Now().Add(time.Hour), From: &claimed})
	require.ErrorIs(t, err, persistence.ErrConflict)
	requireJob(t, done, mustGet(t, s, j.ID))
}
