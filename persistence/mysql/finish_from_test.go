package mysql_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/persistence"
	"github.com/paprika-hub/paprika/persistence/mysql"
)

// TestFinishFromIsOneRoundTrip: an end computed from the caller's copy of
// the row is a conditional UPDATE, read back in the same round trip; one
// computed from the row takes a second (the row read under its lock, then
// written). A copy the row has moved on from costs its miss, then the
// second way, and the end is the row's.
func TestFinishFromIsOneRoundTrip(t *testing.T) {
	s, _ := openStore(t)
	ctx := t.Context()
	finish := func(from *persistence.Job, lane string) (persistence.Job, int64) {
		t.Helper()
		j, _, err := s.Create(ctx, persistence.Job{Mode: "noop", MaxAttempts: 1, TimeoutS: 60})
		require.NoError(t, err)
		claimed, err := s.Claim(ctx, j.ID, "w1", time.Now())
		require.NoError(t, err)
		if lane != "" {
			require.NoError(t, s.SetLane(ctx, j.ID, 1, lane)) // stored after the copy
		}
		if from != nil {
			*from = claimed
		}
		before := mysql.TxRoundTrips(s)
		fin, err := s.Finish(ctx, j.ID, 1, persistence.Finish{Status: persistence.StatusSucceeded, Lane: "lane-1", From: from})
		require.NoError(t, err)
		return fin, mysql.TxRoundTrips(s) - before
	}

	fin, trips := finish(nil, "")
	require.Equal(t, int64(2), trips, "computed from the row")
	require.Equal(t, "lane-1", fin.Lane)

	fin, trips = finish(&persistence.Job{}, "")
	require.Equal(t, int64(1), trips, "computed from the copy")
	require.Equal(t, "lane-1", fin.Lane)
	require.Len(t, fin.AttemptsLog, 1)
	require.Equal(t, "lane-1", fin.AttemptsLog[0].Lane)

	fin, trips = finish(&persistence.Job{}, "lane-0")
	require.Equal(t, int64(3), trips, "the copy missed: then from the row")
	require.Equal(t, "lane-0", fin.Lane)
	require.Equal(t, "lane-0", fin.AttemptsLog[0].Lane)
}

// TestFinishRidesAClaim: with a finish wait, an end waits for the
// transaction the next claim leads and commits with it: two transitions,
// one round trip. Alone, it goes once its wait passed.
func TestFinishRidesAClaim(t *testing.T) {
	s, _ := openStore(t, mysql.WithFinishWait(time.Minute)) // the claim comes long before
	ctx := t.Context()
	newRunning := func() persistence.Job {
		j, _, err := s.Create(ctx, persistence.Job{Mode: "noop", MaxAttempts: 1, TimeoutS: 60})
		require.NoError(t, err)
		claimed, err := s.Claim(ctx, j.ID, "w1", time.Now())
		require.NoError(t, err)
		return claimed
	}
	running := newRunning()
	next, _, err := s.Create(ctx, persistence.Job{Mode: "noop", MaxAttempts: 1, TimeoutS: 60})
	require.NoError(t, err)

	before := mysql.TxRoundTrips(s)
	type end struct {
		j   persistence.Job
		err error
	}
	ended := make(chan end, 1)
	go func() {
		j, err := s.Finish(ctx, running.ID, 1, persistence.Finish{Status: persistence.StatusSucceeded, Lane: "0", From: &running})
		ended <- end{j, err}
	}()
	require.Eventually(t, func() bool { return mysql.PendingTxs(s) == 1 }, 10*time.Second, time.Millisecond,
		"the end waits for company")
	_, err = s.Claim(ctx, next.ID, "w1", time.Now())
	require.NoError(t, err)
	e := <-ended
	require.NoError(t, e.err)
	require.Equal(t, persistence.StatusSucceeded, e.j.Status)
	require.Equal(t, "0", e.j.Lane)
	require.Equal(t, int64(1), mysql.TxRoundTrips(s)-before, "the claim's round trip carried the end")

	// Alone, with a short wait: it goes by itself.
	s2, _ := openStore(t, mysql.WithFinishWait(time.Millisecond))
	j, _, err := s2.Create(ctx, persistence.Job{Mode: "noop", MaxAttempts: 1, TimeoutS: 60})
	require.NoError(t, err)
	claimed, err := s2.Claim(ctx, j.ID, "w1", time.Now())
	require.NoError(t, err)
	fctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	fin, err := s2.Finish(fctx, j.ID, 1, persistence.Finish{Status: persistence.StatusSucceeded, From: &claimed})
	require.NoError(t, err)
	require.Equal(t, persistence.StatusSucceeded, fin.Status)
}

// TestRescheduleFromIsOneRoundTrip: as TestFinishFromIsOneRoundTrip, for
// an attempt tried again later.
func TestRescheduleFromIsOneRoundTrip(t *testing.T) {
	s, _ := openStore(t)
	ctx := t.Context()
	for _, tc := range []struct {
		from  bool
		trips int64
	}{{false, 2}, {true, 1}} {
		j, _, err := s.Create(ctx, persistence.Job{Mode: "noop", MaxAttempts: 3, TimeoutS: 60})
		require.NoError(t, err)
		claimed, err := s.Claim(ctx, j.ID, "w1", time.Now())
		require.NoError(t, err)
		r := persistence.Reschedule{RunAt: time.Now().Add(time.Minute), Reason: persistence.ReasonJobError, Lane: "lane-1"}
		if tc.from {
			r.From = &claimed
		}
		before := mysql.TxRoundTrips(s)
		got, err := s.Reschedule(ctx, j.ID, 1, r)
		require.NoError(t, err)
		require.Equal(t, tc.trips, mysql.TxRoundTrips(s)-before, "with the copy: %v", tc.from)
		require.Equal(t, persistence.StatusScheduled, got.Status)
		require.Empty(t, got.WorkerID)
		require.Len(t, got.AttemptsLog, 1)
		require.Equal(t, "lane-1", got.AttemptsLog[0].Lane)
	}
}

// TestTwoTransitionsOfOneJobInOneTrip: a lane write and the end of one
// job, both matching, share a trip with another job's claim, and each is
// answered as matched — the end's token overwrites the lane write's, so
// those two are told by their row counts.
func TestTwoTransitionsOfOneJobInOneTrip(t *testing.T) {
	s, _ := openStore(t, mysql.WithFinishWait(time.Minute)) // both wait for the claim
	ctx := t.Context()
	j, _, err := s.Create(ctx, persistence.Job{Mode: "noop", MaxAttempts: 1, TimeoutS: 60})
	require.NoError(t, err)
	running, err := s.Claim(ctx, j.ID, "w1", time.Now())
	require.NoError(t, err)
	next, _, err := s.Create(ctx, persistence.Job{Mode: "noop", MaxAttempts: 1, TimeoutS: 60})
	require.NoError(t, err)

	laned := make(chan error, 1)
	go func() { laned <- s.SetLane(ctx, j.ID, 1, "0") }()
	require.Eventually(t, func() bool { return mysql.PendingTxs(s) == 1 }, 10*time.Second, time.Millisecond)
	copyWithLane := running
	copyWithLane.Lane = "0" // as the grain's copy once its lane write is sent
	type end struct {
		j   persistence.Job
		err error
	}
	ended := make(chan end, 1)
	go func() {
		fin, err := s.Finish(ctx, j.ID, 1, persistence.Finish{Status: persistence.StatusSucceeded, Lane: "0", From: &copyWithLane})
		ended <- end{fin, err}
	}()
	require.Eventually(t, func() bool { return mysql.PendingTxs(s) == 2 }, 10*time.Second, time.Millisecond)

	before := mysql.TxRoundTrips(s)
	claimed, err := s.Claim(ctx, next.ID, "w1", time.Now())
	require.NoError(t, err)
	require.Equal(t, persistence.StatusRunning, claimed.Status)
	require.NoError(t, <-laned, "the lane write matched")
	e := <-ended
	require.NoError(t, e.err, "the end matched")
	require.Equal(t, persistence.StatusSucceeded, e.j.Status)
	require.Equal(t, "0", e.j.Lane)
	require.Equal(t, int64(1), mysql.TxRoundTrips(s)-before, "all three in one round trip")

	// A transition that loses its condition in a stamped trip is still
	// told apart: the job ended, so a second end is refused.
	_, err = s.Finish(ctx, j.ID, 1, persistence.Finish{Status: persistence.StatusSucceeded, From: &copyWithLane})
	require.Error(t, err)
	got, err := s.Get(ctx, j.ID)
	require.NoError(t, err)
	require.Equal(t, persistence.StatusSucceeded, got.Status)
}
