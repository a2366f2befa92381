package agent

import (
	"context"
	"errors"
)

// JobRunner runs one job on lane, as Driver.Run does (the same contract
// for ctx, emit, the result and the error), for Config.JobRunner.
type JobRunner func(ctx context.Context, lane int, job Job, emit func(line string) error) (Result, error)

// AbandonedError is what a JobRunner returns for a job whose code did not
// return when its context ended (a handler that ignores cancellation):
// the attempt is reported failed at once, with the reason the context's
// end gives (deadline_exceeded, canceled, worker_lost), and whatever the
// code returns later is dropped. Its lane stays taken, and counted in
// in_flight, until Done is closed: the worker never runs more than
// Config.Lanes jobs' code at once, and a browser lane is never shared by
// the stuck code and the next job.
type AbandonedError struct {
	// Err says why the job was abandoned (the context's error).
	Err error
	// Done is closed when the job's code returned at last.
	Done <-chan struct{}
}

// Error implements error.
func (e *AbandonedError) Error() string {
	return "job code did not return after its context ended; abandoned: " + e.Err.Error()
}

// Unwrap returns the cause.
func (e *AbandonedError) Unwrap() error { return e.Err }

// holdLane keeps rj's lane taken until done is closed, for a job that was
// abandoned (AbandonedError). The goroutine is owned by the abandoned code:
// it ends when that code returns.
func (a *Agent) holdLane(rj *runningJob, done <-chan struct{}) {
	a.mu.Lock()
	a.held++
	a.mu.Unlock()
	a.lg().Warn("job abandoned: its code ignores cancellation; its lane stays taken until it returns",
		"job_id", rj.key.id, "attempt", rj.key.attempt, "lane", rj.laneURL)
	go func() {
		<-done
		a.mu.Lock()
		a.held--
		a.lanes.release(rj.lane)
		a.mu.Unlock()
		a.lg().Info("abandoned job returned; lane free", "job_id", rj.key.id, "attempt", rj.key.attempt, "lane", rj.laneURL)
	}()
}

// abandoned returns the AbandonedError in err's chain, or nil.
func abandoned(err error) *AbandonedError {
	var ab *AbandonedError
	if errors.As(err, &ab) {
		return ab
	}
	return nil
}
