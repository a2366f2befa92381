package grains

import (
	"cmp"
	"container/list"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/paprika-hub/paprika/messages"
)

// fifoQueue is the scheduler's queue before priorities (one FIFO, one
// index), with its place loop: the baseline the benchmark measures the
// priority queue against in the same run.
type fifoQueue struct {
	order *list.List
	byID  map[string]*list.Element
}

func (q *fifoQueue) pushBack(j queuedJob) { q.byID[j.id] = q.order.PushBack(j) }

// placeOne is the old place loop up to its first placement: oldest first,
// a browser job no worker takes is passed over (and tried again on the
// next pass), a noop job that finds no worker ends the pass.
func (q *fifoQueue) placeOne(pick func(queuedJob) *Candidate) (queuedJob, *Candidate, bool) {
	for e := q.order.Front(); e != nil; e = e.Next() {
		j := e.Value.(queuedJob)
		isNoop := j.mode == messages.ModeNoop || j.mode == ""
		c := pick(j)
		if c == nil {
			if isNoop {
				break
			}
			continue
		}
		q.order.Remove(e)
		delete(q.byID, j.id)
		return j, c, true
	}
	return queuedJob{}, nil, false
}

// placementBench is one freed lane → one placement, over and over, with
// queued jobs waiting all along: every worker is full but the one slot
// freed before each placement, and a new job is queued after it.
type placementBench struct {
	queued    int
	fetchFrac float64 // share of queued jobs that are fetch (no chromium worker exists)
	// other replaces fetch as the mode of that share (a custom mode), and
	// declared makes every worker declare its modes: noop and declared.
	other    string
	declared string
}

func (pb placementBench) jobs(rng *rand.Rand, start time.Time) func(i int) queuedJob {
	return func(i int) queuedJob {
		mode := messages.ModeNoop
		if rng.Float64() < pb.fetchFrac {
			mode = cmp.Or(pb.other, messages.ModeFetch)
		}
		return queuedJob{id: fmt.Sprintf("j%d", i), mode: mode,
			created: start.Add(time.Duration(i) * time.Millisecond), priority: rng.IntN(10)}
	}
}

func fleet(n int, now time.Time) []*Candidate {
	cands := make([]*Candidate, n)
	for i := range cands {
		c := idle(fmt.Sprintf("w%d", i), now)
		c.Drivers = []string{messages.DriverSimulated}
		c.MaxConcurrent, c.InFlight = 4, 4
		cands[i] = c
	}
	return cands
}

// run measures n placements; place places one job (false: none could go).
func (pb placementBench) run(b *testing.B, n int, push func(queuedJob),
	place func(now time.Time, pick func(queuedJob) *Candidate) (queuedJob, *Candidate, bool)) time.Duration {
	rng := rand.New(rand.NewPCG(7, 8))
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	next := pb.jobs(rng, start)
	for i := range pb.queued {
		push(next(i))
	}
	now := start.Add(time.Duration(pb.queued) * time.Millisecond)
	cands := fleet(100, now)
	if pb.declared != "" {
		for _, c := range cands {
			c.Declares, c.Modes = true, modeSet([]string{messages.ModeNoop, pb.declared})
		}
	}
	pickRng := rand.New(rand.NewPCG(9, 10))
	pick := func(j queuedJob) *Candidate { return testRule.PickWorker(cands, j.mode, now, pickRng) }
	lat := make([]time.Duration, n)
	for i := range n {
		cands[rng.IntN(len(cands))].InFlight-- // a lane frees
		t0 := time.Now()
		_, c, ok := place(now, pick)
		lat[i] = time.Since(t0)
		if !ok {
			b.Fatal("nothing placed")
		}
		c.InFlight++
		push(next(pb.queued + i))
		now = now.Add(time.Millisecond)
	}
	slices.Sort(lat)
	return lat[int(math.Ceil(0.99*float64(len(lat))))-1]
}

// BenchmarkPlacement100k: p99 of one placement with 100,000 queued jobs,
// the priority queue against the FIFO it replaced, in the same run.
// "noop": every job can run; "fetch-backlog": half the jobs need a chromium
// lane no worker has (the FIFO passes over each of them on every pass).
func BenchmarkPlacement100k(b *testing.B) {
	for _, pb := range []struct {
		name string
		placementBench
	}{
		{"noop", placementBench{queued: 100_000}},
		{"fetch-backlog", placementBench{queued: 100_000, fetchFrac: 0.5}},
		// A custom mode no worker declares; the scheduler's served count
		// passes its class over without a pick.
		{"custom-backlog", placementBench{queued: 100_000, fetchFrac: 0.5, other: "pdf-diff"}},
		// Every worker declares noop and pdf-diff; half the jobs are pdf-diff.
		{"declared", placementBench{queued: 100_000, fetchFrac: 0.5, other: "pdf-diff", declared: "pdf-diff"}},
	} {
		b.Run(pb.name, func(b *testing.B) {
			// Each run places at most 2,000 jobs: the FIFO's cost on the
			// fetch backlog grows with every placement.
			n := min(b.N, 2000)
			pq := newJobQueue(30 * time.Second)
			// What the scheduler's count says (countServed): noop and the
			// declared mode have workers, nothing else.
			served := func(mode string) bool { return mode == messages.ModeNoop || mode == pb.declared }
			prio := pb.run(b, n, pq.PushBack, func(now time.Time, pick func(queuedJob) *Candidate) (queuedJob, *Candidate, bool) {
				pq.BeginPass()
				j, c, ok := pq.nextPlacement(now, served, pick)
				if ok {
					pq.Remove(j.id)
				}
				return j, c, ok
			})
			fq := &fifoQueue{order: list.New(), byID: map[string]*list.Element{}}
			fifo := pb.run(b, n, fq.pushBack, func(_ time.Time, pick func(queuedJob) *Candidate) (queuedJob, *Candidate, bool) {
				return fq.placeOne(pick)
			})
			b.ReportMetric(float64(prio.Nanoseconds())/1000, "p99-prio-µs")
			b.ReportMetric(float64(fifo.Nanoseconds())/1000, "p99-fifo-µs")
			b.ReportMetric(float64(prio)/float64(fifo), "prio/fifo")
		})
	}
}
