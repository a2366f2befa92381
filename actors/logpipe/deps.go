package logpipe

import (
	"context"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/paprika-hub/paprika/metrics"
	"github.com/paprika-hub/paprika/persistence"
)

// Timing holds the log pipe's intervals and bounds; the hub fills it from
// config.
type Timing struct {
	LogBatchLines  int           // a batch leaves at this many lines (50)
	LogBatchWait   time.Duration // or after this long (100 ms)
	LogBudgetLines int64         // log lines in memory before the socket readers block
	GrainTimeout   time.Duration // bounds one store call
	IdlePassivate  time.Duration // an idle stream stops after this
	// DonePassivate: an idle stream whose done sentinel went out stops
	// after this instead (0 = IdlePassivate). It has nothing left to take:
	// a line that comes later is refused by the incarnation it wakes,
	// which reads from the store that the log is done, and a re-sent
	// final frame is confirmed again, as on any other hub.
	DonePassivate time.Duration
	// MaxLines and MaxBytes bound one job's stored log (limits.max_log_lines,
	// limits.max_log_bytes); past either the log is marked truncated and
	// further lines are refused. 0 = no bound.
	MaxLines int64
	MaxBytes int64
	// HolderTTL is how long an assignment a link noted (Router.Assigned)
	// answers for its job's holder: the orphan grace, past which the job
	// may have been placed anew. 0 = always ask Holder.
	HolderTTL time.Duration
}

// Deps is what the log actors of a hub share: fixed after the hub starts.
type Deps struct {
	Timing  Timing
	Logs    persistence.LogStore
	Log     *slog.Logger
	Metrics *metrics.Metrics
	Now     func() time.Time
	// Holder names the worker and attempt holding a job now (the job
	// store's claim of record): only that worker's lines and end count.
	// nil trusts every sender (tests of the pipe alone).
	Holder func(ctx context.Context, jobID string) (workerID string, attempt int, err error)
	// Dispatcher runs the turns of the pipe's actors (the hub's
	// dispatch.Pool); nil: protoactor's default.
	Dispatcher actor.Dispatcher
}

// donePassivate is DonePassivate, or IdlePassivate when unset.
func (t Timing) donePassivate() time.Duration {
	if t.DonePassivate > 0 {
		return t.DonePassivate
	}
	return t.IdlePassivate
}

func (d *Deps) now() time.Time {
	if d.Now != nil {
		return d.Now()
	}
	return time.Now()
}
