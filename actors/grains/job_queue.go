package grains

import (
	"container/list"
	"iter"
	"slices"
	"time"

	"github.com/paprika-hub/paprika/persistence"
)

// queuedJob is a job waiting in the scheduler's queue.
type queuedJob struct {
	id       string
	mode     string
	created  time.Time
	enqueued time.Time // when it reached this queue (placement latency)
	priority int       // 0..9
	tenant   string    // "" = the default tenant (tenantLane)
	near     string    // the job grain's hub (PickWorkerNear); "" when unknown
}

// numPriorities is the number of priority levels, one FIFO each.
const numPriorities = persistence.MaxPriority - persistence.MinPriority + 1

// queueClass holds the waiting jobs of one mode: per tenant, one FIFO per
// priority (tenantLane; the tenants share the class by weight). A mode,
// not a driver, is the unit: a worker that declares its modes runs some
// modes of a driver and not others, so "no worker takes this class's best
// job" holds for every job of the class only when they share a mode.
// Placement skips a whole class once no worker takes its best job, so a
// backlog no worker can run costs nothing per placement.
type queueClass struct {
	mode string
	n    int    // waiting jobs
	skip uint64 // the pass (jobQueue.pass) that found no worker for its best job
	tenantShare
}

// maxIdleClasses is how many classes with no job are kept for reuse; past
// it, empty classes are dropped when a new one is made (modes are the
// clients' words: a stream of one-off modes must not grow the queue).
const maxIdleClasses = 16

// jobQueue is the scheduler's queue of waiting jobs: per mode, per
// tenant, ten FIFOs (one per priority), indexed by job id. Membership,
// removal and a re-enqueue are O(1), so a job that asks again (re-drive,
// recovery) costs nothing however long the queue is; choosing the next job
// compares the heads of the FIFOs of one tenant lane per class only
// (classes × 10), never sorts.
//
// Order: the highest effective priority first, where a job's effective
// priority is its priority plus one level per aging of wait, at most 9
// (no starvation: a priority-0 job reaches 9 after 9 × aging). Among
// equal effective priorities, the oldest first — within one priority
// that is today's FIFO. A FIFO's head is its oldest job, hence its highest
// effective priority, so comparing heads finds the job to place.
// With tenants, that order holds within each tenant's lane; whose lane
// goes in a class is decided first, by weight (tenants.go). One exception,
// bounded: a worker's lane may take a job at most nearWindow younger than
// the next one, of the same level, whose grain is on the worker's hub
// (nearer).
type jobQueue struct {
	classes []*queueClass
	byClass map[string]*queueClass // mode → its class
	byID    map[string]*list.Element
	aging   time.Duration // 0 = no aging
	pass    uint64        // placement pass, for queueClass.skip
	tenants tenantPolicy  // weights and the max_running check
}

func newJobQueue(aging time.Duration) jobQueue {
	return jobQueue{byID: map[string]*list.Element{}, byClass: map[string]*queueClass{}, aging: aging, pass: 1}
}

// ByMode returns the number of waiting jobs per mode (for a scrape: it
// allocates).
func (q jobQueue) ByMode() map[string]int {
	out := make(map[string]int, len(q.classes))
	for _, c := range q.classes {
		if c.n > 0 {
			out[c.mode] = c.n
		}
	}
	return out
}

// Len is the number of waiting jobs.
func (q *jobQueue) Len() int { return len(q.byID) }

// clampPriority keeps a priority from the wire within 0..9.
func clampPriority(p int) int {
	return min(max(p, persistence.MinPriority), persistence.MaxPriority)
}

// class is the class of mode, created on first use.
func (q *jobQueue) class(mode string) *queueClass {
	if c, ok := q.byClass[mode]; ok {
		return c
	}
	if len(q.classes) >= maxIdleClasses {
		q.classes = slices.DeleteFunc(q.classes, func(c *queueClass) bool {
			if c.n == 0 {
				delete(q.byClass, c.mode)
				return true
			}
			return false
		})
	}
	c := &queueClass{mode: mode}
	q.classes = append(q.classes, c)
	q.byClass[mode] = c
	return c
}

// fifo is the list j belongs in (its class and tenant lane created on
// first use); j.tenant becomes the lane's own copy of the name. The
// caller pushes j.
func (q *jobQueue) fifo(j *queuedJob) (*queueClass, *list.List) {
	c := q.class(j.mode)
	l := c.lane(j.tenant, q.tenants.weight(j.tenant))
	j.tenant = l.name
	l.n++
	c.n++
	return c, &l.fifo[clampPriority(j.priority)-persistence.MinPriority]
}

// PushBack queues a job at the end of its priority, unless it is queued
// already: then it stays where it is, and learns the job grain's hub if it
// did not know it.
func (q *jobQueue) PushBack(j queuedJob) {
	e, ok := q.byID[j.id]
	if !ok {
		j.priority = clampPriority(j.priority)
		_, l := q.fifo(&j)
		q.byID[j.id] = l.PushBack(j)
		return
	}
	// Queued from the store (a rebuild), which may not know the job
	// grain's hub: the job's own enqueue does.
	if held := e.Value.(queuedJob); held.near == "" && j.near != "" {
		held.near = j.near
		e.Value = held
	}
}

// PushFront queues a job at the head of its priority (it waited longest),
// unless it is queued already.
func (q *jobQueue) PushFront(j queuedJob) {
	if _, ok := q.byID[j.id]; !ok {
		j.priority = clampPriority(j.priority)
		_, l := q.fifo(&j)
		q.byID[j.id] = l.PushFront(j)
	}
}

// Remove takes a job out of the queue; a no-op when it is not there.
func (q *jobQueue) Remove(id string) {
	if e, ok := q.byID[id]; ok {
		j := e.Value.(queuedJob)
		if c := q.byClass[j.mode]; c != nil { // a class with a job is never dropped
			c.remove(j, e)
			c.n--
		}
		delete(q.byID, id)
	}
}

// effective is j's priority raised one level per aging it has waited, at
// most the highest. A creation time ahead of now (another hub's clock)
// counts as no wait.
func (q *jobQueue) effective(j queuedJob, now time.Time) int {
	p := j.priority
	if q.aging > 0 {
		if wait := now.Sub(j.created); wait > 0 {
			p += int(min(wait/q.aging, numPriorities))
		}
	}
	return min(p, persistence.MaxPriority)
}

// before reports whether a goes before b now: higher effective priority,
// then older, then higher own priority.
func (q *jobQueue) before(a, b queuedJob, now time.Time) bool {
	if ea, eb := q.effective(a, now), q.effective(b, now); ea != eb {
		return ea > eb
	}
	if !a.created.Equal(b.created) {
		return a.created.Before(b.created)
	}
	return a.priority > b.priority
}

// Next returns the job to place first now, and its class, among the
// classes not skipped in this pass: in each class the tenant whose turn it
// is (tenantShare.turn), its best job by a comparison of its FIFO heads;
// across classes, the best of those.
func (q *jobQueue) Next(now time.Time) (queuedJob, *queueClass, bool) {
	var best queuedJob
	var class *queueClass
	for _, c := range q.classes {
		if c.n == 0 || c.skip == q.pass {
			continue
		}
		l := c.turn(q.tenants.capped)
		if l == nil {
			continue
		}
		for p := range l.fifo {
			e := l.fifo[p].Front()
			if e == nil {
				continue
			}
			j := e.Value.(queuedJob)
			if class == nil || q.before(j, best, now) {
				best, class = j, c
			}
		}
	}
	return best, class, class != nil
}

// Take removes a job that is being placed and charges its tenant's turn
// in its class (Remove, for a job that leaves otherwise, charges nothing).
func (q *jobQueue) Take(id string) {
	if e, ok := q.byID[id]; ok {
		j := e.Value.(queuedJob)
		if c := q.byClass[j.mode]; c != nil {
			c.charge(j.tenant)
		}
		q.Remove(id)
	}
}

// BeginPass starts a placement pass: the classes skipped in the last one
// are tried again (a lane may have freed for them since).
func (q *jobQueue) BeginPass() { q.pass++ }

// nextPlacement returns the job to place now and the worker pick chose
// for it, without removing the job. A class whose best job pick finds no
// worker for is skipped for the rest of the pass: every job of a class has
// the same mode, so none of them could go either. served, when not nil,
// says whether any worker could run a mode at all; a class it denies is
// skipped without a pick (a backlog of a mode no worker declares costs no
// pick_worker scan). False when no job can go.
func (q *jobQueue) nextPlacement(now time.Time, served func(mode string) bool, pick func(j queuedJob) *Candidate) (queuedJob, *Candidate, bool) {
	for {
		j, class, ok := q.Next(now)
		if !ok {
			return j, nil, false
		}
		if served == nil || served(j.mode) {
			if c := pick(j); c != nil {
				if c.LinkHub != "" && j.near != "" && j.near != c.LinkHub {
					if k, ok := q.nearer(j, c.LinkHub, now); ok {
						return k, c, true
					}
				}
				return j, c, true
			}
		}
		class.skip = q.pass
	}
}

// A worker's lane is best filled by a job whose grain is on the hub that
// holds the worker's socket: its job_started and job_done then go from the
// link to the job grain without crossing the cluster (about four of a
// job's remote messages, answers included, with three hubs). When the lane
// freed is the only one free (a saturated fleet), PickWorkerNear has no
// tie to break, so the queue's next job is as likely on any hub. nearer
// lets such a job go second to one a moment younger on the worker's hub.
const (
	// nearWindow bounds the wait a job can be given for another: only
	// jobs created at most this long after it may go first, and each
	// such job once, so the job is placed at the latest once those have
	// gone. Each job's creation is stamped by the hub that took it: one
	// whose clock lags the others' lets its jobs in by that much more.
	nearWindow = 10 * time.Millisecond
	// nearScan is how many jobs behind it are looked at: a placement's
	// cost stays bounded whatever the queue holds.
	nearScan = 32
)

// nearer returns the job to place on a worker linked to hub instead of j,
// the head of its FIFO: the first of the next nearScan jobs of that FIFO
// (same mode, tenant and priority) whose grain is on hub, created within
// nearWindow of j and of the same effective priority now (aging never
// lets a younger job pass an older one of a higher level). False when
// there is none: j goes.
func (q *jobQueue) nearer(j queuedJob, hub string, now time.Time) (queuedJob, bool) {
	e, ok := q.byID[j.id]
	if !ok {
		return j, false
	}
	level := q.effective(j, now)
	x := e.Next()
	for n := 0; x != nil && n < nearScan; n++ {
		k := x.Value.(queuedJob)
		if k.created.Sub(j.created) > nearWindow {
			break
		}
		if k.near == hub && q.effective(k, now) == level {
			return k, true
		}
		x = x.Next()
	}
	return j, false
}

// All yields every waiting job (by class, by tenant, highest priority
// first, oldest first within one); the loop body may Remove the job it is
// given.
func (q *jobQueue) All() iter.Seq[queuedJob] {
	return func(yield func(queuedJob) bool) {
		for _, c := range q.classes {
			for _, l := range slices.Clone(c.active) {
				for p := len(l.fifo) - 1; p >= 0; p-- {
					for e := l.fifo[p].Front(); e != nil; {
						next := e.Next()
						if !yield(e.Value.(queuedJob)) {
							return
						}
						e = next
					}
				}
			}
		}
	}
}
