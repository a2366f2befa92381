package grains

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/persistence"
)

// A reported end is stamped with the link's read time when that lies
// within the attempt, else with the grain's own time.
func TestEndedAtTakesTheReadTimeWithinTheAttempt(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	started := now.Add(-time.Second)
	g := &jobGrain{deps: &Deps{Now: func() time.Time { return now }}, job: persistence.Job{StartedAt: started}}
	at := func(read time.Time) time.Time {
		if read.IsZero() {
			return g.endedAt(0)
		}
		return g.endedAt(read.UnixNano())
	}
	read := now.Add(-200 * time.Millisecond)
	require.True(t, read.Equal(at(read)), "the read time, within the attempt")
	require.True(t, now.Equal(at(time.Time{})), "an older hub's report says nothing: now")
	require.True(t, now.Equal(at(started.Add(-time.Millisecond))), "before the start (a clock behind this hub's): now")
	require.True(t, now.Equal(at(now.Add(time.Second))), "after this turn (a clock ahead): now")
}
