package grains

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/messages"
)

// TestProfileLockOneHolderWaitersInOrder: the first job holds the
// profile, later ones wait in arrival order and go one by one as each
// holder ends; the holder's worker becomes the profile's warm worker.
func TestProfileLockOneHolderWaitersInOrder(t *testing.T) {
	l := newProfileLocks()
	require.True(t, l.acquire(queuedJob{id: "a"}, "p"))
	require.True(t, l.acquire(queuedJob{id: "a"}, "p"), "a holder asking again still holds")
	require.False(t, l.acquire(queuedJob{id: "b"}, "p"))
	require.False(t, l.acquire(queuedJob{id: "c"}, "p"))
	require.False(t, l.acquire(queuedJob{id: "b"}, "p"), "asking again does not queue twice")
	require.True(t, l.acquire(queuedJob{id: "x"}, "other"), "profiles are independent")
	require.Equal(t, map[string]string{"p": "a", "other": "x"}, l.inUse())
	require.Len(t, l.waiters["p"], 2)

	l.placed("a", "w1")
	l.placed("b", "w9") // a waiter's placement is not the holder's
	next, ok := l.release("a")
	require.True(t, ok)
	require.Equal(t, "b", next.id)
	require.Equal(t, "w1", l.last["p"])
	require.Empty(t, l.holder["p"], "free until the next job takes it")
	require.True(t, l.acquire(next, "p"))

	// A waiter that ends (canceled) leaves the line; nothing is handed on.
	_, ok = l.release("c")
	require.False(t, ok)
	require.NotContains(t, l.waiters, "p")
	next, ok = l.release("b")
	require.False(t, ok, "no one waits: %v", next)
	require.Equal(t, "w1", l.last["p"], "b was never placed: the warm worker stays")
	require.Equal(t, map[string]string{"other": "x"}, l.inUse())
	_, ok = l.release("unknown")
	require.False(t, ok)
}

// TestProfileLockReleaseStopsAffinityTimer: a holder that ends while it
// waits for its warm worker stops its affinity timer.
func TestProfileLockReleaseStopsAffinityTimer(t *testing.T) {
	l := newProfileLocks()
	require.True(t, l.acquire(queuedJob{id: "a"}, "p"))
	stopped := false
	l.warm["a"] = warmJob{q: queuedJob{id: "a"}, worker: "w1", stop: func() { stopped = true }}
	_, ok := l.release("a")
	require.False(t, ok)
	require.True(t, stopped)
	require.Empty(t, l.warm)
	require.Nil(t, l.inUse())
}

// TestStatsCountProfileWaiting: the jobs the profile lock parks outside
// the queue (waiting for the profile, or for their warm worker) count as
// queued, by mode and by tenant too, and ProfileWaiting says how many of
// them the lock holds; a holder placed or queued is not counted twice.
func TestStatsCountProfileWaiting(t *testing.T) {
	d := &Deps{Now: time.Now}
	s := &schedulerGrain{deps: d, workers: map[string]*Candidate{}, pending: map[string]string{},
		delayed: newDelayedJobs(), book: newTenantBook(), profiles: newProfileLocks()}
	s.queue = s.newQueue()
	s.queue.PushBack(queuedJob{id: "q1", mode: messages.ModeNoop, tenant: "acme"})
	st := s.stats()
	require.Equal(t, 1, st.Queued)
	require.Zero(t, st.ProfileWaiting)

	// "h" holds profile p and is queued; "w1", "w2" wait for p.
	require.True(t, s.profiles.acquire(queuedJob{id: "h", mode: messages.ModeFetch, tenant: "acme"}, "p"))
	s.queue.PushBack(queuedJob{id: "h", mode: messages.ModeFetch, tenant: "acme"})
	require.True(t, s.profileEnqueue(queuedJob{id: "w1", mode: messages.ModeFetch, tenant: "acme"}, "p"))
	require.True(t, s.profileEnqueue(queuedJob{id: "w2", mode: messages.ModeMacro, tenant: "beta"}, "p"))
	// "k" holds profile k and waits for its warm worker, out of the queue.
	require.True(t, s.profiles.acquire(queuedJob{id: "k", mode: messages.ModeFetch}, "k"))
	s.profiles.warm["k"] = warmJob{q: queuedJob{id: "k", mode: messages.ModeFetch}, worker: "w9"}

	st = s.stats()
	require.Equal(t, 3, st.ProfileWaiting, "w1, w2 and k wait outside the queue")
	require.Equal(t, 5, st.Queued, "q1 and h in the queue, and the three parked")
	require.Equal(t, 3, st.QueuedByMode[messages.ModeFetch])
	require.Equal(t, 1, st.QueuedByMode[messages.ModeMacro])
	require.Equal(t, 1, st.QueuedByMode[messages.ModeNoop])
	require.Equal(t, map[string]int{"acme": 3, "beta": 1, "": 1}, st.QueuedByTenant)

	// The holder ends: w1 takes the profile and the queue, w2 still waits.
	s.queue.Remove("h")
	s.profileRelease("h")
	st = s.stats()
	require.Equal(t, 2, st.ProfileWaiting, "w2 and k")
	require.Equal(t, 4, st.Queued, "q1, w1, w2, k")
}
