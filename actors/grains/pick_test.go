package grains

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var testRule = PickRule{AliveWindow: 120 * time.Second, DiskExcludePct: 90}

func idle(id string, now time.Time) *Candidate {
	return &Candidate{ID: id, Status: WorkerActive, Connected: true, LastSeen: now,
		MaxConcurrent: 4, Lanes: 4, DiskPct: 10, Drivers: []string{"simulated"}}
}

func TestPickWorkerFilters(t *testing.T) {
	now := time.Now()
	cases := []struct {
		name   string
		mutate func(c *Candidate)
		mode   string
		want   bool
	}{
		{"idle active worker is picked", func(*Candidate) {}, "noop", true},
		{"heartbeat older than the alive window", func(c *Candidate) { c.LastSeen = now.Add(-121 * time.Second) }, "noop", false},
		{"heartbeat just inside the alive window", func(c *Candidate) { c.LastSeen = now.Add(-119 * time.Second) }, "noop", true},
		{"socket closed", func(c *Candidate) { c.Connected = false }, "noop", false},
		{"draining", func(c *Candidate) { c.Status = WorkerDrain }, "noop", false},
		{"standby", func(c *Candidate) { c.Status = WorkerStandby }, "noop", false},
		{"no free slot", func(c *Candidate) { c.InFlight = 4 }, "noop", false},
		{"one free slot", func(c *Candidate) { c.InFlight = 3 }, "noop", true},
		{"no lanes and no browser (three 502s in a row)", func(c *Candidate) { c.Lanes = 0 }, "noop", false},
		{"no lanes but a single browser URL", func(c *Candidate) { c.Lanes = 0; c.HasBrowser = true }, "noop", true},
		{"disk at 90 %", func(c *Candidate) { c.DiskPct = 90 }, "noop", false},
		{"disk at 89.9 %", func(c *Candidate) { c.DiskPct = 89.9 }, "noop", true},
		{"browser mode on a simulated worker", func(*Candidate) {}, "fetch", false},
		{"browser mode on a chromium worker", func(c *Candidate) { c.Drivers = []string{"chromium"} }, "macro", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := idle("w1", now)
			tc.mutate(c)
			got := testRule.PickWorker([]*Candidate{c}, tc.mode, now, rand.New(rand.NewPCG(1, 2)))
			require.Equal(t, tc.want, got != nil)
		})
	}
}

func TestPickWorkerOrdersByLoadThenCapacity(t *testing.T) {
	now := time.Now()
	rng := rand.New(rand.NewPCG(1, 2))
	busy, light, big := idle("busy", now), idle("light", now), idle("big", now)
	busy.InFlight = 2
	light.InFlight = 1
	big.InFlight = 1
	big.MaxConcurrent = 8
	for i := 0; i < 50; i++ {
		require.Equal(t, "big", testRule.PickWorker([]*Candidate{busy, light, big}, "noop", now, rng).ID,
			"least in_flight first, then the larger max_concurrent")
	}
	big.InFlight = 3
	require.Equal(t, "light", testRule.PickWorker([]*Candidate{busy, light, big}, "noop", now, rng).ID)
}

// TestPickWorkerSpreadsTies: 1,000 picks over 10 idle workers must spread
// evenly (a deterministic order would put all 1,000 on the first). The
// chi-square statistic over 9 degrees of freedom exceeds 27.9 with
// probability 0.001; each of 20 seeds is checked, so the test fails only on
// a real bias.
func TestPickWorkerSpreadsTies(t *testing.T) {
	now := time.Now()
	for seed := uint64(0); seed < 20; seed++ {
		rng := rand.New(rand.NewPCG(seed, seed*7+1))
		cands := make([]*Candidate, 10)
		for i := range cands {
			cands[i] = idle(fmt.Sprintf("w%d", i), now)
		}
		counts := map[string]int{}
		for i := 0; i < 1000; i++ {
			counts[testRule.PickWorker(cands, "noop", now, rng).ID]++
		}
		chi := 0.0
		for _, c := range cands {
			d := float64(counts[c.ID]) - 100
			chi += d * d / 100
		}
		require.Less(t, chi, 27.9, "seed %d counts %v", seed, counts)
		var vals []int
		for _, v := range counts {
			vals = append(vals, v)
		}
		sort.Ints(vals)
		require.Len(t, vals, 10, "every worker got some")
		require.Greater(t, vals[0], 50)
		require.Less(t, vals[9], 150)
	}
}

// TestPickWorkerSameDecisionSeesIncrement: the scheduler raises in_flight at
// once after a pick; with that, consecutive picks fill workers evenly.
func TestPickWorkerSameDecisionSeesIncrement(t *testing.T) {
	now := time.Now()
	rng := rand.New(rand.NewPCG(3, 4))
	cands := []*Candidate{idle("a", now), idle("b", now), idle("c", now)}
	for i := 0; i < 12; i++ {
		c := testRule.PickWorker(cands, "noop", now, rng)
		require.NotNil(t, c)
		c.InFlight++
	}
	for _, c := range cands {
		require.Equal(t, 4, c.InFlight)
	}
	require.Nil(t, testRule.PickWorker(cands, "noop", now, rng), "every slot taken")
}

func BenchmarkPickWorker1000(b *testing.B) {
	now := time.Now()
	rng := rand.New(rand.NewPCG(5, 6))
	cands := make([]*Candidate, 1000)
	for i := range cands {
		c := idle(fmt.Sprintf("w%d", i), now)
		c.InFlight = i % 4
		if i%50 == 0 {
			c.DiskPct = 95
		}
		cands[i] = c
	}
	b.ReportAllocs()
	lat := make([]time.Duration, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if testRule.PickWorker(cands, "noop", now, rng) == nil {
			b.Fatal("no pick")
		}
		lat[i] = time.Since(t0)
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	p99 := lat[int(math.Ceil(0.99*float64(len(lat))))-1]
	b.ReportMetric(float64(p99.Nanoseconds())/1000, "p99-µs")
}

// TestPickWorkerNear: among the tied least-loaded, a worker linked to the
// job grain's hub is preferred (at random among such); a less-loaded
// worker elsewhere still wins; with no preference the draws are
// PickWorker's own, seed for seed.
func TestPickWorkerNear(t *testing.T) {
	now := time.Now()
	rng := rand.New(rand.NewPCG(3, 4))
	mk := func(id, hub string, inFlight int) *Candidate {
		c := idle(id, now)
		c.LinkHub, c.InFlight = hub, inFlight
		return c
	}
	a1, a2, b1, b2 := mk("a1", "hub-a", 0), mk("a2", "hub-a", 0), mk("b1", "hub-b", 0), mk("b2", "hub-b", 0)
	cands := []*Candidate{b1, a1, b2, a2}
	counts := map[string]int{}
	for range 1000 {
		counts[testRule.PickWorkerNear(cands, "noop", now, rng, "hub-a").ID]++
	}
	require.Zero(t, counts["b1"]+counts["b2"], "a tie goes to the job's hub: %v", counts)
	require.InDelta(t, 500, counts["a1"], 100, "spread among the near ones: %v", counts)

	a1.InFlight, a2.InFlight = 1, 1
	for range 100 {
		got := testRule.PickWorkerNear(cands, "noop", now, rng, "hub-a").ID
		require.Contains(t, []string{"b1", "b2"}, got, "the rank is never overruled")
	}
	require.Contains(t, []string{"a1", "a2", "b1", "b2"}, testRule.PickWorkerNear(cands, "noop", now, rng, "hub-c").ID)

	a1.InFlight, a2.InFlight = 0, 0
	r1, r2 := rand.New(rand.NewPCG(5, 6)), rand.New(rand.NewPCG(5, 6))
	for range 200 {
		require.Equal(t, testRule.PickWorker(cands, "noop", now, r1).ID, testRule.PickWorkerNear(cands, "noop", now, r2, "hub-c").ID,
			"no near candidate: the same draws as PickWorker")
	}
}
