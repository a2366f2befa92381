package grains

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A freed job is kept while the worker lists it (its end not acknowledged,
// however long the store takes) and for SlotPruneAfter after it was freed
// (a report older than the release may still list it); it goes with the
// first report past that which leaves it out. A session's slot is never
// kept: no report lists one.
func TestAckingKeepsFreedJobsUntilTheWorkerDropsThem(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	g := &workerGrain{deps: &Deps{Now: func() time.Time { return now }}, acking: map[string]time.Time{}}
	g.freedReported("job-a")
	g.freedReported("job-b")
	g.freedReported(sessionSlot("s-1"))
	require.Len(t, g.acking, 2, "a session's slot is not kept")

	g.forgetAcked(nil) // a report that lists neither, right after the release
	require.Len(t, g.acking, 2, "a report crossing the release may be older than it")

	now = now.Add(SlotPruneAfter)
	g.forgetAcked([]string{"job-a"})
	require.Contains(t, g.acking, "job-a", "still listed: not acknowledged yet")
	require.NotContains(t, g.acking, "job-b")

	now = now.Add(time.Hour)
	g.forgetAcked([]string{"job-a"})
	require.Contains(t, g.acking, "job-a", "listed for as long as its end is not stored")
	g.forgetAcked([]string{"job-c"})
	require.Empty(t, g.acking)
}

// The kept jobs are bounded: past maxAcking the old ones go first, and if
// every one is recent, all of them.
func TestAckingIsBounded(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	g := &workerGrain{deps: &Deps{Now: func() time.Time { return now }}, acking: map[string]time.Time{}}
	for i := range maxAcking / 2 {
		g.freedReported(fmt.Sprint("old-", i))
	}
	now = now.Add(SlotPruneAfter)
	for i := range maxAcking - maxAcking/2 {
		g.freedReported(fmt.Sprint("new-", i))
	}
	require.Len(t, g.acking, maxAcking)
	g.freedReported("one-more")
	require.Len(t, g.acking, maxAcking-maxAcking/2+1, "the old ones went")
	require.NotContains(t, g.acking, "old-0")
	require.Contains(t, g.acking, "new-0")

	for i := len(g.acking); i < maxAcking; i++ {
		g.freedReported(fmt.Sprint("more-", i))
	}
	g.freedReported("past-the-bound")
	require.Equal(t, map[string]time.Time{"past-the-bound": now}, g.acking, "none old enough: all go")
}
