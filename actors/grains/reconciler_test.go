package grains

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/metrics"
	"github.com/paprika-hub/paprika/persistence"
	"github.com/paprika-hub/paprika/persistence/memory"
)

// flakyRegistry fails List on demand.
type flakyRegistry struct {
	persistence.WorkerRegistry
	fail bool
}

func (f *flakyRegistry) List(ctx context.Context) ([]persistence.WorkerInfo, error) {
	if f.fail {
		return nil, errors.New("read timed out")
	}
	return f.WorkerRegistry.List(ctx)
}

func TestReconcilerFleetViewGuards(t *testing.T) {
	now := time.Now()
	reg := &flakyRegistry{WorkerRegistry: memory.NewWorkerRegistry()}
	require.NoError(t, reg.Put(context.Background(), persistence.WorkerInfo{ID: "w1", Connected: true, LastSeen: now}, time.Hour))
	clock := now
	r := &reconciler{deps: &Deps{Workers: reg, Metrics: metrics.NewMetrics(), Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Timing: Timing{FleetReadTimeout: time.Second, FleetCache: 60 * time.Second}, Now: func() time.Time { return clock }}}
	r.log = r.deps.Log

	// A failed read with no good view yet: skip the sweep (never act on an
	// empty view that follows a read error).
	reg.fail = true
	_, ok := r.fleet()
	require.False(t, ok)

	reg.fail = false
	ws, ok := r.fleet()
	require.True(t, ok)
	require.Len(t, ws, 1)

	// A failed read within fleet_cache: the last good view.
	reg.fail = true
	clock = now.Add(59 * time.Second)
	ws, ok = r.fleet()
	require.True(t, ok)
	require.Len(t, ws, 1, "last good view reused")

	// Past fleet_cache: skip rather than trust a stale view.
	clock = now.Add(61 * time.Second)
	_, ok = r.fleet()
	require.False(t, ok)
	require.EqualValues(t, 3, r.deps.Metrics.Get("paprika_fleet_read_errors_total"))
}
