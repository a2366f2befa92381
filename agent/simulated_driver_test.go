package agent

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestSimulatedDriverNoop(t *testing.T) {
	t.Parallel()
	var got []string
	emit := func(l string) error { got = append(got, l); return nil }
	res, err := SimulatedDriver{}.Run(context.Background(), 0, Job{Mode: "noop", Params: []byte(`{"lines": 3, "interval_ms": 0}`)}, emit)
	require.NoError(t, err)
	require.JSONEq(t, `{"lines": 3}`, string(res.JSON))
	require.Equal(t, []string{"noop line 1 of 3", "noop line 2 of 3", "noop line 3 of 3"}, got)
	require.Equal(t, "sim://w1/lane/4", SimulatedDriver{}.LaneURL("w1", 4))
}

func TestSimulatedDriverStopsOnContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := SimulatedDriver{}.Run(ctx, 0, Job{Mode: "noop", Params: []byte(`{"lines": 1000, "interval_ms": 100}`)}, func(string) error { return nil })
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Less(t, time.Since(start), 5*time.Second)
}

func TestSimulatedDriverBadParams(t *testing.T) {
	t.Parallel()
	for _, p := range []string{`{"lines": 1.5}`, `{"lines": -2}`, `{"interval_ms": "x"}`, `{"sleep_ms": -1}`, `"noop"`, `{"lines": 2000000}`} {
		_, err := SimulatedDriver{}.Run(context.Background(), 0, Job{Mode: "noop", Params: []byte(p)}, func(string) error { return nil })
		var je *JobError
		require.True(t, errors.As(err, &je), p)
		require.Equal(t, ReasonJobError, je.Reason, p)
	}
}
