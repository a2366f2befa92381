package grains

import (
	"container/list"
	"iter"
	"slices"
	"time"

	"github.com/paprika-hub/paprika/messages"
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
}

// numPriorities is the number of priority levels, one FIFO each.
const numPriorities = persistence.MaxPriority - persistence.MinPriority + 1

// queueClass holds the waiting jobs that one kind of worker can run (those
// whose mode needs the same driver, messages.ModeDriver): per tenant, one
// FIFO per priority (tenantLane; the tenants share the class by weight).
// Placement skips a whole class once no worker takes its best job, so a
// backlog no worker can run costs nothing per placement.
type queueClass struct {
	driver string
	tenantShare
}

// jobQueue is the scheduler's queue of waiting jobs: per class, ten FIFOs
// (one per priority), indexed by job id. Membership, removal and a
// re-enqueue are O(1), so a job that asks again (re-drive, recovery) costs
// nothing however long the queue is; choosing the next job compares the
// heads of the FIFOs only (classes × 10), never sorts.
//
// Order: the highest effective priority first, where a job's effective
// priority is its priority plus one level per aging of wait, at most 9
// (no starvation: a priority-0 job reaches 9 after 9 × aging). Among
// equal effective priorities, the oldest first — within one priority
// that is today's FIFO. A FIFO's head is its oldest job, hence its highest
// effective priority, so comparing heads finds the job to place.
// With tenants, that order holds within each tenant's lane; whose lane
// goes is decided first, by weight (tenants.go).
type jobQueue struct {
	classes []*queueClass // few (one per driver a mode needs); at most 64
	byID    map[string]*list.Element
	byMode  map[string]int // waiting jobs per mode, kept so a scrape costs no scan
	aging   time.Duration  // 0 = no aging
	tenants tenantPolicy   // weights and the max_running check
}

func newJobQueue(aging time.Duration) jobQueue {
	return jobQueue{byID: map[string]*list.Element{}, byMode: map[string]int{}, aging: aging}
}

// ByMode yields the number of waiting jobs per mode; the map is the
// queue's own, read it only on the scheduler's turn.
func (q jobQueue) ByMode() map[string]int { return q.byMode }

// Len is the number of waiting jobs.
func (q *jobQueue) Len() int { return len(q.byID) }

// clampPriority keeps a priority from the wire within 0..9.
func clampPriority(p int) int {
	return min(max(p, persistence.MinPriority), persistence.MaxPriority)
}

// class is the class j belongs in, created on first use.
func (q *jobQueue) class(j queuedJob) *queueClass {
	d := messages.ModeDriver(j.mode)
	for _, c := range q.classes {
		if c.driver == d {
			return c
		}
	}
	c := &queueClass{driver: d}
	q.classes = append(q.classes, c)
	return c
}

// fifo is the list j belongs in (its class and tenant lane created on
// first use); j.tenant becomes the lane's own copy of the name.
func (q *jobQueue) fifo(j *queuedJob) *list.List {
	l := q.class(*j).lane(j.tenant, q.tenants.weight(j.tenant))
	j.tenant = l.name
	l.n++ // the caller pushes j
	return &l.fifo[clampPriority(j.priority)-persistence.MinPriority]
}

// PushBack queues a job at the end of its priority, unless it is queued
// already (then it stays where it is).
func (q *jobQueue) PushBack(j queuedJob) {
	if _, ok := q.byID[j.id]; !ok {
		j.priority = clampPriority(j.priority)
		q.byID[j.id] = q.fifo(&j).PushBack(j)
		q.byMode[j.mode]++
	}
}

// PushFront queues a job at the head of its priority (it waited longest),
// unless it is queued already.
func (q *jobQueue) PushFront(j queuedJob) {
	if _, ok := q.byID[j.id]; !ok {
		j.priority = clampPriority(j.priority)
		q.byID[j.id] = q.fifo(&j).PushFront(j)
		q.byMode[j.mode]++
	}
}

// Remove takes a job out of the queue; a no-op when it is not there.
func (q *jobQueue) Remove(id string) {
	if e, ok := q.byID[id]; ok {
		j := e.Value.(queuedJob)
		q.class(j).remove(j, e)
		delete(q.byID, id)
		mode := e.Value.(queuedJob).mode
		if q.byMode[mode]--; q.byMode[mode] <= 0 {
			delete(q.byMode, mode)
		}
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
// classes not in skip (bit i = class i): in each class the tenant whose
// turn it is (tenantShare.turn), its best job by a comparison of its FIFO
// heads; across classes, the best of those.
func (q *jobQueue) Next(now time.Time, skip uint64) (queuedJob, int, bool) {
	var best queuedJob
	class, found := -1, false
	for i, c := range q.classes {
		if skip&(1<<i) != 0 {
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
			if !found || q.before(j, best, now) {
				best, class, found = j, i, true
			}
		}
	}
	return best, class, found
}

// Take removes a job that is being placed and charges its tenant's turn
// in its class (Remove, for a job that leaves otherwise, charges nothing).
func (q *jobQueue) Take(id string) {
	if e, ok := q.byID[id]; ok {
		j := e.Value.(queuedJob)
		q.class(j).charge(j.tenant)
		q.Remove(id)
	}
}

// nextPlacement returns the job to place now and the worker pick chose
// for it, without removing the job. A class whose best job pick finds no
// worker for is marked in *full and skipped: every job of a class needs the
// same driver, so none of them could go either. False when no job can go.
func (q *jobQueue) nextPlacement(now time.Time, full *uint64, pick func(mode string) *Candidate) (queuedJob, *Candidate, bool) {
	for {
		j, class, ok := q.Next(now, *full)
		if !ok {
			return j, nil, false
		}
		if c := pick(j.mode); c != nil {
			return j, c, true
		}
		*full |= 1 << class
	}
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
