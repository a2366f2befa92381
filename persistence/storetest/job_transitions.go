package storetest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/persistence"
)

var jobTransitionTests = []jobTest{
	{"Claim", testJobClaim},
	{"ClaimRace", testJobClaimRace},
	{"Unclaim", testJobUnclaim},
	{"SetLane", testJobSetLane},
	{"Requeue", testJobRequeue},
	{"Finish", testJobFinish},
	{"FinishAnyAttempt", testJobFinishAnyAttempt},
	{"FinishNotFinal", testJobFinishNotFinal},
	{"LaneWithEnd", testJobLaneWithEnd},
	{"FinishFrom", testJobFinishFrom},
	{"TimesUTC", testJobTimesUTC},
}

// zone is a non-UTC zone with an odd offset, so a store that keeps the
// caller's zone or reads back local time is caught.
var zone = time.FixedZone("X", 5*3600+30*60)

func testJobClaim(t *testing.T, s persistence.JobStore) {
	ctx := t.Context()
	j := mustCreate(t, s, newJob(1))
	at := time.Now().In(zone)

	claimed, err := s.Claim(ctx, j.ID, "w1", at)
	require.NoError(t, err)
	want := j
	want.Status, want.WorkerID, want.Attempts, want.StartedAt = persistence.StatusRunning, "w1", 1, at
	requireJob(t, want, claimed)
	got, err := s.Get(ctx, j.ID)
	require.NoError(t, err)
	requireJob(t, want, got)

	_, err = s.Claim(ctx, j.ID, "w2", time.Now())
	require.ErrorIs(t, err, persistence.ErrConflict, "second claim")
	_, err = s.Claim(ctx, j.ID, "w1", time.Now())
	require.ErrorIs(t, err, persistence.ErrConflict, "same worker again")
	got, err = s.Get(ctx, j.ID)
	require.NoError(t, err)
	requireJob(t, want, got)

	_, err = s.Finish(ctx, j.ID, 1, persistence.Finish{Status: persistence.StatusSucceeded})
	require.NoError(t, err)
	_, err = s.Claim(ctx, j.ID, "w2", time.Now())
	require.ErrorIs(t, err, persistence.ErrConflict, "claim of a final job")
}

func testJobUnclaim(t *testing.T, s persistence.JobStore) {
	ctx := t.Context()
	j := mustCreate(t, s, newJob(1))
	require.ErrorIs(t, s.Unclaim(ctx, j.ID, "w1", 1), persistence.ErrConflict, "unclaim of a queued job")

	_, err := s.Claim(ctx, j.ID, "w1", time.Now())
	require.NoError(t, err)
	require.NoError(t, s.SetLane(ctx, j.ID, 1, "lane-0"))
	require.ErrorIs(t, s.Unclaim(ctx, j.ID, "w2", 1), persistence.ErrConflict, "other worker")
	require.ErrorIs(t, s.Unclaim(ctx, j.ID, "w1", 2), persistence.ErrConflict, "other attempt")
	require.ErrorIs(t, s.Unclaim(ctx, j.ID, "w1", 0), persistence.ErrConflict, "other attempt")

	require.NoError(t, s.Unclaim(ctx, j.ID, "w1", 1))
	got, err := s.Get(ctx, j.ID)
	require.NoError(t, err)
	requireJob(t, j, got) // queued, unassigned, attempts 0, no start, no lane
	require.ErrorIs(t, s.Unclaim(ctx, j.ID, "w1", 1), persistence.ErrConflict, "second unclaim")

	again, err := s.Claim(ctx, j.ID, "w2", time.Now())
	require.NoError(t, err, "an unclaimed job is claimable")
	require.Equal(t, 1, again.Attempts)
	require.Equal(t, "w2", again.WorkerID)
}

func testJobSetLane(t *testing.T, s persistence.JobStore) {
	ctx := t.Context()
	j := mustCreate(t, s, newJob(1))
	require.ErrorIs(t, s.SetLane(ctx, j.ID, 0, "lane-1"), persistence.ErrConflict, "queued job")

	_, err := s.Claim(ctx, j.ID, "w1", time.Now())
	require.NoError(t, err)
	require.ErrorIs(t, s.SetLane(ctx, j.ID, 2, "lane-1"), persistence.ErrConflict, "stale attempt")
	require.NoError(t, s.SetLane(ctx, j.ID, 1, "lane-1"))
	got, err := s.Get(ctx, j.ID)
	require.NoError(t, err)
	require.Equal(t, "lane-1", got.Lane)
	require.Equal(t, persistence.StatusRunning, got.Status)

	_, err = s.Finish(ctx, j.ID, 1, persistence.Finish{Status: persistence.StatusFailed, Reason: persistence.ReasonJobError})
	require.NoError(t, err)
	require.ErrorIs(t, s.SetLane(ctx, j.ID, 1, "lane-2"), persistence.ErrConflict, "final job")
	got, err = s.Get(ctx, j.ID)
	require.NoError(t, err)
	require.Equal(t, "lane-1", got.Lane)
}

func testJobRequeue(t *testing.T, s persistence.JobStore) {
	ctx := t.Context()
	j := mustCreate(t, s, newJob(1))
	require.ErrorIs(t, s.Requeue(ctx, j.ID, 0), persistence.ErrConflict, "queued job")

	_, err := s.Claim(ctx, j.ID, "w1", time.Now())
	require.NoError(t, err)
	require.NoError(t, s.SetLane(ctx, j.ID, 1, "lane-1"))
	require.ErrorIs(t, s.Requeue(ctx, j.ID, 2), persistence.ErrConflict, "stale attempt")
	require.NoError(t, s.Requeue(ctx, j.ID, 1))

	got, err := s.Get(ctx, j.ID)
	require.NoError(t, err)
	want := j
	want.Attempts = 1 // the lost attempt still counts
	requireJob(t, want, got)
	require.ErrorIs(t, s.Requeue(ctx, j.ID, 1), persistence.ErrConflict, "second requeue")

	// The stale worker of attempt 1 can neither set a lane nor finish.
	require.ErrorIs(t, s.SetLane(ctx, j.ID, 1, "lane-9"), persistence.ErrConflict)
	_, err = s.Finish(ctx, j.ID, 1, persistence.Finish{Status: persistence.StatusSucceeded})
	require.ErrorIs(t, err, persistence.ErrConflict, "finish of a requeued attempt")

	second, err := s.Claim(ctx, j.ID, "w2", time.Now())
	require.NoError(t, err)
	require.Equal(t, 2, second.Attempts)
	require.Equal(t, "w2", second.WorkerID)
	require.Empty(t, second.Lane)
	_, err = s.Finish(ctx, j.ID, 1, persistence.Finish{Status: persistence.StatusSucceeded})
	require.ErrorIs(t, err, persistence.ErrConflict, "attempt 1 cannot finish attempt 2")
}

func testJobFinish(t *testing.T, s persistence.JobStore) {
	ctx := t.Context()
	j := mustCreate(t, s, newJob(1))
	claimed, err := s.Claim(ctx, j.ID, "w1", time.Now())
	require.NoError(t, err)
	require.NoError(t, s.SetLane(ctx, j.ID, 1, "lane-1"))

	f := persistence.Finish{
		Status: persistence.StatusSucceeded,
		Result: json.RawMessage(`{"lines": 3}`),
		Assets: []string{"page.html", "screenshot.png"},
		At:     time.Now().In(zone),
	}
	for _, stale := range []int{0, 2} {
		_, err = s.Finish(ctx, j.ID, stale, f)
		require.ErrorIs(t, err, persistence.ErrConflict, "stale attempt %d", stale)
	}
	done, err := s.Finish(ctx, j.ID, 1, f)
	require.NoError(t, err)
	want := claimed
	want.Lane, want.Status, want.Result, want.Assets, want.FinishedAt = "lane-1", f.Status, f.Result, f.Assets, f.At
	requireJob(t, want, done)

	// A second Finish loses, whatever it says and whoever says it.
	late := persistence.Finish{Status: persistence.StatusFailed, Reason: persistence.ReasonWorkerLost,
		Error: "late", At: time.Now().Add(time.Minute)}
	_, err = s.Finish(ctx, j.ID, 1, late)
	require.ErrorIs(t, err, persistence.ErrConflict)
	_, err = s.Finish(ctx, j.ID, persistence.AnyAttempt, late)
	require.ErrorIs(t, err, persistence.ErrConflict)

	got, err := s.Get(ctx, j.ID)
	require.NoError(t, err)
	requireJob(t, want, got)
}

func testJobFinishAnyAttempt(t *testing.T, s persistence.JobStore) {
	ctx := t.Context()
	cancel := persistence.Finish{Status: persistence.StatusCanceled, Reason: persistence.ReasonCanceled, At: time.Now()}

	queued := mustCreate(t, s, newJob(1))
	got, err := s.Finish(ctx, queued.ID, persistence.AnyAttempt, cancel)
	require.NoError(t, err, "cancel while queued")
	require.Equal(t, persistence.StatusCanceled, got.Status)
	require.Equal(t, persistence.ReasonCanceled, got.Reason)
	_, err = s.Claim(ctx, queued.ID, "w1", time.Now())
	require.ErrorIs(t, err, persistence.ErrConflict, "a canceled job cannot be claimed")

	running := mustCreate(t, s, newJob(2))
	_, err = s.Claim(ctx, running.ID, "w1", time.Now())
	require.NoError(t, err)
	deadline := persistence.Finish{Status: persistence.StatusFailed, Reason: persistence.ReasonDeadlineExceeded,
		Error: "deadline", At: time.Now()}
	got, err = s.Finish(ctx, running.ID, persistence.AnyAttempt, deadline)
	require.NoError(t, err, "hub decision ends the current attempt")
	require.Equal(t, persistence.StatusFailed, got.Status)
	require.Equal(t, "deadline", got.Error)
	require.Equal(t, 1, got.Attempts)
	require.Equal(t, "w1", got.WorkerID)
	_, err = s.Finish(ctx, running.ID, 1, persistence.Finish{Status: persistence.StatusSucceeded})
	require.ErrorIs(t, err, persistence.ErrConflict, "the worker's late result loses")
}

func testJobFinishNotFinal(t *testing.T, s persistence.JobStore) {
	ctx := t.Context()
	j := mustCreate(t, s, newJob(1))
	for _, st := range []persistence.Status{persistence.StatusRunning, persistence.StatusQueued, ""} {
		_, err := s.Finish(ctx, j.ID, persistence.AnyAttempt, persistence.Finish{Status: st})
		require.Error(t, err, "status %q", st)
	}
	got, err := s.Get(ctx, j.ID)
	require.NoError(t, err)
	requireJob(t, j, got)
}

func testJobTimesUTC(t *testing.T, s persistence.JobStore) {
	ctx := t.Context()
	created := time.Date(2026, 1, 2, 3, 4, 5, 678_901_234, zone)
	started := created.Add(1500 * time.Millisecond)
	finished := started.Add(2*time.Second + 345*time.Millisecond)

	in := newJob(1)
	in.CreatedAt = created
	j := mustCreate(t, s, in)
	_, err := s.Claim(ctx, j.ID, "w1", started)
	require.NoError(t, err)
	_, err = s.Finish(ctx, j.ID, 1, persistence.Finish{Status: persistence.StatusSucceeded, At: finished})
	require.NoError(t, err)

	got, err := s.Get(ctx, j.ID)
	require.NoError(t, err)
	requireTime(t, created, got.CreatedAt, "created_at")
	requireTime(t, started, got.StartedAt, "started_at")
	requireTime(t, finished, got.FinishedAt, "finished_at")
	require.Equal(t, 3*time.Second+845*time.Millisecond, got.FinishedAt.Sub(got.CreatedAt).Truncate(time.Millisecond))
}

// testJobLaneWithEnd: a lane given with the end of an attempt (Finish.Lane,
// Reschedule.Lane) is recorded on the job and in its attempts log when none
// was stored; a lane stored already stays, and AnyAttempt ignores it.
func testJobLaneWithEnd(t *testing.T, s persistence.JobStore) {
	ctx := t.Context()
	done := persistence.Finish{Status: persistence.StatusSucceeded, Lane: "lane-1"}

	j := mustCreate(t, s, newJob(1))
	_, err := s.Claim(ctx, j.ID, "w1", time.Now())
	require.NoError(t, err)
	fin, err := s.Finish(ctx, j.ID, 1, done)
	require.NoError(t, err)
	require.Equal(t, "lane-1", fin.Lane)
	got, err := s.Get(ctx, j.ID)
	require.NoError(t, err)
	require.Equal(t, "lane-1", got.Lane)
	require.Len(t, got.AttemptsLog, 1)
	require.Equal(t, "lane-1", got.AttemptsLog[0].Lane)

	j = mustCreate(t, s, newJob(2))
	_, err = s.Claim(ctx, j.ID, "w1", time.Now())
	require.NoError(t, err)
	require.NoError(t, s.SetLane(ctx, j.ID, 1, "lane-0"))
	fin, err = s.Finish(ctx, j.ID, 1, done)
	require.NoError(t, err)
	require.Equal(t, "lane-0", fin.Lane, "a stored lane stays")

	j = mustCreate(t, s, newJob(3))
	_, err = s.Claim(ctx, j.ID, "w1", time.Now())
	require.NoError(t, err)
	fin, err = s.Finish(ctx, j.ID, persistence.AnyAttempt, persistence.Finish{Status: persistence.StatusCanceled,
		Reason: persistence.ReasonCanceled, Lane: "lane-1"})
	require.NoError(t, err)
	require.Empty(t, fin.Lane, "AnyAttempt cannot say whose lane it is")

	j = mustCreate(t, s, newJob(4))
	_, err = s.Claim(ctx, j.ID, "w1", time.Now())
	require.NoError(t, err)
	re, err := s.Reschedule(ctx, j.ID, 1, persistence.Reschedule{RunAt: time.Now().Add(time.Hour),
		Reason: persistence.ReasonJobError, Lane: "lane-2"})
	require.NoError(t, err)
	require.Empty(t, re.Lane, "the next attempt has no lane yet")
	require.Len(t, re.AttemptsLog, 1)
	require.Equal(t, "lane-2", re.AttemptsLog[0].Lane)
}

// testJobFinishFrom: Finish.From is a hint. A copy that is the stored row
// gives the end Finish gives without it; a copy the row has moved on from
// (another lane stored, another claim of the same attempt number, an
// ended attempt) is not written: the end is the row's, or refused as
// without the hint.
func testJobFinishFrom(t *testing.T, s persistence.JobStore) {
	ctx := t.Context()
	end := func(at time.Time, from *persistence.Job, lane string) persistence.Finish {
		return persistence.Finish{Status: persistence.StatusFailed, Reason: persistence.ReasonJobError, Error: "boom",
			Result: json.RawMessage(`{"n":1}`), Assets: []string{"a.png"}, At: at, Hub: "hub-1", Lane: lane, From: from}
	}
	requireEnd := func(t *testing.T, want, got persistence.Job) {
		t.Helper()
		requireJob(t, want, got)
		require.Len(t, got.AttemptsLog, len(want.AttemptsLog), "attempts log")
		for i := range want.AttemptsLog {
			requireAttempt(t, want.AttemptsLog[i], got.AttemptsLog[i])
		}
	}

	// The copy is the row: the end is the one Finish gives without it.
	for i, hinted := range []bool{false, true} {
		j := mustCreate(t, s, newJob(i+1))
		at := time.Now().In(zone)
		claimed, err := s.Claim(ctx, j.ID, "w1", at.Add(-time.Second))
		require.NoError(t, err)
		var from *persistence.Job
		if hinted {
			from = &claimed
		}
		f := end(at, from, "lane-1")
		fin, err := s.Finish(ctx, j.ID, 1, f)
		require.NoError(t, err, "hinted %v", hinted)
		want := claimed
		want.Status, want.Reason, want.Error, want.Result, want.Assets = f.Status, f.Reason, f.Error, f.Result, f.Assets
		want.Lane, want.FinishedAt = "lane-1", at
		want.AttemptsLog = []persistence.Attempt{{Attempt: 1, WorkerID: "w1", Lane: "lane-1", Hub: "hub-1",
			QueuedAt: claimed.CreatedAt, StartedAt: claimed.StartedAt, FinishedAt: at,
			Status: f.Status, Reason: f.Reason, Error: f.Error}}
		requireEnd(t, want, fin)
		got, err := s.Get(ctx, j.ID)
		require.NoError(t, err)
		requireEnd(t, want, got)
	}

	// A lane stored since the copy: the stored one stays, in the log too.
	j := mustCreate(t, s, newJob(3))
	claimed, err := s.Claim(ctx, j.ID, "w1", time.Now())
	require.NoError(t, err)
	require.NoError(t, s.SetLane(ctx, j.ID, 1, "lane-0"))
	fin, err := s.Finish(ctx, j.ID, 1, end(time.Now(), &claimed, "lane-9"))
	require.NoError(t, err)
	require.Equal(t, "lane-0", fin.Lane)
	require.Len(t, fin.AttemptsLog, 1)
	require.Equal(t, "lane-0", fin.AttemptsLog[0].Lane)

	// The same attempt number claimed again (rolled back, then claimed by
	// another worker): the end is the second claim's.
	j = mustCreate(t, s, newJob(4))
	first, err := s.Claim(ctx, j.ID, "w1", time.Now().Add(-time.Minute))
	require.NoError(t, err)
	require.NoError(t, s.Unclaim(ctx, j.ID, "w1", 1))
	second, err := s.Claim(ctx, j.ID, "w2", time.Now())
	require.NoError(t, err)
	_, err = s.Finish(ctx, j.ID, 1, end(time.Now(), &first, ""))
	require.NoError(t, err, "the attempt is running, on w2: the fence is the attempt's, not the copy's")
	got, err := s.Get(ctx, j.ID)
	require.NoError(t, err)
	require.Len(t, got.AttemptsLog, 1)
	require.Equal(t, "w2", got.AttemptsLog[0].WorkerID)
	requireTime(t, second.StartedAt, got.AttemptsLog[0].StartedAt, "the second claim's start")

	// An ended attempt: refused as without the copy, and left as it is.
	j = mustCreate(t, s, newJob(5))
	claimed, err = s.Claim(ctx, j.ID, "w1", time.Now())
	require.NoError(t, err)
	done, err := s.Finish(ctx, j.ID, 1, persistence.Finish{Status: persistence.StatusSucceeded})
	require.NoError(t, err)
	_, err = s.Finish(ctx, j.ID, 1, end(time.Now(), &claimed, ""))
	require.ErrorIs(t, err, persistence.ErrConflict)
	_, err = s.Finish(ctx, j.ID, 2, end(time.Now(), &claimed, ""))
	require.ErrorIs(t, err, persistence.ErrConflict, "another attempt than the copy's")
	got, err = s.Get(ctx, j.ID)
	require.NoError(t, err)
	requireEnd(t, done, got)
}
