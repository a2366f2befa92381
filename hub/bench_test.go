package hub

import (
	"context"
	"math"
	"sort"
	"testing"
	"time"

	"github.com/paprika-hub/paprika/persistence"
)

// startBenchHub starts a hub on the test config and one agent with lanes
// lanes, both stopped with b, and returns once the hub sees it connected.
func startBenchHub(b *testing.B, workerID string, lanes int) *Hub {
	h, err := New(testConfig(b), testLogger(b))
	if err != nil {
		b.Fatal(err)
	}
	if err := h.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { h.Stop(context.Background()) })
	b.Cleanup(startAgentB(b, h.URL(), workerID, lanes))
	for {
		if w, err := h.stores.Workers.Get(context.Background(), workerID); err == nil && w.Connected {
			return h
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// BenchmarkLaneRefill measures how soon a freed lane gets the next queued
// job (DESIGN.md target: p99 ≤ 50 ms; the source's sweep took up to 3 s).
// One worker with one lane, b.N jobs queued at once; the gap is the next
// job's started_at minus the previous job's finished_at, both stamped by
// the hub.
func BenchmarkLaneRefill(b *testing.B) {
	h := startBenchHub(b, "wb", 1)
	ctx := context.Background()
	n := max(b.N, 20)
	b.ResetTimer()
	var ids []string
	for i := 0; i < n; i++ {
		j, _, err := h.Submit(ctx, persistence.Job{Mode: "noop", Params: []byte(`{"sleep_ms":5}`), TimeoutS: 600, MaxAttempts: 1})
		if err != nil {
			b.Fatal(err)
		}
		ids = append(ids, j.ID)
	}
	jobs := make([]persistence.Job, 0, n)
	for _, id := range ids {
		for {
			j, err := h.stores.Jobs.Get(ctx, id)
			if err == nil && j.Status.Final() {
				jobs = append(jobs, j)
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	b.StopTimer()
	sort.Slice(jobs, func(i, j int) bool { return jobs[i].StartedAt.Before(jobs[j].StartedAt) })
	var gaps []time.Duration
	for i := 1; i < len(jobs); i++ {
		gaps = append(gaps, jobs[i].StartedAt.Sub(jobs[i-1].FinishedAt))
	}
	sort.Slice(gaps, func(i, j int) bool { return gaps[i] < gaps[j] })
	q := func(p float64) float64 {
		return float64(gaps[int(math.Ceil(p*float64(len(gaps))))-1].Microseconds()) / 1000
	}
	b.ReportMetric(q(0.5), "p50-ms")
	b.ReportMetric(q(0.99), "p99-ms")
}

// BenchmarkDelayedLateness measures how late a delayed job starts after
// its run_at when a lane is free (issue 16's goal: within 100 ms). Each
// of b.N jobs (at least 20) is due 100 ms after the previous one, so they
// come due one by one on a worker with free lanes; lateness is the hub's
// started_at minus the job's run_at.
func BenchmarkDelayedLateness(b *testing.B) {
	h := startBenchHub(b, "wd", 4)
	ctx := context.Background()
	n := max(b.N, 20)
	b.ResetTimer()
	base := time.Now().Add(500 * time.Millisecond)
	ids := make([]string, 0, n)
	for i := 0; i < n; i++ {
		j, _, err := h.Submit(ctx, persistence.Job{Mode: "noop", TimeoutS: 600, MaxAttempts: 1,
			RunAt: base.Add(time.Duration(i) * 100 * time.Millisecond)})
		if err != nil {
			b.Fatal(err)
		}
		ids = append(ids, j.ID)
	}
	late := make([]time.Duration, 0, n)
	for _, id := range ids {
		for {
			j, err := h.stores.Jobs.Get(ctx, id)
			if err == nil && j.Status.Final() {
				if j.StartedAt.Before(j.RunAt) {
					b.Fatalf("job %s started %s before its run_at %s", id, j.StartedAt, j.RunAt)
				}
				late = append(late, j.StartedAt.Sub(j.RunAt))
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	b.StopTimer()
	sort.Slice(late, func(i, j int) bool { return late[i] < late[j] })
	q := func(p float64) float64 {
		return float64(late[int(math.Ceil(p*float64(len(late))))-1].Microseconds()) / 1000
	}
	b.ReportMetric(q(0.5), "p50-ms")
	b.ReportMetric(q(0.99), "p99-ms")
}
