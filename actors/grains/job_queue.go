package grains

import (
	"container/list"
	"iter"
	"time"
)

// queuedJob is a job waiting in the scheduler's queue.
type queuedJob struct {
	id       string
	mode     string
	created  time.Time
	enqueued time.Time // when it reached this queue (placement latency)
}

// jobQueue is the scheduler's FIFO of waiting jobs, indexed by job id:
// membership, removal and a re-enqueue are O(1), so a job that asks again
// (re-drive, recovery) costs nothing however long the queue is.
type jobQueue struct {
	order  *list.List // of queuedJob, oldest first
	byID   map[string]*list.Element
	byMode map[string]int // waiting jobs per mode, kept so a scrape costs no scan
}

func newJobQueue() jobQueue {
	return jobQueue{order: list.New(), byID: map[string]*list.Element{}, byMode: map[string]int{}}
}

// ByMode yields the number of waiting jobs per mode; the map is the
// queue's own, read it only on the scheduler's turn.
func (q jobQueue) ByMode() map[string]int { return q.byMode }

// Len is the number of waiting jobs.
func (q jobQueue) Len() int { return len(q.byID) }

// PushBack queues a job at the end, unless it is queued already.
func (q jobQueue) PushBack(j queuedJob) {
	if _, ok := q.byID[j.id]; !ok {
		q.byID[j.id] = q.order.PushBack(j)
		q.byMode[j.mode]++
	}
}

// PushFront queues a job at the head (it waited longest), unless it is
// queued already.
func (q jobQueue) PushFront(j queuedJob) {
	if _, ok := q.byID[j.id]; !ok {
		q.byID[j.id] = q.order.PushFront(j)
		q.byMode[j.mode]++
	}
}

// Remove takes a job out of the queue; a no-op when it is not there.
func (q jobQueue) Remove(id string) {
	if e, ok := q.byID[id]; ok {
		q.order.Remove(e)
		delete(q.byID, id)
		mode := e.Value.(queuedJob).mode
		if q.byMode[mode]--; q.byMode[mode] <= 0 {
			delete(q.byMode, mode)
		}
	}
}

// All yields the waiting jobs oldest first; the loop body may Remove the
// job it is given.
func (q jobQueue) All() iter.Seq[queuedJob] {
	return func(yield func(queuedJob) bool) {
		for e := q.order.Front(); e != nil; {
			next := e.Next()
			if !yield(e.Value.(queuedJob)) {
				return
			}
			e = next
		}
	}
}
