package logpipe

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/paprika-hub/paprika/actors/supervise"
	"github.com/paprika-hub/paprika/internal/deadline"
	"github.com/paprika-hub/paprika/internal/lazylog"
	"github.com/paprika-hub/paprika/persistence"
)

// logStream batches one job's log on the hub receiving its lines: a batch
// leaves at 50 lines or 100 ms, whichever comes first, and the done sentinel
// sends at once. Lines carry the worker's sequence number, so a re-send
// after a reconnect is recognised and dropped: no line twice, none lost.
type logStream struct {
	// fixed after construction
	deps    *Deps
	jobID   string
	flusher *actor.PID
	budget  *lineBudget
	book    *holderBook // nil in tests of the stream alone
	// carry hands the position to the next incarnation after a panic: the
	// store cannot tell it, since the last batch may still be in flight.
	// Incarnations of one actor never run at once, so no lock is needed.
	carry *streamCarry

	// actor-confined state
	log *slog.Logger
	// the job's holder by the store: its lines alone are stored
	holder        string
	holderAttempt int
	holderKnown   bool
	holderRetryAt time.Time
	next          int64 // index of the next line to store
	attempt       int   // the attempt whose lines are being stored
	base          int64 // index of that attempt's line 0
	pending       []string
	from          int64 // index of pending[0]
	done          bool  // no line is accepted any more
	doneSent      bool  // the done sentinel went to the flusher
	// bytes is the text stored for the job so far, as far as this stream
	// saw it: a stream resumed from the store (another hub, a passivated
	// stream) starts at 0, since the store has no byte count; the line
	// count is exact. truncated: the marker is stored, lines are refused.
	bytes       int64
	truncated   bool
	truncatedBy string // "lines" or "bytes"
	armed       bool
	timers      *supervise.Timers
	idle        *supervise.Idle // its passivation (never protoactor's receive timeout, which races the turn)
	resumed     bool            // the store's position was read (resume)
}

// Line is one job_log frame, sent by a socket reader straight to the job's
// stream; the reader took one budget token for it (Router.Acquire).
type Line struct {
	Worker  string // the worker whose link carried it
	Attempt int
	Seq     int64
	Text    string
}

// End ends the log (job_done/job_failed). When the batch is stored, the
// flusher sends Notify a Persisted with Payload: the WorkerConn then
// reports the result.
type End struct {
	Worker  string // the worker whose link carried it
	Attempt int
	Notify  *actor.PID
	Payload interface{}
	// KeepOpen: the attempt failed in a way the job grain may retry (a
	// job_error or lane_error that is not permanent). Its lines are stored
	// but the log stays open for the next attempt's; the grain closes it
	// (Router.CloseLog) when the job ends instead.
	KeepOpen bool
}

// refuseEnd answers an End whose sender does not hold the job: the log
// stays open, and the report goes on (through the flusher, behind the
// lines before it) to the job grain, which refuses it as stale.
func refuseEnd(ctx actor.Context, d *Deps, flusher *actor.PID, m *End) {
	d.Metrics.FencedReports.WithLabelValues("log").Inc()
	ctx.Send(flusher, &flushReq{notify: m.Notify, payload: m.Payload})
}

// closeLog ends the log on the hub's own decision (cancel, deadline, lost).
type closeLog struct{}

// flushNow hands any pending lines to the flusher (shutdown); it replies.
type flushNow struct{}

type logFlushTick struct{}

// untilTick is the wait to the next multiple of every on the wall clock.
// Every stream of the hub hands its partial batch over on the same
// boundaries, so the flusher's tick right after carries all of them in one
// write: round trips follow the tick, not the number of jobs.
func untilTick(now time.Time, every time.Duration) time.Duration {
	if every <= 0 {
		return 0
	}
	return every - time.Duration(now.UnixNano()%int64(every))
}

// streamCarry is a LogStream's position, kept across restarts.
type streamCarry struct {
	valid          bool
	next, base     int64
	attempt        int
	done, doneSent bool
	bytes          int64
	truncated      bool
	truncatedBy    string
	resumed        bool
}

func (s *logStream) Receive(ctx actor.Context) {
	if s.idle.Skip(ctx.Message()) {
		return
	}
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		s.start(ctx)
	case *actor.Stopping:
		s.timers.StopAll()
	case *actor.Restarting:
		s.timers.StopAll()
		s.flush(ctx, nil, nil) // hand pending lines on before this instance goes
		*s.carry = streamCarry{valid: true, next: s.next, base: s.base, attempt: s.attempt, done: s.done, doneSent: s.doneSent,
			bytes: s.bytes, truncated: s.truncated, truncatedBy: s.truncatedBy, resumed: s.resumed}
	case *supervise.InjectPanic:
		panic("injected panic in log stream " + s.jobID)
	case *Line:
		s.add(ctx, msg)
	case *logFlushTick:
		s.armed = false
		s.flush(ctx, nil, nil)
	case *End:
		if !s.holds(ctx, msg.Worker, msg.Attempt) {
			refuseEnd(ctx, s.deps, s.flusher, msg)
			return
		}
		if s.done {
			// Already stored (a re-sent final frame): confirm at once.
			ctx.Send(s.flusher, &flushReq{notify: msg.Notify, payload: msg.Payload})
			return
		}
		if !msg.KeepOpen {
			s.done = true
		}
		s.flush(ctx, msg.Notify, msg.Payload)
	case *closeLog:
		if !s.done {
			s.done = true
			s.flush(ctx, nil, nil)
		}
	case *flushNow:
		s.flush(ctx, nil, nil)
		if ctx.Sender() != nil {
			ctx.Respond(true)
		}
	case *supervise.IdleTimeout:
		if len(s.pending) == 0 {
			ctx.Stop(ctx.Self())
		}
	}
}

func (s *logStream) start(ctx actor.Context) {
	s.log = lazylog.With(s.deps.Log, slog.String("job_id", s.jobID))
	s.timers = supervise.NewTimers(ctx, "log_stream")
	s.idle = supervise.NewIdle(s.timers)
	s.idle.Set(s.deps.Timing.IdlePassivate)
	if c := s.carry; c.valid {
		s.next, s.from, s.base, s.attempt, s.done, s.doneSent = c.next, c.next, c.base, c.attempt, c.done, c.doneSent
		s.bytes, s.truncated, s.truncatedBy = c.bytes, c.truncated, c.truncatedBy
		s.resumed = c.resumed
		if s.doneSent {
			s.idle.Set(s.deps.Timing.donePassivate())
		}
		return
	}
}

// resume reads where the store is, before the stream's first line: this
// may be a new hub for a job whose first lines another hub stored before
// it died. A job that ends without a line never needs it (its done
// sentinel carries no line, and writing it twice is harmless), which
// saves two store round trips per such job.
func (s *logStream) resume() {
	s.resumed = true
	rctx := deadline.Within(s.deps.Timing.GrainTimeout)
	n, err := s.deps.Logs.Len(rctx, s.jobID)
	if err != nil {
		s.log.Warn("log length unknown; trusting the worker's sequence", slog.Any("err", err))
		n = -1
	}
	s.next, s.from = n, n
	if t := s.deps.Timing; t.MaxLines > 0 && n > t.MaxLines {
		// The marker is stored past the last line the bound allowed.
		s.truncated, s.truncatedBy = true, "lines"
	}
	if n >= 0 {
		if _, done, err := s.deps.Logs.Read(rctx, s.jobID, n, 1); err == nil {
			s.done = done
		}
	}
}

func (s *logStream) add(ctx actor.Context, m *Line) {
	if !s.resumed {
		s.resume()
	}
	if !s.holds(ctx, m.Worker, m.Attempt) {
		// A line for a job the sender does not hold (another worker, or
		// an attempt that is not the current one) is refused, not stored.
		s.deps.Metrics.FencedReports.WithLabelValues("log").Inc()
		s.budget.Release(1)
		return
	}
	if s.next < 0 { // length unknown: the first line sets it
		s.next, s.from = m.Seq, m.Seq
	}
	if m.Attempt < s.attempt {
		s.deps.Metrics.FencedReports.WithLabelValues("log").Inc()
		s.budget.Release(1)
		return
	}
	if m.Attempt > s.attempt {
		// A new attempt appends after what earlier ones wrote. A fresh stream
		// knows attempt 1 starts at 0; for a later attempt it assumes the
		// stored lines end where this one's resend begins.
		switch {
		case s.attempt > 0:
			s.base = s.next
		case m.Attempt <= 1:
			s.base = 0
		default:
			s.base = max(s.next-m.Seq, 0)
		}
		s.attempt = m.Attempt
	}
	idx := s.base + m.Seq
	if s.done || idx < s.next {
		s.deps.Metrics.LogLinesDuplicate.Inc()
		s.budget.Release(1)
		return
	}
	if idx > s.next {
		s.deps.Metrics.LogGaps.Inc()
		s.log.Warn("log line sequence gap", slog.Int64("want", s.next), slog.Int64("got", idx))
	}
	if s.truncated {
		s.refuse(ctx, "")
		return
	}
	t := s.deps.Timing
	switch {
	case t.MaxLines > 0 && s.next >= t.MaxLines:
		s.refuse(ctx, "lines")
		return
	case t.MaxBytes > 0 && s.bytes+int64(len(m.Text)) > t.MaxBytes:
		s.refuse(ctx, "bytes")
		return
	}
	s.append(m.Text)
	s.bytes += int64(len(m.Text))
	s.flushSoon(ctx)
}

// append adds text as the next line of the log.
func (s *logStream) append(text string) {
	if len(s.pending) == 0 {
		s.from = s.next
	}
	s.pending = append(s.pending, text)
	s.next++
}

// flushSoon hands a full batch on now, else arms the batch timer.
func (s *logStream) flushSoon(ctx actor.Context) {
	if len(s.pending) >= s.deps.Timing.LogBatchLines {
		s.flush(ctx, nil, nil)
		return
	}
	if !s.armed {
		s.armed = true
		s.timers.After(untilTick(s.deps.now(), s.deps.Timing.LogBatchWait), &logFlushTick{})
	}
}

// refuse drops a line past the job's log bound (its budget token goes
// back). The first refusal, bound names the limit hit, stores one marker
// line so a reader sees the log was cut and where; the done sentinel still
// comes with the job's end, so followers end as usual.
func (s *logStream) refuse(ctx actor.Context, bound string) {
	s.budget.Release(1)
	if bound == "" {
		bound = s.truncatedBy
	}
	s.deps.Metrics.LogLinesRefused.WithLabelValues(bound).Inc()
	if s.truncated {
		return
	}
	s.truncated, s.truncatedBy = true, bound
	n := s.deps.Timing.MaxLines
	if bound == "bytes" {
		n = s.deps.Timing.MaxBytes
	}
	s.log.Warn("job log truncated", slog.String("limit", "limits.max_log_"+bound), slog.Int64("max", n))
	s.append(fmt.Sprintf("[log truncated: limit of %d %s reached]", n, bound))
	s.flushSoon(ctx)
}

func (s *logStream) flush(ctx actor.Context, notify *actor.PID, payload interface{}) {
	final := s.done && !s.doneSent
	if len(s.pending) == 0 && !final && notify == nil {
		return
	}
	if final {
		s.doneSent = true
		// A finished log's stream goes soon: at a steady thousand jobs a
		// second the 30 s idle wait kept tens of thousands of them up.
		s.idle.Set(s.deps.Timing.donePassivate())
	}
	b := persistence.LogBatch{JobID: s.jobID, From: max(s.from, 0), Lines: s.pending, Done: final}
	// A full batch, the done sentinel and a waiting reporter go out at
	// once; a partial batch rides on the flusher's next tick.
	urgent := final || notify != nil || len(s.pending) >= s.deps.Timing.LogBatchLines
	s.pending = nil
	s.from = s.next
	ctx.Send(s.flusher, &flushReq{batch: b, notify: notify, payload: payload, hasBatch: true, urgent: urgent})
}

// holds reports whether worker holds the job under attempt, by the job
// store's claim of record. The stream asks once, and again when a later
// attempt speaks (the job was placed anew): the assignment this hub's link
// sent answers when there is one (holderBook), else the store; while the store cannot
// answer it trusts the sender for holderRetry rather than lose honest
// lines — the job grain still fences the job's end.
func (s *logStream) holds(ctx actor.Context, worker string, attempt int) bool {
	if s.deps.Holder == nil || worker == "" {
		return true
	}
	now := s.deps.now()
	if !s.holderKnown || attempt > s.holderAttempt {
		// An assignment older than the speaker's attempt says nothing of
		// it: the store does.
		if w, a, ok := s.book.take(s.jobID, now); ok && a >= attempt && a >= s.holderAttempt {
			s.holder, s.holderAttempt, s.holderKnown = w, a, true
			return worker == s.holder && attempt == s.holderAttempt
		}
		if now.Before(s.holderRetryAt) {
			return true
		}
		rctx := deadline.Within(holderReadTimeout)
		w, a, err := s.deps.Holder(rctx, s.jobID)
		if err != nil {
			s.holderRetryAt = now.Add(holderRetry)
			s.log.Warn("log stream: job holder unknown; taking lines on trust", slog.Any("err", err))
			return true
		}
		s.holder, s.holderAttempt, s.holderKnown = w, a, true
	}
	return worker == s.holder && attempt == s.holderAttempt
}

// holderRetry spaces the store reads of a stream whose store is away;
// holderReadTimeout bounds one (the stream's other lines wait behind it).
const (
	holderRetry       = time.Second
	holderReadTimeout = 1500 * time.Millisecond
)
