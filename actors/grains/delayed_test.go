package grains

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestDelayedJobsOrder: jobs come due in the order of their times (then
// ids), whatever the order they were held in; moving and removing a job
// keep the order.
func TestDelayedJobsOrder(t *testing.T) {
	d := newDelayedJobs()
	t0 := time.Unix(1_700_000_000, 0)
	rng := rand.New(rand.NewPCG(3, 4))
	type held struct {
		id string
		at time.Time
	}
	var all []held
	for i := range 1000 {
		h := held{id: fmt.Sprintf("j%04d", i), at: t0.Add(time.Duration(rng.IntN(500)) * time.Millisecond)}
		all = append(all, h)
		d.Add(h.id, h.at)
	}
	// Move one to the very end, one to the very start, remove one.
	all[10].at = t0.Add(time.Hour)
	d.Add(all[10].id, all[10].at)
	all[20].at = t0.Add(-time.Hour)
	d.Add(all[20].id, all[20].at)
	d.Remove(all[30].id)
	d.Remove("not-held")
	all = slices.Delete(all, 30, 31)
	require.Equal(t, len(all), d.Len())
	require.False(t, d.Has("j0030"))
	require.True(t, d.Has("j0031"))

	slices.SortFunc(all, func(a, b held) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return compareStrings(a.id, b.id)
	})
	next, ok := d.Next()
	require.True(t, ok)
	require.Equal(t, all[0].at, next)

	require.Empty(t, d.PopDue(t0.Add(-time.Hour-time.Nanosecond)), "nothing is due before the earliest")
	var got []string
	for _, at := range []time.Duration{0, 100 * time.Millisecond, 250 * time.Millisecond, time.Second, 2 * time.Hour} {
		got = append(got, d.PopDue(t0.Add(at))...)
	}
	want := make([]string, len(all))
	for i, h := range all {
		want[i] = h.id
	}
	require.Equal(t, want, got)
	require.Zero(t, d.Len())
	_, ok = d.Next()
	require.False(t, ok)
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// BenchmarkDelayedJobs: holding and popping one job among n held: the
// scheduler's cost per delayed job grows with log n, not n.
func BenchmarkDelayedJobs(b *testing.B) {
	for _, n := range []int{1_000, 100_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			d := newDelayedJobs()
			t0 := time.Unix(1_700_000_000, 0)
			for i := range n {
				d.Add(fmt.Sprintf("j%d", i), t0.Add(time.Duration(i)*time.Millisecond+time.Hour))
			}
			ids := make([]string, 1024)
			for i := range ids {
				ids[i] = fmt.Sprintf("n%d", i)
			}
			b.ResetTimer()
			for i := range b.N {
				d.Add(ids[i%len(ids)], t0.Add(time.Duration(i%1000)*time.Microsecond))
				d.PopDue(t0.Add(time.Second))
			}
		})
	}
}
