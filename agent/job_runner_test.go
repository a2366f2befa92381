package agent

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/messages"
)

// A JobRunner replaces the driver's Run; hello declares Config.Modes; a
// permanent job_error says so in job_failed, and only a job_error does.
func TestJobRunnerModesAndPermanent(t *testing.T) {
	t.Parallel()
	modes := []messages.ModeDecl{{Name: "perm"}, {Name: "shot", Lane: messages.LaneNeedChromium, Schema: json.RawMessage(`{"type":"object"}`)}}
	run := func(_ context.Context, _ int, job Job, emit func(string) error) (Result, error) {
		switch job.Mode {
		case "perm":
			return Result{}, &JobError{Reason: ReasonJobError, Err: errors.New("gone for good"), Permanent: true}
		case "lane":
			return Result{}, &JobError{Reason: ReasonLaneError, Err: errors.New("no browser"), Permanent: true}
		default:
			_ = emit("ran " + job.Mode)
			return Result{JSON: json.RawMessage(`{"mode":"` + job.Mode + `"}`)}, nil
		}
	}
	hub, _ := linked(t, Config{JobRunner: run, Modes: modes})
	hello := hub.all()[0].f
	require.Equal(t, messages.TypeHello, hello.Type)
	assert.Equal(t, modes, hello.Capabilities.Modes)

	for _, c := range []struct {
		mode, reason string
		permanent    bool
	}{{"perm", ReasonJobError, true}, {"lane", ReasonLaneError, false}} {
		hub.send(messages.Frame{Type: messages.TypeAssignJob, JobID: c.mode, Attempt: 1, Mode: c.mode})
		f := hub.waitFor(isJob(c.mode, messages.TypeJobFailed), "job_failed of "+c.mode).f
		assert.Equal(t, c.reason, f.Reason, c.mode)
		assert.Equal(t, c.permanent, f.Permanent, c.mode)
	}
	hub.send(messages.Frame{Type: messages.TypeAssignJob, JobID: "x", Attempt: 1, Mode: "shot"})
	frames := hub.jobFrames("x")
	require.Len(t, frames, 3, "started, a line, done")
	assert.Equal(t, "ran shot", frames[1].f.Line)
	assert.JSONEq(t, `{"mode":"shot"}`, string(frames[2].f.Result))
}

// An abandoned job is reported when its context ends, and its lane stays
// taken (in_flight, rejections) until its code returns.
func TestJobRunnerAbandonedHoldsLane(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	run := func(ctx context.Context, _ int, job Job, _ func(string) error) (Result, error) {
		if job.Mode == "stuck" {
			<-ctx.Done()
			return Result{}, &AbandonedError{Err: ctx.Err(), Done: release}
		}
		return Result{}, nil
	}
	hub, _ := linked(t, Config{Lanes: 1, JobRunner: run})
	hub.send(messages.Frame{Type: messages.TypeAssignJob, JobID: "stuck", Attempt: 1, Mode: "stuck",
		Deadline: time.Now().Add(200 * time.Millisecond).UnixMilli()})
	f := hub.waitFor(isJob("stuck", messages.TypeJobFailed), "job_failed of stuck").f
	assert.Equal(t, ReasonDeadlineExceeded, f.Reason)
	assert.False(t, f.Permanent)

	hb := hub.heartbeatAfter(hub.mark())
	assert.Equal(t, 1, hb.Stats.InFlight, "the held lane counts")
	hub.send(messages.Frame{Type: messages.TypeAssignJob, JobID: "next", Attempt: 1, Mode: "ok"})
	f = hub.waitFor(isJob("next", messages.TypeJobFailed), "rejection of next").f
	assert.Equal(t, ReasonRejected, f.Reason)

	close(release)
	require.Eventually(t, func() bool { return hub.heartbeatAfter(hub.mark()).Stats.InFlight == 0 }, waitTimeout, time.Millisecond)
	hub.send(messages.Frame{Type: messages.TypeAssignJob, JobID: "next", Attempt: 2, Mode: "ok"})
	hub.waitFor(isJob("next", messages.TypeJobDone), "job_done of next")
}
