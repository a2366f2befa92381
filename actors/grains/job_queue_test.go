package grains

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/messages"
)

func ids(q *jobQueue) []string {
	var out []string
	for j := range q.All() {
		out = append(out, j.id)
	}
	return out
}

// drain takes every job out in placement order at now.
func drain(q *jobQueue, now time.Time) []string {
	var out []string
	for {
		j, _, ok := q.Next(now)
		if !ok {
			return out
		}
		out = append(out, j.id)
		q.Remove(j.id)
	}
}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestJobQueueKeepsOrderAndIndex(t *testing.T) {
	q := newJobQueue(30 * time.Second)
	for _, id := range []string{"a", "b", "c"} {
		q.PushBack(queuedJob{id: id, priority: 5})
	}
	q.PushBack(queuedJob{id: "b", priority: 9}) // asks again: stays where it is
	require.Equal(t, []string{"a", "b", "c"}, ids(&q))
	q.PushFront(queuedJob{id: "z", priority: 5})
	q.PushFront(queuedJob{id: "c", priority: 5}) // queued already: not moved
	require.Equal(t, []string{"z", "a", "b", "c"}, ids(&q))
	q.Remove("a")
	q.Remove("nope")
	require.Equal(t, 3, q.Len())
	// Removing while iterating (what checkOwner does) visits every job once.
	var seen []string
	for j := range q.All() {
		seen = append(seen, j.id)
		q.Remove(j.id)
	}
	require.Equal(t, []string{"z", "b", "c"}, seen)
	require.Zero(t, q.Len())
	require.True(t, slices.Equal(ids(&q), nil))
	_, _, ok := q.Next(t0)
	require.False(t, ok)
}

func TestJobQueuePriorityOrderFIFOWithin(t *testing.T) {
	q := newJobQueue(30 * time.Second)
	// Submitted one ms apart, all within one aging step of each other.
	for i, p := range []int{5, 1, 9, 5, 0, 9, 5, 1} {
		q.PushBack(queuedJob{id: fmt.Sprintf("p%d-%d", p, i), mode: messages.ModeNoop,
			created: t0.Add(time.Duration(i) * time.Millisecond), priority: p})
	}
	require.Equal(t, []string{"p9-2", "p9-5", "p5-0", "p5-3", "p5-6", "p1-1", "p1-7", "p0-4"},
		drain(&q, t0.Add(time.Second)))
}

func TestJobQueueOutOfRangePriorityIsClamped(t *testing.T) {
	q := newJobQueue(0)
	q.PushBack(queuedJob{id: "low", created: t0, priority: -3})
	q.PushBack(queuedJob{id: "high", created: t0.Add(time.Second), priority: 42})
	require.Equal(t, []string{"high", "low"}, drain(&q, t0.Add(time.Hour)))
}

func TestJobQueueAgingLiftsOlderJobs(t *testing.T) {
	aging := 30 * time.Second
	q := newJobQueue(aging)
	q.PushBack(queuedJob{id: "old4", created: t0, priority: 4})
	q.PushBack(queuedJob{id: "new5", created: t0.Add(aging), priority: 5})
	// Just before one aging step the 5 goes first; once old4 has waited a
	// step it is a 5 too, and older.
	j, _, _ := q.Next(t0.Add(aging - time.Millisecond))
	require.Equal(t, "new5", j.id)
	j, _, _ = q.Next(t0.Add(aging))
	require.Equal(t, "old4", j.id)
	// Without aging, priority alone decides however long a job waited.
	q.aging = 0
	j, _, _ = q.Next(t0.Add(24 * time.Hour))
	require.Equal(t, "new5", j.id)
}

// TestJobQueueAgingBound: one lane serving one job per second, and a
// stream of priority-9 jobs arriving twice as fast as it serves them (the
// queue of 9s only grows), for 20 minutes of fake time. A priority-0 job
// submitted into that stream is placed within 9 × aging plus one service
// time — the configured bound — and not before 9 × aging (priority still
// means something).
func TestJobQueueAgingBound(t *testing.T) {
	for _, aging := range []time.Duration{10 * time.Second, 30 * time.Second} {
		t.Run(aging.String(), func(t *testing.T) {
			q := newJobQueue(aging)
			const service = time.Second
			n := 0
			submit := func(now time.Time, p int) string {
				n++
				id := fmt.Sprintf("j%d-p%d", n, p)
				q.PushBack(queuedJob{id: id, mode: messages.ModeNoop, created: now, priority: p})
				return id
			}
			low, submittedAt := "", time.Time{}
			var placedAt time.Time
			for now := t0; now.Before(t0.Add(20 * time.Minute)); now = now.Add(service) {
				submit(now, 9)
				submit(now, 9)
				if now.Equal(t0.Add(time.Minute)) { // a backlog of 9s exists by then
					low, submittedAt = submit(now, 0), now
				}
				j, _, ok := q.Next(now)
				require.True(t, ok)
				q.Remove(j.id)
				if j.id == low {
					placedAt = now
				}
			}
			require.False(t, placedAt.IsZero(), "the priority-0 job starved")
			wait := placedAt.Sub(submittedAt)
			bound := 9 * aging
			require.LessOrEqual(t, wait, bound+service, "waited %v", wait)
			require.GreaterOrEqual(t, wait, bound, "waited %v", wait)
			require.Greater(t, q.Len(), 1000, "the stream saturated the lane")
		})
	}
}

func TestJobQueueSkipsAClass(t *testing.T) {
	q := newJobQueue(30 * time.Second)
	q.PushBack(queuedJob{id: "fetch9", mode: messages.ModeFetch, created: t0, priority: 9})
	q.PushBack(queuedJob{id: "noop1", mode: messages.ModeNoop, created: t0, priority: 1})
	j, class, ok := q.Next(t0)
	require.True(t, ok)
	require.Equal(t, "fetch9", j.id)
	// No worker takes the fetch job: its whole class is skipped.
	class.skip = q.pass
	j, class2, ok := q.Next(t0)
	require.True(t, ok)
	require.Equal(t, "noop1", j.id)
	class2.skip = q.pass
	_, _, ok = q.Next(t0)
	require.False(t, ok)
	q.BeginPass() // a new pass tries every class again
	j, _, ok = q.Next(t0)
	require.True(t, ok)
	require.Equal(t, "fetch9", j.id)
}

func TestJobQueueCountsByMode(t *testing.T) {
	q := newJobQueue(0)
	q.PushBack(queuedJob{id: "a", mode: "noop"})
	q.PushBack(queuedJob{id: "b", mode: "macro"})
	q.PushFront(queuedJob{id: "c", mode: "noop"})
	q.PushBack(queuedJob{id: "a", mode: "noop"}) // queued already: not counted twice
	require.Equal(t, map[string]int{"noop": 2, "macro": 1}, q.ByMode())
	q.Remove("b")
	q.Remove("b")
	q.Remove("a")
	require.Equal(t, map[string]int{"noop": 1}, q.ByMode(), "a mode with no job left is dropped")
}

// TestJobQueueRequeueLearnsTheNearHub: a job a rebuild queued without its
// grain's hub learns it from the job's own enqueue, and keeps its place; a
// hub it knew is not overwritten by an enqueue that does not know one.
func TestJobQueueRequeueLearnsTheNearHub(t *testing.T) {
	q := newJobQueue(30 * time.Second)
	q.PushBack(queuedJob{id: "a", priority: 5})
	q.PushBack(queuedJob{id: "b", priority: 5, near: "hub-1"})
	q.PushBack(queuedJob{id: "a", priority: 5, near: "hub-2"})
	q.PushBack(queuedJob{id: "b", priority: 5})
	near := map[string]string{}
	for j := range q.All() {
		near[j.id] = j.near
	}
	require.Equal(t, map[string]string{"a": "hub-2", "b": "hub-1"}, near)
	require.Equal(t, []string{"a", "b"}, drain(&q, t0), "the job stays where it was")
}

// TestJobQueueNearJobForTheLane: a lane on hub-2's worker takes the first
// job of hub-2 behind the head, if it is of the same level and at most
// nearWindow younger; otherwise the head goes, as does a head whose hub
// or whose worker's hub is unknown.
func TestJobQueueNearJobForTheLane(t *testing.T) {
	on := func(hub string) func(queuedJob) *Candidate {
		return func(queuedJob) *Candidate { return &Candidate{ID: "w", LinkHub: hub} }
	}
	next := func(q *jobQueue, pick func(queuedJob) *Candidate) string {
		q.BeginPass()
		j, _, ok := q.nextPlacement(t0, nil, pick)
		require.True(t, ok)
		return j.id
	}
	q := newJobQueue(30 * time.Second)
	q.PushBack(queuedJob{id: "a1", priority: 5, created: t0, near: "hub-1"})
	q.PushBack(queuedJob{id: "b1", priority: 5, created: t0.Add(time.Millisecond), near: "hub-1"})
	q.PushBack(queuedJob{id: "c2", priority: 5, created: t0.Add(nearWindow), near: "hub-2"})
	q.PushBack(queuedJob{id: "d2", priority: 5, created: t0.Add(nearWindow + time.Millisecond), near: "hub-2"})
	require.Equal(t, "c2", next(&q, on("hub-2")), "the near job within the window")
	require.Equal(t, "a1", next(&q, on("hub-1")), "the head is near already")
	require.Equal(t, "a1", next(&q, on("")), "a worker's hub unknown: the head")
	q.Remove("c2")
	require.Equal(t, "a1", next(&q, on("hub-2")), "d2 is past the window")
	q.Remove("a1")
	require.Equal(t, "d2", next(&q, on("hub-2")), "within the window of the new head")

	// A head whose hub is unknown goes first whatever is behind it.
	q = newJobQueue(30 * time.Second)
	q.PushBack(queuedJob{id: "x", priority: 5, created: t0})
	q.PushBack(queuedJob{id: "y2", priority: 5, created: t0, near: "hub-2"})
	require.Equal(t, "x", next(&q, on("hub-2")))

	// Aging: a younger job one level below the head does not pass it.
	q = newJobQueue(time.Second)
	now := t0.Add(time.Second + nearWindow/2)
	q.PushBack(queuedJob{id: "old", priority: 5, created: t0, near: "hub-1"})
	q.PushBack(queuedJob{id: "young", priority: 5, created: t0.Add(nearWindow), near: "hub-2"})
	q.BeginPass()
	j, _, ok := q.nextPlacement(now, nil, on("hub-2"))
	require.True(t, ok)
	require.Equal(t, "old", j.id, "old has aged a level past young")

	// Only nearScan jobs behind the head are looked at.
	q = newJobQueue(30 * time.Second)
	q.PushBack(queuedJob{id: "head", priority: 5, created: t0, near: "hub-1"})
	for i := range nearScan {
		q.PushBack(queuedJob{id: fmt.Sprintf("f%d", i), priority: 5, created: t0, near: "hub-1"})
	}
	q.PushBack(queuedJob{id: "far2", priority: 5, created: t0, near: "hub-2"})
	require.Equal(t, "head", next(&q, on("hub-2")))
	q.Remove("f0")
	require.Equal(t, "far2", next(&q, on("hub-2")))
}
