package hub

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/persistence"
)

// TestActorPanicsAreSurvived panics one actor of each kind while a job runs
// and proves the hub carries on: the job still succeeds with every log line
// once and in order, the worker keeps its operator status, later jobs run,
// and each panic was counted.
func TestActorPanicsAreSurvived(t *testing.T) {
	cfg := testConfig(t)
	h := startTestHub(t, cfg)
	startAgent(t, h.URL(), "wa", 2)
	ctx := context.Background()
	require.Eventually(t, func() bool {
		w, err := h.stores.Workers.Get(ctx, "wa")
		return err == nil && w.Connected && w.MaxConcurrent == 2
	}, 10*time.Second, 10*time.Millisecond)

	long := submit(t, h.URL(), `{"mode":"noop","params":{"lines":40,"interval_ms":50}}`)
	require.Eventually(t, func() bool { return getJob(t, h.URL(), long.ID).Status == persistence.StatusRunning },
		10*time.Second, 10*time.Millisecond)

	for _, k := range []struct{ kind, id string }{
		{"job", long.ID}, {"scheduler", ""}, {"log_stream", long.ID}, {"reconciler", ""},
		{"worker", "wa"}, {"worker_conn", "wa"},
	} {
		require.NoError(t, h.InjectPanic(ctx, k.kind, k.id), k.kind)
		time.Sleep(150 * time.Millisecond) // let lines flow between the faults
	}

	j := waitFinal(t, h.URL(), long.ID, 30*time.Second)
	require.Equal(t, persistence.StatusSucceeded, j.Status, "%s %s", j.Reason, j.Error)
	lines, done, err := h.stores.Logs.Read(ctx, long.ID, 0, 0)
	require.NoError(t, err)
	require.True(t, done)
	require.Len(t, lines, 40)
	for i, l := range lines {
		require.Equal(t, fmt.Sprintf("noop line %d of 40", i+1), l)
	}

	// The worker grain keeps what the operator set across its restart.
	_, err = h.SetWorkerStatus(ctx, "wa", "standby")
	require.NoError(t, err)
	require.NoError(t, h.InjectPanic(ctx, "worker", "wa"))
	require.Eventually(t, func() bool {
		ws, err := h.Workers(ctx)
		return err == nil && len(ws) == 1 && ws[0].Status == "standby"
	}, 5*time.Second, 10*time.Millisecond)
	_, err = h.SetWorkerStatus(ctx, "wa", "active")
	require.NoError(t, err)

	for i := 0; i < 5; i++ {
		next := submit(t, h.URL(), `{"mode":"noop","params":{"lines":3}}`)
		require.Equal(t, persistence.StatusSucceeded, waitFinal(t, h.URL(), next.ID, 20*time.Second).Status)
	}
	for _, kind := range []string{"job", "scheduler", "log_stream", "reconciler", "worker", "worker_conn"} {
		require.GreaterOrEqual(t, h.Metrics().Get("paprika_actor_panics_total", "kind="+kind), int64(1), kind)
	}
}
