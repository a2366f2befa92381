package mysql_test

import (
	"strings"
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

// BenchmarkJobLifeParallel is a busy hub's store traffic: 32 jobs at a
// time through create, read, claim, lane, finish and the log's holder
// read, which the store batches; with ?interpolateParams=false (the DSN)
// every call goes alone, for comparison; "from" ends each job from its
// claimed copy, as the job grain does (persistence.Finish.From).
func BenchmarkJobLifeParallel(b *testing.B) {
	for _, tc := range []struct {
		name, param string
		from        bool
	}{{"batched", "", false}, {"from", "", true}, {"alone", "interpolateParams=false", false}} {
		b.Run(tc.name, func(b *testing.B) {
			ctx := b.Context()
			dsn := storetest.MySQLDatabase(b)
			if tc.param != "" {
				dsn += "?" + tc.param
				if strings.Contains(dsn[:len(dsn)-len(tc.param)-1], "?") {
					dsn = dsn[:len(dsn)-len(tc.param)-1] + "&" + tc.param
				}
			}
			s, err := mysql.Open(ctx, dsn)
			require.NoError(b, err)
			b.Cleanup(func() { _ = s.Close() })
			b.SetParallelism(16) // × GOMAXPROCS goroutines
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					j, _, err := s.Create(ctx, persistence.Job{Mode: "noop", MaxAttempts: 1, TimeoutS: 60})
					require.NoError(b, err)
					_, err = s.Get(ctx, j.ID)
					require.NoError(b, err)
					claimed, err := s.Claim(ctx, j.ID, "w1", time.Now())
					require.NoError(b, err)
					require.NoError(b, s.SetLane(ctx, j.ID, 1, "0"))
					_, err = s.Get(ctx, j.ID)
					require.NoError(b, err)
					f := persistence.Finish{Status: persistence.StatusSucceeded}
					if tc.from {
						claimed.Lane = "0"
						f.From = &claimed
					}
					_, err = s.Finish(ctx, j.ID, 1, f)
					require.NoError(b, err)
				}
			})
			txs, gets, creates := mysql.Trips(s)
			b.ReportMetric(float64(txs+gets+creates)/float64(b.N), "batches/job")
			b.ReportMetric(float64(mysql.TxRoundTrips(s))/float64(b.N), "tx-trips/job")
		})
	}
}
