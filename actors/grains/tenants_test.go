package grains

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/messages"
)

// place takes n placements from q at now (each charged to its tenant),
// refilling each backlogged tenant with refill, and counts them per tenant.
func placeN(q *jobQueue, n int, now time.Time, refill func(tenant string)) map[string]int {
	got := map[string]int{}
	for range n {
		j, _, ok := q.Next(now)
		if !ok {
			break
		}
		got[j.tenant]++
		q.Take(j.id)
		if refill != nil {
			refill(j.tenant)
		}
	}
	return got
}

// TestTenantSharesFollowWeights: with every tenant backlogged, 10,000
// placements split by weight within 5 % (the bound is one stride each).
func TestTenantSharesFollowWeights(t *testing.T) {
	weights := map[string]float64{"a": 5, "b": 3, "c": 1, "": 1}
	q := newJobQueue(30 * time.Second)
	q.tenants = tenantPolicy{weights: weights}
	rng := rand.New(rand.NewPCG(1, 2))
	seq := 0
	push := func(tenant string) {
		seq++
		q.PushBack(queuedJob{id: fmt.Sprintf("j%d", seq), mode: messages.ModeNoop, tenant: tenant,
			created: t0.Add(time.Duration(seq) * time.Millisecond), priority: rng.IntN(10)})
	}
	for tenant := range weights {
		for range 50 {
			push(tenant)
		}
	}
	const n = 10_000
	got := placeN(&q, n, t0.Add(time.Hour), push)
	sum := 0.0
	for _, w := range weights {
		sum += w
	}
	worst := 0.0
	for tenant, w := range weights {
		want := n * w / sum
		worst = max(worst, math.Abs(float64(got[tenant])-want)/want)
		require.InDelta(t, want, float64(got[tenant]), 0.05*want, "tenant %q: %d of %d placements", tenant, got[tenant], n)
		require.LessOrEqual(t, math.Abs(want-float64(got[tenant])), 2*sum, "within a stride's bound of its share")
	}
	t.Logf("worst share error over %d placements: %.3f %%", n, 100*worst)
}

// TestTenantFloodDoesNotStarveLateTenant: a tenant that queued 500 jobs
// first gets no more than its share once another tenant's jobs arrive, and
// an idle tenant banks no credit.
func TestTenantFloodDoesNotStarveLateTenant(t *testing.T) {
	q := newJobQueue(30 * time.Second)
	for i := range 500 {
		q.PushBack(queuedJob{id: fmt.Sprintf("flood%d", i), tenant: "flood", created: t0.Add(time.Duration(i) * time.Millisecond), priority: 5})
	}
	// 100 placements of the flood alone: then the late tenant arrives.
	require.Equal(t, map[string]int{"flood": 100}, placeN(&q, 100, t0.Add(time.Hour), nil))
	for i := range 20 {
		q.PushBack(queuedJob{id: fmt.Sprintf("late%d", i), tenant: "late", created: t0.Add(time.Minute), priority: 5})
	}
	// Equal weights: the next 40 placements alternate (within one).
	got := placeN(&q, 40, t0.Add(time.Hour), nil)
	require.InDelta(t, 20, got["late"], 1)
	require.InDelta(t, 20, got["flood"], 1)
}

// TestTenantPrioritiesWithinTenant: a tenant's own jobs still go by
// priority, then age; fairness decides only whose turn it is.
func TestTenantPrioritiesWithinTenant(t *testing.T) {
	q := newJobQueue(0)
	for i, p := range []int{1, 9, 5, 9, 0} {
		q.PushBack(queuedJob{id: fmt.Sprintf("a%d", i), tenant: "a", created: t0.Add(time.Duration(i) * time.Second), priority: p})
		q.PushBack(queuedJob{id: fmt.Sprintf("b%d", i), tenant: "b", created: t0.Add(time.Duration(i) * time.Second), priority: 9 - p})
	}
	var a, b []string
	for {
		j, _, ok := q.Next(t0)
		if !ok {
			break
		}
		if j.tenant == "a" {
			a = append(a, j.id)
		} else {
			b = append(b, j.id)
		}
		q.Take(j.id)
	}
	require.Equal(t, []string{"a1", "a3", "a2", "a0", "a4"}, a)
	require.Equal(t, []string{"b4", "b0", "b2", "b1", "b3"}, b)
}

// TestTenantAgingBoundHolds: a priority-0 job under a saturating stream of
// priority-9 jobs of its own tenant, with another tenant backlogged too,
// is placed once it has aged to 9 and the older 9s of its tenant are gone:
// within 9 × aging plus its tenant's share of the placements.
func TestTenantAgingBoundHolds(t *testing.T) {
	const aging = time.Second
	q := newJobQueue(aging)
	now := t0
	seq := 0
	push := func(tenant string, prio int) {
		seq++
		q.PushBack(queuedJob{id: fmt.Sprintf("%s%d", tenant, seq), tenant: tenant, created: now, priority: prio})
	}
	q.PushBack(queuedJob{id: "low", tenant: "a", created: now, priority: 0})
	for range 5 {
		push("a", 9)
		push("b", 9)
	}
	// 10 placements a tick (5 per tenant) and 5 new 9s a tenant: saturated.
	for tick := 0; ; tick++ {
		require.Less(t, tick, 200, "the priority-0 job starved")
		for range 5 {
			push("a", 9)
			push("b", 9)
		}
		placed := false
		for range 10 {
			j, _, ok := q.Next(now)
			require.True(t, ok)
			q.Take(j.id)
			placed = placed || j.id == "low"
		}
		if placed {
			// Effective 9 after 9 s; the tenant's older 9s (at most the
			// 5 queued at start) go before it at 5 a second.
			require.LessOrEqual(t, now.Sub(t0), 9*aging+2*time.Second)
			return
		}
		now = now.Add(100 * time.Millisecond)
	}
}

// TestTenantMaxRunningHoldsJobs: a tenant at max_running is passed over,
// others go, and it gets its turn (no burst) when a job ends.
func TestTenantMaxRunningHoldsJobs(t *testing.T) {
	running := map[string]int{}
	q := newJobQueue(0)
	q.tenants = tenantPolicy{capped: func(tenant string) bool { return tenant == "a" && running["a"] >= 2 }}
	for i := range 10 {
		q.PushBack(queuedJob{id: fmt.Sprintf("a%d", i), tenant: "a", created: t0.Add(time.Duration(i)), priority: 5})
		q.PushBack(queuedJob{id: fmt.Sprintf("b%d", i), tenant: "b", created: t0.Add(time.Duration(i)), priority: 5})
	}
	got := map[string]int{}
	for range 12 {
		j, _, ok := q.Next(t0)
		require.True(t, ok)
		q.Take(j.id)
		running[j.tenant]++
		got[j.tenant]++
	}
	require.Equal(t, map[string]int{"a": 2, "b": 10}, got, "a held at 2, b takes the rest")
	_, _, ok := q.Next(t0)
	require.False(t, ok, "only a's jobs wait, and a is at its quota")
	running["a"]-- // one of a's jobs ends
	j, _, ok := q.Next(t0)
	require.True(t, ok)
	require.Equal(t, "a", j.tenant)
}

// TestTenantBookRecount: a recount keeps placements made after its read,
// drops jobs that ended while it read, and counts what the store shows.
func TestTenantBookRecount(t *testing.T) {
	b := newTenantBook()
	b.start("old", "a", t0)
	b.start("lost", "a", t0) // its end never reached the scheduler
	b.recounting, b.ended = true, map[string]bool{}
	readAt := t0.Add(time.Second)
	b.start("new", "b", readAt.Add(time.Millisecond))
	b.stop("old")
	b.recount(map[string]string{"old": "a", "other-hub": "c"}, readAt)
	require.Equal(t, map[string]int{"b": 1, "c": 1}, b.count)
	require.False(t, b.recounting)
}

// TestTenantUntakeRefunds: a placement that failed and went back costs its
// tenant no turn: the same tenant goes again next.
func TestTenantUntakeRefunds(t *testing.T) {
	q := newJobQueue(0)
	for i := range 3 {
		q.PushBack(queuedJob{id: fmt.Sprintf("a%d", i), tenant: "a", created: t0.Add(time.Duration(i)), priority: 5})
		q.PushBack(queuedJob{id: fmt.Sprintf("b%d", i), tenant: "b", created: t0.Add(time.Duration(i)), priority: 5})
	}
	j, _, _ := q.Next(t0)
	require.Equal(t, "a0", j.id)
	q.Take(j.id)
	q.Untake(j) // the placement failed
	again, _, _ := q.Next(t0)
	require.Equal(t, "a0", again.id, "a's turn was refunded and its job is first again")
	q.Take(again.id)
	next, _, _ := q.Next(t0)
	require.Equal(t, "b", next.tenant)
}

// TestFreshSchedulerPlacesNothingBeforeItsRebuild: a fresh activation
// (a restart, a move) places nothing until its rebuild recounted the
// running jobs per tenant: a worker's report or a job's enqueue that came
// first would be placed against an empty count, past a tenant's
// max_running (TestTenantMaxRunningSurvivesSchedulerRestart's flake).
func TestFreshSchedulerPlacesNothingBeforeItsRebuild(t *testing.T) {
	now := time.Now()
	s := testScheduler(t, now, idle("w1", now))
	s.served = map[string]int{messages.ModeNoop: 1} // w1 runs it
	s.rebuilding = true
	s.enqueue(queuedJob{id: "a2", mode: messages.ModeNoop, created: now, tenant: "a"})
	s.place(nil) // no placement: it would send through the context
	require.Empty(t, s.pending)
	require.Equal(t, 1, s.queue.Len(), "still queued for the rebuild to place")
}
