package persistence

import "context"

// LogBatch is a run of consecutive lines of one job's log. From is the index
// of its first line: the writer (the LogStream actor) knows it, so a store
// never has to read before it writes, and a follower can place every line.
type LogBatch struct {
	JobID string
	From  int64
	Lines []string
	// Done marks the end of the log (the job is final); set on the last batch.
	Done bool
}

// LogEvent is what a follower receives: the batch as written.
type LogEvent = LogBatch

// LogStore keeps job logs and fans them out live.
type LogStore interface {
	// Write stores every batch and publishes it, all in one round trip when
	// the store is remote: round trips must not grow with the number of jobs.
	Write(ctx context.Context, batches []LogBatch) error
	// Read returns at most max lines from index from on (max <= 0: all), and
	// whether the log is done.
	Read(ctx context.Context, jobID string, from int64, max int) (lines []string, done bool, err error)
	// Len is the number of stored lines; a LogStream resumes from it.
	Len(ctx context.Context, jobID string) (int64, error)
	// Subscribe delivers batches written after it returns. Follow a log by
	// subscribing first, then reading the backlog, then skipping any event
	// line whose index was already read: no gap, no duplicate.
	Subscribe(ctx context.Context, jobID string) (LogSubscription, error)
}

// LogSubscription is a live feed of one job's log batches.
type LogSubscription interface {
	// C yields batches; it is closed when the subscription ends (Close, the
	// context, or the store dropping a slow subscriber — then resume by Read).
	C() <-chan LogEvent
	Close() error
}
