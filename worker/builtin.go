package worker

import (
	"context"

	"github.com/paprika-hub/paprika/agent"
	"github.com/paprika-hub/paprika/messages"
)

// handleBuiltins registers the built-in modes as handlers like any other:
// noop on every worker, fetch and macro on a chromium one. Their drivers
// take the lane's browser themselves (with the egress and popup guards
// and a BrowserContext per job), so they are not NeedsChromium handlers
// in the Job.Lane sense, but hello declares their lane need all the same.
func (w *Worker) handleBuiltins() {
	w.Handle(messages.ModeNoop, func(ctx context.Context, j *Job) (any, error) {
		return agent.SimulatedDriver{}.Run(ctx, j.lane, j.raw, j.emit)
	})
	if w.chrome == nil {
		return
	}
	chromiumRun := func(ctx context.Context, j *Job) (any, error) {
		return w.chrome.Run(ctx, j.lane, j.raw, j.emit)
	}
	for _, m := range []string{messages.ModeFetch, messages.ModeMacro} {
		w.Handle(m, chromiumRun, declareLane(messages.LaneNeedChromium))
	}
}

// declareLane sets the declared lane need without making Job.Lane
// available: a built-in's driver takes its lane itself.
func declareLane(need string) HandleOption {
	return func(m *mode) { m.decl.Lane = need; m.ownLane = true }
}
