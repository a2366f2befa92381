package mysql_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/persistence"
	"github.com/paprika-hub/paprika/persistence/mysql"
	"github.com/paprika-hub/paprika/persistence/storetest"
)

// BenchmarkClaimFinish is one job's store writes on the hot path: create,
// claim, finish (the finish writes the attempts log since migration 3).
func BenchmarkClaimFinish(b *testing.B) {
	ctx := b.Context()
	s, err := mysql.Open(ctx, storetest.MySQLDatabase(b))
	require.NoError(b, err)
	b.Cleanup(func() { _ = s.Close() })
	b.ResetTimer()
	for range b.N {
		j, _, err := s.Create(ctx, persistence.Job{Mode: "noop", MaxAttempts: 1, TimeoutS: 60})
		require.NoError(b, err)
		_, err = s.Claim(ctx, j.ID, "w1", time.Now())
		require.NoError(b, err)
		_, err = s.Finish(ctx, j.ID, 1, persistence.Finish{Status: persistence.StatusSucceeded})
		require.NoError(b, err)
	}
}
