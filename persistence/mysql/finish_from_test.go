package mysql_test

import (
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
