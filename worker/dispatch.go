package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"time"

	"github.com/paprika-hub/paprika/agent"
	"github.com/paprika-hub/paprika/messages"
)

// dispatch is the agent's JobRunner: it runs the handler registered for
// the job's mode and turns what it returns into the attempt's report.
func (w *Worker) dispatch(ctx context.Context, lane int, aj agent.Job, emit func(string) error) (agent.Result, error) {
	m := w.modes[aj.Mode] // fixed once Run started
	if m == nil {
		return agent.Result{}, agent.Fail(agent.ReasonLaneError, "mode %q is not served by this worker (it serves %s)",
			aj.Mode, strings.Join(w.order, ", "))
	}
	j := &Job{w: w, raw: aj, lane: lane, emit: emit, ctx: ctx, chromium: m.decl.Lane == messages.LaneNeedChromium && !m.ownLane}
	if j.chromium {
		j.laneName = w.chrome.LaneURL(w.ID(), lane)
	}
	var v any
	var err error
	done := make(chan struct{})
	// The handler runs on a goroutine of its own so that one that ignores
	// its context cannot hold the attempt's report: it is owned by the
	// handler and ends when the handler returns.
	go func() {
		defer close(done)
		defer j.releaseLane() // the browser is cleaned before the lane is free
		v, err = w.call(ctx, m.h, j)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		grace := time.NewTimer(w.opts.AbandonAfter)
		select {
		case <-done:
			grace.Stop()
		case <-grace.C:
			return agent.Result{}, &agent.AbandonedError{Err: ctx.Err(), Done: done}
		}
	}
	return w.report(j, v, err)
}

// call runs h, turning a panic into the attempt's job_error.
func (w *Worker) call(ctx context.Context, h Handler, j *Job) (v any, err error) {
	defer func() {
		if p := recover(); p != nil {
			w.log.Error("handler panicked", "mode", j.Mode(), "job_id", j.ID(), "attempt", j.Attempt(),
				"panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			v, err = nil, agent.Fail(agent.ReasonJobError, "handler panic: %v", p)
		}
	}()
	return h(ctx, j)
}

// report maps a handler's return to the agent's result or failure.
func (w *Worker) report(j *Job, v any, err error) (agent.Result, error) {
	if err != nil {
		var je *agent.JobError
		switch {
		case IsPermanent(err):
			return agent.Result{}, &agent.JobError{Reason: agent.ReasonJobError, Err: err, Permanent: true}
		case errors.As(err, &je):
			return agent.Result{}, err
		default:
			return agent.Result{}, &agent.JobError{Reason: agent.ReasonJobError, Err: err}
		}
	}
	assets := j.assetNames()
	switch r := v.(type) {
	case agent.Result: // a built-in's result, its assets stored by the driver
		r.Assets = append(r.Assets, assets...)
		return r, nil
	case nil:
		return agent.Result{JSON: json.RawMessage("{}"), Assets: assets}, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return agent.Result{}, &agent.JobError{Reason: agent.ReasonJobError, Permanent: true,
			Err: fmt.Errorf("mode %s: the handler's result is not JSON: %w", j.Mode(), err)}
	}
	return agent.Result{JSON: b, Assets: assets}, nil
}
