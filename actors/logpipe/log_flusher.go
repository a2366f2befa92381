package logpipe

import (
	"log/slog"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/paprika-hub/paprika/actors/supervise"
	"github.com/paprika-hub/paprika/internal/backoff"
	"github.com/paprika-hub/paprika/internal/deadline"
	"github.com/paprika-hub/paprika/persistence"
)

// logFlusher writes the batches of every LogStream of this hub. One write is
// in flight at a time and carries everything that arrived meanwhile, so
// round trips to the log store follow its latency, not the number of jobs
// (group commit). A failed write is retried with backoff, never dropped; the
// budget tokens of its lines stay taken, so socket readers slow down instead
// of memory growing.
type logFlusher struct {
	// fixed after construction
	deps   *Deps
	budget *lineBudget
	// carry hands the queue to the next incarnation after a panic, ahead of
	// newer batches in the mailbox, so a job's batches keep their order.
	carry *flusherCarry

	// actor-confined state
	queue    []*flushReq
	writing  bool
	failures int          // consecutive failed writes
	drains   []*actor.PID // callers of drainLogs waiting for an empty queue
	writes   sync.WaitGroup
	timers   *supervise.Timers
	// tick is the tick this incarnation armed last. Each tick arms the
	// next, so one of an earlier incarnation, sent just before the restart
	// stopped its timer, would start a second chain beside the new one's
	// for good: only this one re-arms.
	tick *flusherTick
}

// flusherTick writes whatever partial batches the streams handed over.
type flusherTick struct{ _ byte } // not zero-sized: ticks are told apart by address

// tickLag puts the flusher's tick after the streams' boundary, so their
// hand-overs are in its queue when it writes.
const tickLag = 5 * time.Millisecond

// flushReq is one batch (or only a notification) for the flusher.
type flushReq struct {
	batch    persistence.LogBatch
	hasBatch bool
	urgent   bool // write now rather than on the next tick
	notify   *actor.PID
	payload  interface{}
}

// Persisted tells a WorkerConn that a job's log, done sentinel included,
// is stored: it may now report the job's end.
type Persisted struct {
	JobID   string
	Payload interface{}
}

type writeDone struct {
	id   uint64
	reqs []*flushReq
	err  error
}

type retryWrite struct{}

type flusherCarry struct {
	queue  []*flushReq
	lastID uint64 // write ids stay unique across incarnations
}

// writeRetry spaces the retries of a failed log write: 100 ms doubling
// to 2 s.
var writeRetry = backoff.Policy{Base: 100 * time.Millisecond, Max: 2 * time.Second}

// drainLogs asks the flusher to reply once nothing is queued or in flight.
type drainLogs struct{}

func (f *logFlusher) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		f.timers = supervise.NewTimers(ctx, "log_flusher")
		f.armTick(ctx)
		if len(f.carry.queue) > 0 {
			f.queue, f.carry.queue = f.carry.queue, nil
			f.start(ctx)
		}
	case *flushReq:
		f.queue = append(f.queue, msg)
		if msg.urgent || !msg.hasBatch {
			f.start(ctx)
		}
	case *flusherTick:
		if msg == f.tick {
			f.armTick(ctx)
		}
		f.start(ctx)
	case *writeDone:
		if msg.id == f.carry.lastID {
			f.writing = false // (a write of an earlier incarnation leaves it be)
		}
		if msg.err != nil {
			f.deps.Metrics.LogWriteErrors.Inc()
			pause := writeRetry.Delay(f.failures)
			f.failures++
			f.deps.Log.Warn("log write failed; retrying", slog.Any("err", msg.err), slog.Duration("backoff", pause),
				slog.Int("batches", len(msg.reqs)))
			f.queue = append(msg.reqs, f.queue...)
			f.timers.After(pause, &retryWrite{})
			return
		}
		f.failures = 0
		lines := 0
		for _, r := range msg.reqs {
			lines += len(r.batch.Lines)
			if r.notify != nil {
				ctx.Send(r.notify, &Persisted{JobID: r.batch.JobID, Payload: r.payload})
			}
		}
		f.budget.Release(int64(lines))
		f.deps.Metrics.LogLinesStored.Add(float64(lines))
		f.deps.Metrics.LogWrites.Inc()
		f.start(ctx)
	case *retryWrite:
		f.start(ctx)
	case *drainLogs:
		f.drains = append(f.drains, ctx.Sender())
		f.start(ctx)
	case *actor.Restarting:
		f.timers.StopAll()
		// Let the write in flight land first (its completion reaches the
		// fresh instance), so no two writes race and reorder a job's lines;
		// then requeue what this instance holds.
		f.writes.Wait()
		f.carry.queue = f.queue
	case *supervise.InjectPanic:
		panic("injected panic in log flusher")
	case *actor.Stopping:
		f.timers.StopAll()
		f.writes.Wait()
	}
}

// coalesce turns the queued requests into batches, merging consecutive
// batches of one job (a full batch and the done sentinel right behind it
// become one RPUSH and one PUBLISH).
func coalesce(reqs []*flushReq) []persistence.LogBatch {
	out := make([]persistence.LogBatch, 0, len(reqs))
	last := map[string]int{} // job → index in out of its latest batch
	for _, r := range reqs {
		if !r.hasBatch {
			continue
		}
		b := r.batch
		if i, ok := last[b.JobID]; ok && !out[i].Done && out[i].From+int64(len(out[i].Lines)) == b.From {
			// The streams handed these slices over for good: append in place
			// (amortised), not copy per merge.
			out[i].Lines, out[i].Done = append(out[i].Lines, b.Lines...), b.Done
			continue
		}
		last[b.JobID] = len(out)
		out = append(out, b)
	}
	return out
}

// armTick schedules the next tick just after the streams' next shared
// boundary (see untilTick), re-aligned every time: a repeating timer would
// drift off the boundaries by its own latency and make lines wait a period.
func (f *logFlusher) armTick(ctx actor.Context) {
	every := f.deps.Timing.LogBatchWait
	f.tick = &flusherTick{}
	f.timers.After(untilTick(time.Now(), every)+tickLag, f.tick)
}

// start launches the next write when none is in flight.
func (f *logFlusher) start(ctx actor.Context) {
	if f.writing {
		return
	}
	if len(f.queue) == 0 {
		for _, p := range f.drains {
			ctx.Send(p, true)
		}
		f.drains = nil
		return
	}
	reqs := f.queue
	f.queue = nil
	batches := coalesce(reqs)
	f.writing = true
	f.carry.lastID++
	id := f.carry.lastID
	self := ctx.Self()
	root := ctx.ActorSystem().Root
	timeout := f.deps.Timing.GrainTimeout
	f.writes.Add(1)
	// The write runs off the mailbox so batches keep arriving meanwhile; the
	// flusher owns this goroutine and waits for it when stopping.
	go func() {
		defer f.writes.Done()
		var err error
		if len(batches) > 0 {
			began := time.Now()
			wctx := deadline.Within(timeout)
			err = f.deps.Logs.Write(wctx, batches)
			f.deps.Metrics.LogFlush.Observe(time.Since(began).Seconds())
		}
		root.Send(self, &writeDone{id: id, reqs: reqs, err: err})
	}()
}
