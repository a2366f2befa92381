package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/paprika-hub/paprika/messages"
)

// maxLineBytes bounds one log line; longer lines are cut, so one line can
// never exceed the link's frame limit.
const maxLineBytes = 64 << 10

// runningJob is one job attempt on one lane. Its goroutine (run) is owned by
// the Agent (jobWG) and ends when the driver returns; ctx is how it is
// stopped.
type runningJob struct {
	// Fixed before run starts.
	a       *Agent
	key     jobKey
	lane    int
	laneURL string
	job     Job
	ctx     context.Context // ends on cancel_job or when the agent stops
	cancel  context.CancelCauseFunc
	execLog *execLog

	emitMu sync.Mutex // orders seq numbers with the outbox
	seq    int64
}

// run executes the job and queues its frames: job_started, job_log per line,
// then job_done or job_failed.
func (rj *runningJob) run() {
	a := rj.a
	defer a.jobWG.Done()
	defer rj.cancel(nil)
	log := a.lg().With("job_id", rj.key.id, "attempt", rj.key.attempt, "lane", rj.laneURL)

	if err := rj.execLog.record("start", a.ID(), rj.key.id, rj.key.attempt); err != nil {
		log.Warn("exec log", "err", err)
	}
	rj.queue(messages.Frame{Type: messages.TypeJobStarted, Lane: rj.laneURL}, false)
	log.Info("job started", "mode", rj.job.Mode)

	ctx := rj.ctx
	if !rj.job.Deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, rj.job.Deadline)
		defer cancel()
	}
	start := time.Now()
	res, err := rj.drive(ctx)
	if err := rj.execLog.record("end", a.ID(), rj.key.id, rj.key.attempt); err != nil {
		log.Warn("exec log", "err", err)
	}
	var hold <-chan struct{}
	if ab := abandoned(err); ab != nil {
		hold = ab.Done
	}
	a.finish(rj, hold)

	if err == nil {
		if len(res.JSON) == 0 {
			res.JSON = json.RawMessage("{}")
		}
		if !json.Valid(res.JSON) {
			err = Fail(ReasonLaneError, "driver %s returned an invalid result", a.driver.Name())
		}
	}
	if err == nil {
		rj.queue(messages.Frame{Type: messages.TypeJobDone, Result: res.JSON, Assets: res.Assets}, true)
		log.Info("job done", "lines", rj.lines(), "took", time.Since(start))
		return
	}
	reason := rj.reason(ctx, err)
	var je *JobError
	permanent := reason == ReasonJobError && errors.As(err, &je) && je.Permanent
	rj.queue(messages.Frame{Type: messages.TypeJobFailed, Reason: reason, Error: messages.TruncateError(err.Error()),
		Permanent: permanent}, true)
	log.Info("job failed", "reason", reason, "lines", rj.lines(), "took", time.Since(start), "err", err)
}

// drive calls the driver, turning a panic into a lane error so one bad job
// cannot take the worker down.
func (rj *runningJob) drive(ctx context.Context) (res Result, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = Fail(ReasonLaneError, "driver panic: %v", p)
		}
	}()
	emit := func(line string) error { return rj.emit(ctx, line) }
	if run := rj.a.cfg.JobRunner; run != nil {
		return run(ctx, rj.lane, rj.job, emit)
	}
	return rj.a.driver.Run(ctx, rj.lane, rj.job, emit)
}

// reason maps a job's error to a job_failed reason. Why the context ended
// wins over what the driver says, since drivers just echo ctx.Err().
func (rj *runningJob) reason(ctx context.Context, err error) string {
	if ctx.Err() != nil {
		cause := context.Cause(rj.ctx)
		switch {
		case errors.Is(cause, errCanceledByHub):
			return ReasonCanceled
		case errors.Is(cause, errAgentStopping):
			return ReasonWorkerLost
		case errors.Is(ctx.Err(), context.DeadlineExceeded):
			return ReasonDeadlineExceeded
		}
	}
	var je *JobError
	if errors.As(err, &je) && je.Reason != "" {
		return je.Reason
	}
	return ReasonJobError
}

// emit queues one log line, waiting while a live link is backed up.
func (rj *runningJob) emit(ctx context.Context, line string) error {
	for {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("emit log line: %w", err)
		}
		room := rj.a.box.roomCh()
		if room == nil {
			break
		}
		select {
		case <-ctx.Done():
		case <-room:
		}
	}
	if len(line) > maxLineBytes {
		line = strings.ToValidUTF8(line[:maxLineBytes], "")
	}
	rj.emitMu.Lock()
	defer rj.emitMu.Unlock()
	rj.queueLocked(messages.Frame{Type: messages.TypeJobLog, Seq: rj.seq, Line: line}, false)
	rj.seq++
	return nil
}

// queue adds a frame of this job to the outbox.
func (rj *runningJob) queue(f messages.Frame, final bool) {
	rj.emitMu.Lock()
	defer rj.emitMu.Unlock()
	rj.queueLocked(f, final)
}

func (rj *runningJob) queueLocked(f messages.Frame, final bool) {
	f.JobID, f.Attempt = rj.key.id, rj.key.attempt
	b, err := f.Encode()
	if err != nil { // only a result that is not JSON can fail, checked above
		rj.a.lg().Error("encode job frame", "job_id", rj.key.id, "type", f.Type, "err", err)
		return
	}
	rj.a.box.add(rj.key, b, final)
}

// lines is the number of log lines emitted so far.
func (rj *runningJob) lines() int64 {
	rj.emitMu.Lock()
	defer rj.emitMu.Unlock()
	return rj.seq
}
