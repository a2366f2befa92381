package memory

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/paprika-hub/paprika/persistence"
)

var _ persistence.LogStore = (*LogStore)(nil)

// DefaultSubscriberBuffer is how many batches a subscriber may fall behind
// before LogStore drops it.
const DefaultSubscriberBuffer = 256

// LogStore is an in-memory persistence.LogStore: each job's lines in a slice
// and a set of subscribers fed by channels.
//
// A writer never waits for a reader: a subscriber whose buffer is full has
// its channel closed and is forgotten, as Redis drops a pub/sub client over
// its output-buffer limit; the follower resumes with Read. Subscribers of
// one job's share each event's Lines: treat them as read-only. With
// WithRetention, a log not written for the retention is dropped (as Redis
// expires it), so a long-running embedded hub does not grow without bound.
//
// Most short jobs write no line: their log is the done marker alone. Those
// are kept apart (ended), at less than half a full log's bytes — a day's
// retention of an embedded hub at a few hundred jobs a second is millions
// of them — and pruned oldest first as writes come, never by a scan.
type LogStore struct {
	buffer    int              // channel capacity of each subscription; fixed
	retention time.Duration    // 0 = keep forever; fixed
	now       func() time.Time // the clock of the writes (tests set it); fixed

	mu        sync.Mutex
	logs      map[string]*jobLog
	lastPrune time.Time
	// ended is the logs that are a done marker alone, by when it was
	// written (UnixNano); a line or a subscriber makes one a jobLog.
	ended map[string]int64
	// endedOrder is ended's writes oldest first from endedHead, for the
	// retention; an entry whose time ended no longer holds is stale.
	endedOrder []endedMark
	endedHead  int
}

// endedMark is one write of a done marker alone.
type endedMark struct {
	id string
	at int64
}

// jobLog is one job's log; guarded by LogStore.mu.
type jobLog struct {
	lines   []string
	done    bool
	subs    map[*logSubscription]struct{}
	written time.Time
}

// WithRetention drops a log (lines and done marker) not written for d;
// 0 keeps every log until the process ends.
func WithRetention(d time.Duration) LogStoreOption {
	return func(s *LogStore) { s.retention = max(d, 0) }
}

// LogStoreOption configures NewLogStore.
type LogStoreOption func(*LogStore)

// WithSubscriberBuffer sets how many batches a subscriber may fall behind
// before it is dropped (default DefaultSubscriberBuffer; minimum 1).
func WithSubscriberBuffer(n int) LogStoreOption {
	return func(s *LogStore) { s.buffer = max(n, 1) }
}

// NewLogStore returns an empty LogStore.
func NewLogStore(opts ...LogStoreOption) *LogStore {
	s := &LogStore{buffer: DefaultSubscriberBuffer, logs: make(map[string]*jobLog), ended: make(map[string]int64), now: time.Now}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Write appends every batch at its index and publishes it to the job's
// subscribers, all under one lock, so a follower never sees a batch out of
// order. Lines the log already holds at their index are not appended again
// (a retried write, two writers of one job); a batch past the end is
// appended anyway, at the end. The published event carries the index the
// lines got.
func (s *LogStore) Write(ctx context.Context, batches []persistence.LogBatch) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("write logs: %w", err)
	}
	for _, b := range batches {
		if b.JobID == "" {
			return fmt.Errorf("write logs: batch without job id")
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	s.pruneLocked(now)
	for _, b := range batches {
		if len(b.Lines) == 0 && b.Done && s.logs[b.JobID] == nil {
			// Nobody follows it (a subscriber has a jobLog): nothing to publish.
			s.markEnded(b.JobID, now)
			continue
		}
		l := s.log(b.JobID)
		l.written = now
		lines := b.Lines
		if skip := int64(len(l.lines)) - b.From; skip > 0 {
			lines = lines[min(skip, int64(len(lines))):]
		}
		ev := persistence.LogEvent{
			JobID: b.JobID,
			From:  int64(len(l.lines)),
			Lines: slices.Clone(lines),
			Done:  b.Done,
		}
		l.lines = append(l.lines, lines...)
		l.done = l.done || b.Done
		for sub := range l.subs {
			select {
			case sub.ch <- ev:
			default:
				// Full: drop the slow subscriber rather than block the
				// writer (and every other job's followers behind it).
				sub.endLocked()
			}
		}
	}
	return nil
}

// markEnded notes jobID's log as a done marker alone, written at now;
// s.mu is held.
func (s *LogStore) markEnded(jobID string, now time.Time) {
	at := now.UnixNano()
	s.ended[jobID] = at
	if s.retention > 0 {
		s.endedOrder = append(s.endedOrder, endedMark{id: jobID, at: at})
	}
}

// pruneLocked drops logs not written for the retention: the done markers
// alone oldest first, the others at most once per tenth of it (a scan of
// them, amortised over the writes).
func (s *LogStore) pruneLocked(now time.Time) {
	if s.retention <= 0 {
		return
	}
	cut := now.Add(-s.retention).UnixNano()
	for s.endedHead < len(s.endedOrder) && s.endedOrder[s.endedHead].at < cut {
		m := s.endedOrder[s.endedHead]
		if at, ok := s.ended[m.id]; ok && at == m.at {
			delete(s.ended, m.id)
		}
		s.endedOrder[s.endedHead] = endedMark{}
		s.endedHead++
	}
	if s.endedHead > 1024 && s.endedHead*2 > len(s.endedOrder) {
		// Keep the slice's dead front from outgrowing the live marks.
		s.endedOrder = append(s.endedOrder[:0], s.endedOrder[s.endedHead:]...)
		s.endedHead = 0
	}
	if now.Sub(s.lastPrune) < s.retention/10 {
		return
	}
	s.lastPrune = now
	for id, l := range s.logs {
		if len(l.subs) == 0 && now.Sub(l.written) > s.retention {
			delete(s.logs, id)
		}
	}
}

// Read returns up to max lines of jobID from index from (max <= 0: all) and
// whether the log is done. An unknown job has no lines and is not done.
func (s *LogStore) Read(ctx context.Context, jobID string, from int64, max int) ([]string, bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, false, fmt.Errorf("read log of job %s: %w", jobID, err)
	}
	if from < 0 {
		return nil, false, fmt.Errorf("read log of job %s: negative index %d", jobID, from)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.logs[jobID]
	if !ok {
		_, done := s.ended[jobID]
		return nil, done, nil
	}
	if from >= int64(len(l.lines)) {
		return nil, l.done, nil
	}
	lines := l.lines[from:]
	if max > 0 && len(lines) > max {
		lines = lines[:max]
	}
	return slices.Clone(lines), l.done, nil
}

// Len returns the number of stored lines of jobID.
func (s *LogStore) Len(ctx context.Context, jobID string) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("length of log of job %s: %w", jobID, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if l, ok := s.logs[jobID]; ok {
		return int64(len(l.lines)), nil
	}
	return 0, nil
}

// Subscribe returns a feed of jobID's batches written from now on. It ends
// on Close, when ctx is done, or when the subscriber falls behind.
func (s *LogStore) Subscribe(ctx context.Context, jobID string) (persistence.LogSubscription, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("subscribe to log of job %s: %w", jobID, err)
	}
	sub := &logSubscription{store: s, jobID: jobID, ch: make(chan persistence.LogEvent, s.buffer)}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log(jobID).subs[sub] = struct{}{}
	// AfterFunc starts no goroutine until ctx is done; stop cancels it.
	sub.stop = context.AfterFunc(ctx, func() { _ = sub.Close() })
	return sub, nil
}

// log returns jobID's log, creating it (from its done marker, if it is
// one); s.mu is held.
func (s *LogStore) log(jobID string) *jobLog {
	l, ok := s.logs[jobID]
	if !ok {
		l = &jobLog{subs: make(map[*logSubscription]struct{})}
		if at, done := s.ended[jobID]; done {
			l.done, l.written = true, time.Unix(0, at)
			delete(s.ended, jobID) // its endedOrder entry goes stale
		}
		s.logs[jobID] = l
	}
	return l
}

// logSubscription is one follower's feed. Its fields after construction are
// guarded by store.mu, which every send and the close of ch also hold.
type logSubscription struct {
	store *LogStore
	jobID string
	ch    chan persistence.LogEvent
	stop  func() bool // cancels the context watch
	ended bool
}

// C yields the batches; it is closed when the subscription ends.
func (sub *logSubscription) C() <-chan persistence.LogEvent { return sub.ch }

// Close ends the subscription and closes C. It is safe to call twice.
func (sub *logSubscription) Close() error {
	sub.store.mu.Lock()
	defer sub.store.mu.Unlock()
	sub.endLocked()
	return nil
}

// endLocked unregisters sub and closes its channel once; store.mu is held.
func (sub *logSubscription) endLocked() {
	if sub.ended {
		return
	}
	sub.ended = true
	sub.stop()
	close(sub.ch)
	if l, ok := sub.store.logs[sub.jobID]; ok {
		delete(l.subs, sub)
	}
}
