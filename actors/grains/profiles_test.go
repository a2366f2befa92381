package grains

import (
	"testing"

	"github.com/stretchr/testify/require"
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
