package mysql_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/persistence"
	"github.com/paprika-hub/paprika/persistence/mysql"
	"github.com/paprika-hub/paprika/persistence/storetest"
)

// TestCreateMany: CreateMany's contract, with one-trip statements and
// without them (interpolateParams=false: one create after another).
func TestCreateMany(t *testing.T) {
	t.Parallel()
	storetest.RunCreateMany(t, func(t *testing.T) storetest.BatchCreator {
		s, _ := openStore(t)
		return s
	})
	t.Run("PreparedStatements", func(t *testing.T) {
		t.Parallel()
		db := newTestDB(t)
		dsn := db.dsn + "?interpolateParams=false"
		if strings.Contains(db.dsn, "?") {
			dsn = db.dsn + "&interpolateParams=false"
		}
		s, err := mysql.Open(t.Context(), dsn)
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		out := s.CreateMany(context.Background(), []persistence.Job{{Mode: "noop", TimeoutS: 60}, {Mode: "noop", TimeoutS: 60}})
		for _, r := range out {
			require.NoError(t, r.Err)
			require.True(t, r.Created)
		}
	})
}

// TestCreateManyFewTrips: a batch of 300 jobs is one multi-row INSERT a
// round trip (a few, at a batch's bounds), not 300.
func TestCreateManyFewTrips(t *testing.T) {
	t.Parallel()
	s, _ := openStore(t)
	jobs := make([]persistence.Job, 300)
	for i := range jobs {
		jobs[i] = persistence.Job{Mode: "noop", MaxAttempts: 1, TimeoutS: 60}
	}
	_, _, before := mysql.Trips(s)
	for _, r := range s.CreateMany(context.Background(), jobs) {
		require.NoError(t, r.Err)
		require.True(t, r.Created)
	}
	_, _, after := mysql.Trips(s)
	require.LessOrEqual(t, after-before, int64(4), "300 creates in a few trips")
}
