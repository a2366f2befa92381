package grains

import (
	"container/heap"
	"context"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/paprika-hub/paprika/actors/supervise"
	"github.com/paprika-hub/paprika/messages"
	"github.com/paprika-hub/paprika/persistence"
)

// delayedJob is a scheduled job the scheduler holds until its run_at.
type delayedJob struct {
	id    string
	runAt time.Time
	index int // in the heap, kept by delayedJobs
}

// delayedJobs is a min-heap of scheduled jobs by due time (then id, so the
// order is total), indexed by id: adding, moving and removing a job are
// O(log n), and only the earliest due time is ever armed as a timer, so
// a million delayed jobs cost one timer.
type delayedJobs struct {
	items []*delayedJob
	byID  map[string]*delayedJob
}

func newDelayedJobs() delayedJobs { return delayedJobs{byID: map[string]*delayedJob{}} }

// heap.Interface, on items.
func (d *delayedJobs) Len() int { return len(d.items) }
func (d *delayedJobs) Less(i, j int) bool {
	a, b := d.items[i], d.items[j]
	if !a.runAt.Equal(b.runAt) {
		return a.runAt.Before(b.runAt)
	}
	return a.id < b.id
}
func (d *delayedJobs) Swap(i, j int) {
	d.items[i], d.items[j] = d.items[j], d.items[i]
	d.items[i].index, d.items[j].index = i, j
}

// Push and Pop are for container/heap only.
func (d *delayedJobs) Push(x any) {
	e := x.(*delayedJob)
	e.index = len(d.items)
	d.items = append(d.items, e)
}
func (d *delayedJobs) Pop() any {
	n := len(d.items) - 1
	e := d.items[n]
	d.items[n] = nil
	d.items = d.items[:n]
	return e
}

// Add holds job id until runAt; a job held already moves to the new time.
func (d *delayedJobs) Add(id string, runAt time.Time) {
	if e, ok := d.byID[id]; ok {
		e.runAt = runAt
		heap.Fix(d, e.index)
		return
	}
	e := &delayedJob{id: id, runAt: runAt}
	d.byID[id] = e
	heap.Push(d, e)
}

// Remove forgets job id; a no-op when it is not held.
func (d *delayedJobs) Remove(id string) {
	if e, ok := d.byID[id]; ok {
		heap.Remove(d, e.index)
		delete(d.byID, id)
	}
}

// Has reports whether job id is held.
func (d *delayedJobs) Has(id string) bool { _, ok := d.byID[id]; return ok }

// Next is the earliest due time; false when none is held.
func (d *delayedJobs) Next() (time.Time, bool) {
	if len(d.items) == 0 {
		return time.Time{}, false
	}
	return d.items[0].runAt, true
}

// PopDue removes and returns the jobs due at now, earliest first.
func (d *delayedJobs) PopDue(now time.Time) []string {
	var due []string
	for len(d.items) > 0 && !d.items[0].runAt.After(now) {
		e := heap.Pop(d).(*delayedJob)
		delete(d.byID, e.id)
		due = append(due, e.id)
	}
	return due
}

// delayedDue fires at the earliest due time of the scheduler's delayed jobs.
type delayedDue struct{}

// delayedTimer is the scheduler's one timer for its delayed jobs: armed
// for the earliest due time, re-armed only when that time changes.
type delayedTimer struct {
	stop supervise.Stop
	at   time.Time
}

// hold keeps a scheduled job until its run_at and re-arms the timer if it
// is now the earliest.
func (s *schedulerGrain) hold(id string, runAt time.Time) {
	s.queue.Remove(id) // a job is either waiting for its time or for a lane
	s.delayed.Add(id, runAt)
	s.armDelayed()
}

// armDelayed points the one timer at the earliest due time.
func (s *schedulerGrain) armDelayed() {
	next, ok := s.delayed.Next()
	if ok && s.delayedTimer.stop != nil && s.delayedTimer.at.Equal(next) {
		return
	}
	if s.delayedTimer.stop != nil {
		s.delayedTimer.stop()
		s.delayedTimer = delayedTimer{}
	}
	if ok {
		s.delayedTimer = delayedTimer{stop: s.timers.After(max(next.Sub(s.deps.Clock()), 0), &delayedDue{}), at: next}
	}
}

// wakeDue hands every job whose time came to its grain, which queues it
// in the store and enqueues it here again, now to be placed.
func (s *schedulerGrain) wakeDue(ctx actor.Context) {
	s.delayedTimer = delayedTimer{}
	for _, id := range s.delayed.PopDue(s.deps.Clock()) {
		Send(ctx, s.cl, id, KindJob, &messages.JobEnsure{})
	}
	s.armDelayed()
}

// redueAfter is the least wait of a job enqueued again with a run_at
// already past: its grain's clock (another hub's) said it was not due yet,
// so it is held a little instead of bouncing between the two at once.
const redueAfter = 50 * time.Millisecond

// holdUntil is hold for a SchedEnqueue with a run_at.
func (s *schedulerGrain) holdUntil(id string, runAt time.Time) {
	if now := s.deps.Clock(); !runAt.After(now) {
		runAt = now.Add(redueAfter)
	}
	s.hold(id, runAt)
}

// loadScheduled holds every scheduled job of the store until its run_at:
// after a restart or a move the heap is rebuilt from the store, so no
// delayed job or retry waits on a timer that died with a hub.
func (s *schedulerGrain) loadScheduled() int {
	n := 0
	q := persistence.ListQuery{Status: persistence.StatusScheduled, Limit: sweepPage, OldestFirst: true}
	for j, err := range persistence.AllJobs(context.Background(), s.deps.Jobs, q,
		persistence.PageTimeout(sweepPageTimeout), persistence.MaxPages(100)) {
		if err != nil {
			s.log.Warn("scheduler: scheduled jobs read failed; re-drive will retry", slog.Any("err", err))
			break
		}
		s.delayed.Add(j.ID, j.RunAt) // past ones are woken at once
		n++
	}
	s.armDelayed()
	return n
}
