package grains

import (
	"container/list"
	"math"

	"github.com/paprika-hub/paprika/persistence"
)

// Tenant fairness: within one queue class (one mode), the tenants with
// waiting jobs share placements by weight, by start-time fair queuing
// (stride scheduling): each tenant lane carries a virtual pass; the
// placement goes to the lane with the lowest pass that is not at its
// max_running quota (ties: the lane that joined first), and that lane's
// pass then grows by 1/weight. A lane that joins (its first waiting job)
// starts at the class's virtual time, the pass of the last lane served, so
// an idle tenant banks no credit; a capped lane is lifted to it too.
//
// Bound: two tenants i and j with waiting, placeable jobs all through a
// run of placements get placed counts S_i and S_j with
// |S_i/w_i - S_j/w_j| <= 1/w_i + 1/w_j (every lane served is the lowest
// pass, and a pass moves by one stride at a time), so each tenant's share
// of N placements is w_i/Σw within a constant, not a fraction, of N.
// Priorities and aging order the jobs within one tenant exactly as they
// did the whole queue before (jobQueue): fairness decides whose turn it
// is, priority decides which of that tenant's jobs goes.

// tenantLane is one tenant's waiting jobs in one class: one FIFO per
// priority, oldest first.
type tenantLane struct {
	name   string
	fifo   [numPriorities]list.List // of queuedJob
	n      int                      // jobs in the lane
	pass   float64                  // virtual time of this tenant's next placement
	stride float64                  // 1/weight
	joined uint64                   // order of joining (ties of pass)
	idx    int                      // position in tenantShare.active
}

// tenantShare is a class's tenant lanes and its virtual time.
type tenantShare struct {
	lanes  map[string]*tenantLane
	active []*tenantLane // the same lanes, for a cheap scan
	vtime  float64       // pass of the last lane served
	joins  uint64
	// spare is the last lane emptied, reused by the next tenant to join:
	// a lane is a list head per priority, and under a flat-out load a
	// tenant's queue empties and refills about once per job.
	spare *tenantLane
}

// lane is tenant's lane, created (joining at the virtual time) when absent.
func (t *tenantShare) lane(tenant string, weight float64) *tenantLane {
	if l, ok := t.lanes[tenant]; ok {
		return l
	}
	if t.lanes == nil {
		t.lanes = map[string]*tenantLane{}
	}
	t.joins++
	l := t.spare
	if l == nil {
		l = &tenantLane{}
	}
	t.spare = nil
	// Its lists are empty (it left when its last job did): only the
	// head fields are new.
	l.name, l.n, l.pass, l.stride, l.joined, l.idx = tenant, 0, t.vtime, 1/weight, t.joins, len(t.active)
	t.lanes[tenant] = l
	t.active = append(t.active, l)
	return l
}

// remove takes e (job j) off its lane; an emptied lane leaves the class.
// It forgets the lane's pass, which is at most one stride past the virtual
// time (it was the lowest when last served): a tenant that comes back
// gains at most one placement.
func (t *tenantShare) remove(j queuedJob, e *list.Element) {
	l := t.lanes[j.tenant]
	if l == nil {
		return
	}
	l.fifo[clampPriority(j.priority)-persistence.MinPriority].Remove(e)
	if l.n--; l.n > 0 {
		return
	}
	delete(t.lanes, l.name)
	last := t.active[len(t.active)-1]
	t.active[l.idx], last.idx = last, l.idx
	t.active[len(t.active)-1] = nil
	t.active = t.active[:len(t.active)-1]
	t.spare = l
}

// turn is the lane whose turn it is: the lowest pass among the lanes that
// capped does not hold back (nil: every lane may go). A capped lane is
// lifted to the virtual time, so it gets no burst when its quota frees.
// capped is asked only of a lane that would win, so a scan of 1,000
// tenants costs 1,000 comparisons and a few quota checks.
func (t *tenantShare) turn(capped func(tenant string) bool) *tenantLane {
	var best *tenantLane
	for _, l := range t.active {
		if l.pass < t.vtime {
			l.pass = t.vtime
		}
		if best != nil && (l.pass > best.pass || l.pass == best.pass && l.joined > best.joined) {
			continue
		}
		if capped != nil && capped(l.name) {
			continue
		}
		best = l
	}
	return best
}

// charge advances tenant's pass for one placement.
func (t *tenantShare) charge(tenant string) {
	if l := t.lanes[tenant]; l != nil {
		t.vtime = max(t.vtime, l.pass)
		l.pass += l.stride
	}
}

// Untake puts back a job whose placement failed (Take charged its tenant):
// at the front of its priority, and its tenant's turn refunded, so failed
// placements cost a tenant no share.
func (q *jobQueue) Untake(j queuedJob) {
	if _, ok := q.byID[j.id]; ok {
		return
	}
	q.PushFront(j)
	c := q.class(j.mode)
	if l := c.lanes[j.tenant]; l != nil {
		l.pass = max(l.pass-l.stride, c.vtime)
	}
}

// tenantPolicy is what the queue needs of the tenant config: weights, and
// whether a tenant is at its max_running quota (nil: no quota).
type tenantPolicy struct {
	weights map[string]float64 // absent = 1
	capped  func(tenant string) bool
}

func (p tenantPolicy) weight(tenant string) float64 {
	if w, ok := p.weights[tenant]; ok && w > 0 && !math.IsInf(w, 0) {
		return w
	}
	return 1
}

// QueuedByTenant yields the waiting jobs per tenant, across classes.
func (q *jobQueue) QueuedByTenant() map[string]int {
	out := map[string]int{}
	for _, c := range q.classes {
		for _, l := range c.active {
			out[l.name] += l.n
		}
	}
	return out
}
