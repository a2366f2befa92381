package grains

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/paprika-hub/paprika/messages"
)

// p99 of sorted-in-place latencies.
func p99(lat []time.Duration) time.Duration {
	slices.Sort(lat)
	return lat[int(math.Ceil(0.99*float64(len(lat))))-1]
}

// BenchmarkPlacementTenants: p99 of one placement (Next + Take, pick
// excluded) with 100,000 queued jobs across 1,000 tenants of mixed weights,
// a max_running check on, against pick_worker over 1,000 workers in the
// same run (the goal: placement within the same 100 µs).
func BenchmarkPlacementTenants(b *testing.B) {
	const queued, tenants = 100_000, 1000
	rng := rand.New(rand.NewPCG(3, 4))
	weights := map[string]float64{}
	for i := range tenants {
		if i%10 == 0 {
			weights[fmt.Sprintf("t%d", i)] = float64(1 + i%7)
		}
	}
	running := map[string]int{}
	q := newJobQueue(30 * time.Second)
	q.tenants = tenantPolicy{weights: weights, capped: func(t string) bool { return running[t] >= 50 }}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	job := func(i int) queuedJob {
		return queuedJob{id: fmt.Sprintf("j%d", i), mode: messages.ModeNoop, tenant: fmt.Sprintf("t%d", rng.IntN(tenants)),
			created: start.Add(time.Duration(i) * time.Millisecond), priority: rng.IntN(10)}
	}
	for i := range queued {
		q.PushBack(job(i))
	}
	now := start.Add(queued * time.Millisecond)
	n := max(b.N, 2000)
	lat := make([]time.Duration, n)
	b.ResetTimer()
	for i := range n {
		t0 := time.Now()
		j, _, ok := q.Next(now)
		if ok {
			q.Take(j.id)
		}
		lat[i] = time.Since(t0)
		if !ok {
			b.Fatal("nothing placed")
		}
		q.PushBack(job(queued + i)) // the queue stays at 100,000
		now = now.Add(time.Millisecond)
	}
	b.StopTimer()
	place := p99(lat)

	// pick_worker over 1,000 workers, the same way BenchmarkPickWorker1000 does.
	cands := make([]*Candidate, 1000)
	for i := range cands {
		c := idle(fmt.Sprintf("w%d", i), now)
		c.InFlight = i % 4
		cands[i] = c
	}
	prng := rand.New(rand.NewPCG(5, 6))
	for i := range n {
		t0 := time.Now()
		if testRule.PickWorker(cands, "noop", now, prng) == nil {
			b.Fatal("no pick")
		}
		lat[i] = time.Since(t0)
	}
	pick := p99(lat)
	b.ReportMetric(float64(place.Nanoseconds())/1000, "p99-place-µs")
	b.ReportMetric(float64(pick.Nanoseconds())/1000, "p99-pick1000-µs")
	b.ReportMetric(float64(place)/float64(pick), "place/pick")
}

// BenchmarkQueuedJobMemory: heap bytes per queued job, 100,000 jobs over
// 1,000 tenants, against the same jobs all in the default tenant (the
// queue as it was before tenants: one lane per class).
func BenchmarkQueuedJobMemory(b *testing.B) {
	measure := func(tenants int) float64 {
		ids := make([]string, 100_000) // ids and tenant names exist before the queue (the messages hold them)
		names := make([]string, tenants)
		for i := range ids {
			ids[i] = fmt.Sprintf("j%07d", i)
		}
		for i := range names {
			names[i] = fmt.Sprintf("t%d", i)
		}
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		q := newJobQueue(30 * time.Second)
		for i, id := range ids {
			q.PushBack(queuedJob{id: id, mode: messages.ModeNoop, tenant: names[i%tenants], priority: i % 10})
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(&q)
		return float64(after.HeapAlloc-before.HeapAlloc) / float64(len(ids))
	}
	var one, many float64
	for range b.N {
		one, many = measure(1), measure(1000)
	}
	b.ReportMetric(one, "B/job-1-tenant")
	b.ReportMetric(many, "B/job-1000-tenants")
}
