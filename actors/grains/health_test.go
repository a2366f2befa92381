package grains

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/persistence"
)

// testHealth are the thresholds of these tests.
var testHealth = HealthRule{MaxLaneRSSMB: 2048, MaxLaneCrashes10m: 3, MaxLaneRestarts10m: 5, MinShmFreeMB: 64}

// sick is an idle candidate whose lanes (4) and shm the worker grain judged
// under testHealth from the given report.
func sick(id string, now time.Time, lanes []persistence.LaneHealth, shm *int64) *Candidate {
	return sickUnder(testHealth, id, now, lanes, shm)
}

// sickUnder is sick judged under rule.
func sickUnder(rule HealthRule, id string, now time.Time, lanes []persistence.LaneHealth, shm *int64) *Candidate {
	w := persistence.WorkerInfo{Lanes: make([]persistence.LaneStatus, len(lanes)), ShmFreeMB: shm}
	for i := range lanes {
		w.Lanes[i].Health = &lanes[i]
	}
	n, reason := rule.judge(&w)
	c := idle(id, now)
	c.UnhealthyLanes, c.UnhealthyReason, c.ShmLow = n, reason, w.Skipped == persistence.HealthSkipShm
	c.unhealthyIdx = healthIndex(reason)
	return c
}

func i64(v int64) *int64 { return &v }

// TestHealthFilter: a worker past each threshold is skipped (all its lanes
// unhealthy, or /dev/shm under the minimum) and counted under its reason; a
// threshold just not reached, a threshold at 0, and a worker reporting no
// health pass.
func TestHealthFilter(t *testing.T) {
	now := time.Now()
	ok := persistence.LaneHealth{RSSMB: 500, Crashes10m: 2, Restarts10m: 4}
	all := func(h persistence.LaneHealth) []persistence.LaneHealth {
		return []persistence.LaneHealth{h, h, h, h}
	}
	cases := []struct {
		name   string
		lanes  []persistence.LaneHealth
		shm    *int64
		rule   HealthRule
		want   bool
		reason string
	}{
		{"healthy, just under every threshold", all(persistence.LaneHealth{RSSMB: 2048, Crashes10m: 2, Restarts10m: 4}), i64(64), testHealth, true, ""},
		{"no health reported (simulated driver)", nil, nil, testHealth, true, ""},
		{"rss over the maximum", all(persistence.LaneHealth{RSSMB: 2049}), i64(512), testHealth, false, persistence.HealthSkipRSS},
		{"crashes at the maximum", all(persistence.LaneHealth{Crashes10m: 3}), i64(512), testHealth, false, persistence.HealthSkipCrashes},
		{"restarts at the maximum", all(persistence.LaneHealth{Restarts10m: 5}), i64(512), testHealth, false, persistence.HealthSkipRestarts},
		{"shm under the minimum", all(ok), i64(63), testHealth, false, persistence.HealthSkipShm},
		{"shm under the minimum, no lane health", nil, i64(0), testHealth, false, persistence.HealthSkipShm},
		{"crashes past a threshold that is off", all(persistence.LaneHealth{Crashes10m: 99}), i64(0), HealthRule{}, true, ""},
		{"three of four lanes unhealthy: one free", []persistence.LaneHealth{{Crashes10m: 9}, {RSSMB: 9999}, {Crashes10m: 3}, ok}, nil, testHealth, true, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := sickUnder(tc.rule, "w1", now, tc.lanes, tc.shm)
			rule := testRule
			rule.Skips = new(HealthSkips)
			got := rule.PickWorker([]*Candidate{c}, "noop", now, rand.New(rand.NewPCG(1, 2)))
			require.Equal(t, tc.want, got != nil)
			for k, name := range persistence.HealthSkipReasons {
				want := int64(0)
				if name == tc.reason {
					want = 1
				}
				require.Equal(t, want, rule.Skips[k].Load(), "skips of %s", name)
			}
		})
	}
}

// TestHealthUnhealthyLanesCountAsTaken: a worker's unhealthy lanes shrink
// its free lanes (the worker picks its own lane); the commonest reason
// names the skip.
func TestHealthUnhealthyLanesCountAsTaken(t *testing.T) {
	now := time.Now()
	c := sick("w1", now, []persistence.LaneHealth{{Crashes10m: 3}, {Crashes10m: 4}, {RSSMB: 4096}, {}}, nil)
	require.Equal(t, 3, c.UnhealthyLanes)
	require.Equal(t, persistence.HealthSkipCrashes, c.UnhealthyReason)
	rule := testRule
	rule.Skips = new(HealthSkips)
	rng := rand.New(rand.NewPCG(1, 2))
	require.NotNil(t, rule.PickWorker([]*Candidate{c}, "noop", now, rng), "one healthy lane is free")
	c.InFlight = 1
	require.Nil(t, rule.PickWorker([]*Candidate{c}, "noop", now, rng), "the healthy lane is taken")
	require.EqualValues(t, 1, rule.Skips[healthIndex(persistence.HealthSkipCrashes)].Load())
	c.Drivers = []string{"simulated"}
	require.Nil(t, rule.PickWorker([]*Candidate{c}, "fetch", now, rng))
	require.EqualValues(t, 1, rule.Skips[healthIndex(persistence.HealthSkipCrashes)].Load(),
		"a worker that cannot run the mode anyway is not a health skip")
}

// TestHealthTiesStayRandom: among 10 equal workers of which 4 are
// unhealthy, picks spread over the 6 healthy ones only, evenly (chi-square
// over 5 degrees of freedom under 20.5, p = 0.001, for each of 20 seeds).
func TestHealthTiesStayRandom(t *testing.T) {
	now := time.Now()
	for seed := uint64(0); seed < 20; seed++ {
		rng := rand.New(rand.NewPCG(seed, seed*7+1))
		cands := make([]*Candidate, 10)
		for i := range cands {
			switch i {
			case 1:
				cands[i] = sick(fmt.Sprintf("w%d", i), now, nil, i64(1))
			case 4, 6, 9:
				bad := persistence.LaneHealth{Restarts10m: 7}
				cands[i] = sick(fmt.Sprintf("w%d", i), now, []persistence.LaneHealth{bad, bad, bad, bad}, i64(512))
			default:
				cands[i] = sick(fmt.Sprintf("w%d", i), now, []persistence.LaneHealth{{RSSMB: 100}, {}, {}, {}}, i64(512))
			}
		}
		counts := map[string]int{}
		for i := 0; i < 600; i++ {
			counts[testRule.PickWorker(cands, "noop", now, rng).ID]++
		}
		require.Len(t, counts, 6, "seed %d: %v", seed, counts)
		chi := 0.0
		for _, n := range counts {
			d := float64(n) - 100
			chi += d * d / 100
		}
		require.Less(t, chi, 20.5, "seed %d counts %v", seed, counts)
		for _, id := range []string{"w1", "w4", "w6", "w9"} {
			require.Zero(t, counts[id], "unhealthy %s picked", id)
		}
	}
}

// BenchmarkPickWorker1000Health is BenchmarkPickWorker1000 with a tenth of
// the workers carrying two unhealthy lanes and one in fifty short of
// /dev/shm, skips counted: the health filter's cost when it fires.
func BenchmarkPickWorker1000Health(b *testing.B) {
	now := time.Now()
	rng := rand.New(rand.NewPCG(5, 6))
	cands := make([]*Candidate, 1000)
	for i := range cands {
		c := idle(fmt.Sprintf("w%d", i), now)
		c.InFlight = i % 4
		switch {
		case i%50 == 0:
			c.DiskPct = 95
		case i%50 == 25:
			c.ShmLow = true
		case i%10 == 3:
			c.UnhealthyLanes, c.UnhealthyReason = 2, persistence.HealthSkipRSS
			c.unhealthyIdx = healthIndex(c.UnhealthyReason)
		}
		cands[i] = c
	}
	rule := testRule
	rule.Skips = new(HealthSkips)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if rule.PickWorker(cands, "noop", now, rng) == nil {
			b.Fatal("no pick")
		}
	}
}
