package bolt_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/persistence"
	"github.com/paprika-hub/paprika/persistence/bolt"
)

// BenchmarkJobLifeParallel is a busy hub's store traffic: 32 jobs at a
// time through create (with a time-ordered idempotency key, as the SDK
// sends), claim and finish, the writes the group committer joins. B/op is
// what one job's life allocates, most of it bbolt materializing the pages
// each commit touches, which the hub's GC then pays for.
func BenchmarkJobLifeParallel(b *testing.B) {
	ctx := b.Context()
	s, err := bolt.Open(filepath.Join(b.TempDir(), "jobs.db"))
	require.NoError(b, err)
	b.Cleanup(func() { _ = s.Close() })
	b.SetParallelism(16) // × GOMAXPROCS goroutines
	b.ReportAllocs()
	start := bolt.Commits(s)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			shortLife(ctx, b, s)
		}
	})
	b.ReportMetric(float64(bolt.Commits(s)-start)/float64(b.N), "commits/job")
}

// shortLife takes one new job through a no-op's store writes: create
// (with a time-ordered idempotency key, as the SDK sends), claim, finish.
func shortLife(ctx context.Context, tb testing.TB, s *bolt.JobStore) {
	j, _, err := s.Create(ctx, persistence.Job{Mode: "noop", MaxAttempts: 1, TimeoutS: 60,
		IdempotencyKey: "pk-" + persistence.NewJobID()})
	require.NoError(tb, err)
	_, err = s.Claim(ctx, j.ID, "w1", time.Now())
	require.NoError(tb, err)
	_, err = s.Finish(ctx, j.ID, 1, persistence.Finish{Status: persistence.StatusSucceeded, Lane: "0"})
	require.NoError(tb, err)
}
