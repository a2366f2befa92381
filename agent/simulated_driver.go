package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/paprika-hub/paprika/internal/backoff"
	"github.com/paprika-hub/paprika/messages"
)

// Limits of the noop mode, so a typo in params cannot exhaust the worker's
// memory (every line is kept until the hub acknowledges the job).
const (
	maxNoopLines    = 1_000_000
	maxNoopDelayMS  = 24 * 60 * 60 * 1000
	simulatedScheme = "sim://"
)

// SimulatedDriver runs the noop mode without a browser. Other modes fail
// with ReasonLaneError: they need a chromium lane.
type SimulatedDriver struct{}

var _ Driver = SimulatedDriver{}

// Name implements Driver.
func (SimulatedDriver) Name() string { return DriverSimulated }

// LaneURL implements Driver: sim://<worker id>/lane/<n>.
func (SimulatedDriver) LaneURL(workerID string, lane int) string {
	return fmt.Sprintf("%s%s/lane/%d", simulatedScheme, workerID, lane)
}

// noopParams are the params of the noop mode (API.md "Job modes").
type noopParams struct {
	Lines      *int64 `json:"lines"`
	IntervalMS *int64 `json:"interval_ms"`
	SleepMS    *int64 `json:"sleep_ms"`
	Fail       *bool  `json:"fail"`
}

// Run implements Driver. For noop it emits `lines` lines with `interval_ms`
// between them, sleeps `sleep_ms`, then fails if `fail` is true or returns
// {"lines": N}.
func (SimulatedDriver) Run(ctx context.Context, _ int, job Job, emit func(string) error) (Result, error) {
	if job.Mode != messages.ModeNoop {
		return Result{}, Fail(ReasonLaneError, "mode %q needs a chromium lane; the simulated driver runs only noop", job.Mode)
	}
	p, err := parseNoopParams(job.Params)
	if err != nil {
		return Result{}, err
	}
	lines, interval, sleep := int64OrZero(p.Lines), int64OrZero(p.IntervalMS), int64OrZero(p.SleepMS)
	for i := range lines {
		if i > 0 && interval > 0 {
			if err := backoff.Sleep(ctx, time.Duration(interval)*time.Millisecond); err != nil {
				return Result{}, err
			}
		}
		if err := emit(fmt.Sprintf("noop line %d of %d", i+1, lines)); err != nil {
			return Result{}, err
		}
	}
	if sleep > 0 {
		if err := backoff.Sleep(ctx, time.Duration(sleep)*time.Millisecond); err != nil {
			return Result{}, err
		}
	}
	if p.Fail != nil && *p.Fail {
		return Result{}, Fail(ReasonJobError, "noop failed as asked (fail=true)")
	}
	res, err := json.Marshal(map[string]int64{"lines": lines})
	if err != nil {
		return Result{}, fmt.Errorf("encode noop result: %w", err)
	}
	return Result{JSON: res}, nil
}

// parseNoopParams decodes and checks noop params; any problem is a job error.
func parseNoopParams(raw json.RawMessage) (noopParams, error) {
	var p noopParams
	if len(bytes.TrimSpace(raw)) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return p, nil
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return p, Fail(ReasonJobError, "noop params: %v", err)
	}
	checks := []struct {
		name string
		v    *int64
		max  int64
	}{{"lines", p.Lines, maxNoopLines}, {"interval_ms", p.IntervalMS, maxNoopDelayMS}, {"sleep_ms", p.SleepMS, maxNoopDelayMS}}
	for _, c := range checks {
		if c.v == nil {
			continue
		}
		if *c.v < 0 || *c.v > c.max {
			return p, Fail(ReasonJobError, "noop params: %s is %d, allowed 0..%d", c.name, *c.v, c.max)
		}
	}
	return p, nil
}

func int64OrZero(v *int64) int64 {
	if v == nil {
		return 0
	}
	return *v
}
