package mysql_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/persistence"
	"github.com/paprika-hub/paprika/persistence/mysql"
)

// TestMigrateRetriesKeepsOldRows: a database a hub left at migration 2
// with a job in it gains run_at, retry_backoff and attempts_log; the old
// job reads as never delayed with no log, the statements are safe to run
// again, and a new scheduled job keeps its fields.
func TestMigrateRetriesKeepsOldRows(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, db := openOldDatabase(t, 2, persistence.StatusFailed)
	old, err := s.Get(ctx, "old-1")
	require.NoError(t, err)
	require.True(t, old.RunAt.IsZero())
	require.Nil(t, old.RetryBackoff)
	require.Empty(t, old.AttemptsLog)
	for _, stmt := range mysql.AddJobRetries {
		_, err = db.admin.ExecContext(ctx, stmt)
		require.NoError(t, err, "run again: %s", stmt)
	}
	revived, err := s.Revive(ctx, "old-1", time.Now())
	require.NoError(t, err, "an old failed job can be retried")
	require.Equal(t, persistence.StatusQueued, revived.Status)

	runAt := time.Now().Add(time.Hour)
	j, _, err := s.Create(ctx, persistence.Job{Mode: "noop", Status: persistence.StatusScheduled, RunAt: runAt,
		RetryBackoff: &persistence.RetryBackoff{BaseS: 2, MaxS: 10}})
	require.NoError(t, err)
	got, err := s.Get(ctx, j.ID)
	require.NoError(t, err)
	require.Equal(t, persistence.StatusScheduled, got.Status)
	require.WithinDuration(t, runAt, got.RunAt, time.Microsecond)
	require.Equal(t, &persistence.RetryBackoff{BaseS: 2, MaxS: 10}, got.RetryBackoff)
}
