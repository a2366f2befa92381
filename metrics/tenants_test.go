package metrics

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBoundTenants: however many tenants, the series are the named ones,
// the MaxTenantSeries largest others and "other", and no job is lost.
func TestBoundTenants(t *testing.T) {
	queued, running := map[string]int{}, map[string]int{}
	total := 0
	for i := range 500 {
		queued[fmt.Sprintf("t%03d", i)] = i + 1
		total += i + 1
	}
	running["acme"], running["t000"] = 3, 2
	total += 5
	got := BoundTenants([]string{"acme", "quiet"}, queued, running)
	require.Len(t, got, 2+MaxTenantSeries+1)
	require.Equal(t, TenantLoad{Running: 3}, got["acme"])
	require.Equal(t, TenantLoad{}, got["quiet"], "a named tenant has its series at 0")
	require.Equal(t, TenantLoad{Queued: 500}, got["t499"], "the largest keep their own series")
	sum := 0
	for _, l := range got {
		sum += l.Queued + l.Running
	}
	require.Equal(t, total, sum)

	l := NewTenantLabels([]string{"acme"})
	for i := range MaxTenantSeries {
		require.Equal(t, fmt.Sprint(i), l.Label(fmt.Sprint(i)))
	}
	require.Equal(t, OtherTenant, l.Label("late"))
	require.Equal(t, "acme", l.Label("acme"))
	require.Equal(t, "3", l.Label("3"))
}
