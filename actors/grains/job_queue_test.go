package grains

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

func ids(q jobQueue) []string {
	var out []string
	for j := range q.All() {
		out = append(out, j.id)
	}
	return out
}

func TestJobQueueKeepsOrderAndIndex(t *testing.T) {
	q := newJobQueue()
	for _, id := range []string{"a", "b", "c"} {
		q.PushBack(queuedJob{id: id})
	}
	q.PushBack(queuedJob{id: "b"}) // asks again: stays where it is
	require.Equal(t, []string{"a", "b", "c"}, ids(q))
	q.PushFront(queuedJob{id: "z"})
	q.PushFront(queuedJob{id: "c"}) // queued already: not moved
	require.Equal(t, []string{"z", "a", "b", "c"}, ids(q))
	q.Remove("a")
	q.Remove("nope")
	require.Equal(t, 3, q.Len())
	// Removing while iterating (what place does) visits every job once.
	var seen []string
	for j := range q.All() {
		seen = append(seen, j.id)
		q.Remove(j.id)
	}
	require.Equal(t, []string{"z", "b", "c"}, seen)
	require.Zero(t, q.Len())
	require.True(t, slices.Equal(ids(q), nil))
}

func TestJobQueueCountsByMode(t *testing.T) {
	q := newJobQueue()
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
