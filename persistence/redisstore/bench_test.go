package redisstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/paprika-hub/paprika/persistence"
)

// BenchmarkLogWrite measures Write as the hub's log flusher calls it: one
// call carries a 5-line batch of each of 200 jobs (200 workers × 25
// lines/s at the 100 ms tick of DESIGN.md's target). Reports lines/s and
// allocations per call. The lists are emptied every 256 calls, outside the
// timer, so Redis memory stays flat.
func BenchmarkLogWrite(b *testing.B) {
	const jobs, perBatch = 200, 5
	tb := setup(b)
	s := NewLogStore(tb.client, WithPrefix(tb.prefix))
	ctx := context.Background()
	ids := make([]string, jobs)
	for j := range ids {
		ids[j] = fmt.Sprintf("job-%03d", j)
	}
	lines := make([]string, perBatch)
	for i := range lines {
		lines[i] = fmt.Sprintf("2026-01-02T03:04:05.%03dZ INFO navigate https://example.com/page/%d done in 35ms", i, i)
	}
	batches := make([]persistence.LogBatch, jobs)
	for j := range batches {
		batches[j] = persistence.LogBatch{JobID: ids[j], Lines: lines}
	}
	var from int64
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	var paused time.Duration
	for i := 0; i < b.N; i++ {
		if i%256 == 255 {
			b.StopTimer()
			t0 := time.Now()
			deletePrefix(b, tb.client, tb.prefix)
			from = 0
			paused += time.Since(t0)
			b.StartTimer()
		}
		for j := range batches {
			batches[j].From = from
		}
		if err := s.Write(ctx, batches); err != nil {
			b.Fatal(err)
		}
		from += perBatch
	}
	b.StopTimer()
	elapsed := time.Since(start) - paused
	b.ReportMetric(float64(b.N*jobs*perBatch)/elapsed.Seconds(), "lines/s")
}
