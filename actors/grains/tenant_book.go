package grains

import (
	"context"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/paprika-hub/paprika/config"
	"github.com/paprika-hub/paprika/metrics"
	"github.com/paprika-hub/paprika/persistence"
)

// TenantConfig is the scheduler's tenant policy (scheduler.tenant_weights
// and scheduler.tenant_quotas). Every hub must hold the same: the
// scheduler grain uses its host's, the API's max_queued check its own.
type TenantConfig struct {
	Weights map[string]float64
	Quotas  config.TenantQuotas
}

// tenantResyncEvery is how often the scheduler recounts running jobs per
// tenant from the store: a count it missed (a finish whose message was
// lost with a hub) would hold a tenant at max_running for good.
const tenantResyncEvery = 30 * time.Second

// tenantResync fires the periodic recount.
type tenantResync struct{}

// runningJob is a job the scheduler placed and has not seen end.
type runningJob struct {
	tenant string
	since  time.Time
}

// tenantBook counts each tenant's running jobs (being placed, or placed
// and not yet final), for max_running and the gauges. It is rebuilt from
// the store with the queue (rebuild) and recounted every
// tenantResyncEvery, so it holds across a scheduler restart or move.
type tenantBook struct {
	jobs  map[string]runningJob
	count map[string]int
	// During a recount: jobs that ended since its read began, which the
	// read may still show as running.
	recounting bool
	ended      map[string]bool
}

func newTenantBook() tenantBook {
	return tenantBook{jobs: map[string]runningJob{}, count: map[string]int{}}
}

func (b *tenantBook) start(id, tenant string, at time.Time) {
	if _, ok := b.jobs[id]; ok {
		return
	}
	b.jobs[id] = runningJob{tenant: tenant, since: at}
	b.count[tenant]++
}

func (b *tenantBook) stop(id string) {
	r, ok := b.jobs[id]
	if !ok {
		return
	}
	delete(b.jobs, id)
	if b.count[r.tenant]--; b.count[r.tenant] <= 0 {
		delete(b.count, r.tenant)
	}
	if b.recounting {
		b.ended[id] = true
	}
}

// recount replaces the book with the store's running jobs as read from
// readAt on, keeping the jobs placed since and dropping those ended since.
func (b *tenantBook) recount(stored map[string]string, readAt time.Time) {
	next := newTenantBook()
	for id, tenant := range stored {
		if !b.ended[id] {
			next.start(id, tenant, readAt)
		}
	}
	for id, r := range b.jobs {
		if !r.since.Before(readAt) {
			next.start(id, r.tenant, r.since)
		}
	}
	*b = next
}

// capped reports whether tenant is at its max_running quota.
func (s *schedulerGrain) capped(tenant string) bool {
	max := s.deps.Tenants.Quotas.For(tenant).MaxRunning
	return max > 0 && s.book.count[tenant] >= max
}

// newQueue is an empty queue with the tenant policy.
func (s *schedulerGrain) newQueue() jobQueue {
	q := newJobQueue(s.deps.Timing.PriorityAging)
	q.tenants = tenantPolicy{weights: s.deps.Tenants.Weights}
	if s.deps.Tenants.Quotas.Any() {
		q.tenants.capped = s.capped
	}
	return q
}

// placedTenant books a placement: the tenant's running count and its
// queue wait (paprika_tenant_wait_seconds).
func (s *schedulerGrain) placedTenant(q queuedJob, now time.Time) {
	s.book.start(q.id, q.tenant, now)
	if s.tenantLabels == nil {
		s.tenantLabels = metrics.NewTenantLabels(s.tenantNames())
	}
	s.deps.Metrics.TenantWait.WithLabelValues(s.tenantLabels.Label(q.tenant)).Observe(max(now.Sub(q.created), 0).Seconds())
}

// tenantNames are the tenants the config names (they always have series).
func (s *schedulerGrain) tenantNames() []string {
	var out []string
	for t := range s.deps.Tenants.Weights {
		out = append(out, t)
	}
	for t := range s.deps.Tenants.Quotas.Tenants {
		out = append(out, t)
	}
	return out
}

// readRunning reads the store's running jobs: id → tenant.
func readRunning(ctx context.Context, jobs persistence.JobStore) (map[string]string, error) {
	out := map[string]string{}
	q := persistence.ListQuery{Status: persistence.StatusRunning, Limit: sweepPage, OldestFirst: true}
	for j, err := range persistence.AllJobs(ctx, jobs, q, persistence.PageTimeout(sweepPageTimeout), persistence.MaxPages(100)) {
		if err != nil {
			return out, err
		}
		out[j.ID] = j.Tenant
	}
	return out, nil
}

// loadRunning rebuilds the book from the store (rebuild, before the first
// placement of a fresh activation).
func (s *schedulerGrain) loadRunning() {
	now := s.deps.Clock()
	stored, err := readRunning(context.Background(), s.deps.Jobs)
	if err != nil {
		s.log.Warn("scheduler: running jobs read failed; tenant counts recounted later", slog.Any("err", err))
	}
	s.book.recount(stored, now)
	s.bookPlacing()
}

// bookPlacing counts the placements in flight, which the store does not
// show as running until their claim.
func (s *schedulerGrain) bookPlacing() {
	for id, q := range s.placingJobs {
		s.book.start(id, q.tenant, s.pendingSince[id])
	}
}

// resyncTenants recounts off the actor's turn.
func (s *schedulerGrain) resyncTenants(ctx actor.Context) {
	if s.book.recounting {
		return
	}
	readAt := s.deps.Clock()
	s.book.recounting, s.book.ended = true, map[string]bool{}
	offTurn(ctx, s.timers, 2*sweepPageTimeout, func(rctx context.Context) (map[string]string, error) {
		return readRunning(rctx, s.deps.Jobs)
	}, func(stored map[string]string, err error) {
		if err != nil {
			s.book.recounting, s.book.ended = false, nil
			s.log.Warn("scheduler: tenant recount failed", slog.Any("err", err))
			return
		}
		s.book.recount(stored, readAt)
		s.bookPlacing()
		s.place(ctx) // a tenant held at max_running by a lost count may go now
	})
}

// maxTenantStats bounds SchedStats' per-tenant maps: past it, the tenants
// with the fewest jobs are left out (the API's max_queued check then
// counts them from its own submits only).
const maxTenantStats = 10_000

// tenantStats fills SchedStats' per-tenant counts.
func (s *schedulerGrain) tenantStats(st *SchedStats) {
	queued := s.queue.QueuedByTenant()
	for q := range s.profiles.parked { // they count against max_queued too
		queued[q.tenant]++
	}
	st.QueuedByTenant = boundedCounts(queued)
	st.RunningByTenant = boundedCounts(s.book.count)
	st.TenantNames = s.tenantNames()
}

func boundedCounts(m map[string]int) map[string]int {
	out := make(map[string]int, min(len(m), maxTenantStats))
	for t, n := range metrics.TopTenants(m, maxTenantStats) {
		out[t] = n
	}
	return out
}
