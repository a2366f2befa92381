package grains

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/paprika-hub/paprika/messages"
	"github.com/paprika-hub/paprika/persistence"
)

// A worker's running list (hello, heartbeat) is its say, not the truth: a
// worker holding a valid credential could list another worker's job, or
// ids it made up, and inflate its in_flight and GET /workers. So a listed
// job this grain holds no slot for is adopted only when the job store —
// the claim of record — says this worker holds its current attempt.

// refusedMemory is how long a refused id is not looked up again: a
// worker repeats its list every heartbeat, and the answer stands (a job
// this worker is given later is held by the assignment, not by a report).
const refusedMemory = time.Minute

// maxRefused bounds the refused ids a grain remembers; past it the expired
// ones go, and if none has, all of them (a flood of made-up ids then costs
// store reads, one batch at a time, not memory).
const maxRefused = 1024

// reportCheck is the store's word on one listed id.
type reportCheck struct {
	id      string
	exists  bool
	held    bool // running on this worker: the attempt is current
	final   bool // ended; by this worker when own
	own     bool // the job's worker_id is this worker
	attempt int
}

// A worker lists a job it ran to its end until the end is acknowledged,
// and the job grain frees the job's slot before it writes the end (a lane
// is not held for that write). A report made in between lists a job whose
// slot is free while the store still says the worker runs it — on a
// cluster, even a report made before the end can arrive after the
// release. Adopted, such a job would hold a slot no job uses until the
// prune (SlotPruneAfter, at a later report), and the lane sat idle with
// jobs queued. So the jobs whose slot this activation freed are kept
// (acking) and a report's listing of one is neither adopted nor refused;
// one goes once a report leaves it out — the worker has its ack — and it
// was freed SlotPruneAfter ago (an older report, crossing the release,
// may still list it). While the worker keeps listing it (its end not yet
// stored), it stays: its lane is free either way.
//
// maxAcking bounds the jobs kept; past it, those freed SlotPruneAfter ago
// go whether listed or not, and if that is not enough, all of them (a
// report then costs a store read, as before).
const maxAcking = 1 << 14

// freedReported notes that this activation freed id's slot (a job's; a
// session is never listed).
func (g *workerGrain) freedReported(id string) {
	if isSessionSlot(id) {
		return
	}
	noteBounded(g.acking, id, g.deps.Clock(), SlotPruneAfter, maxAcking)
}

// forgetAcked drops the freed jobs the worker's report no longer lists,
// once freed SlotPruneAfter ago (see freedReported).
func (g *workerGrain) forgetAcked(reported []string) {
	if len(g.acking) == 0 {
		return
	}
	now := g.deps.Clock()
	var listed map[string]struct{} // built once an old entry needs it
	for id, at := range g.acking {
		if now.Sub(at) < SlotPruneAfter {
			continue
		}
		if listed == nil {
			listed = make(map[string]struct{}, len(reported))
			for _, r := range reported {
				listed[r] = struct{}{}
			}
		}
		if _, still := listed[id]; !still {
			delete(g.acking, id)
		}
	}
}

// reportBound is how many unheld ids of one report are looked up: twice
// the slots placement may use (limits.worker_max_lanes and the operator's
// cap included) — jobs running plus finished ones awaiting their ack.
// The rest wait for a later report, once these are settled.
func (g *workerGrain) reportBound() int { return max(2*g.slots(), 2) }

// taken is the slots placement must count as used: those held, those of
// listed jobs whose holder the store is being asked about (a worker back
// after a hub restart is busy with them), and those freed by rejections
// since the worker's last report (rejectHolds).
func (g *workerGrain) taken() int { return len(g.running) + len(g.verifying) + g.rejectHolds }

// adoptRunning learns jobs the worker reports that this activation did not
// reserve (it restarted, or the job was assigned through an earlier one):
// the ids go to the job store off the actor's turn, one batch at a time,
// and a slot is taken for each job the store says this worker holds.
// Anything else is refused (refuseReport).
func (g *workerGrain) adoptRunning(ctx actor.Context, ids []string) {
	g.info.InFlight = len(g.running)
	g.forgetAcked(ids)
	if len(g.verifying) > 0 {
		return // a batch is out: the next report carries the rest
	}
	now := g.deps.Clock()
	var ask []string
	for _, id := range ids {
		if _, held := g.running[id]; held {
			continue
		}
		if _, freed := g.acking[id]; freed {
			continue // ended here, awaiting its ack
		}
		if at, seen := g.refused[id]; seen && now.Sub(at) < refusedMemory {
			continue
		}
		if isSessionSlot(id) {
			// A session's lane is held by its session grain's
			// reservation; workers never list one.
			g.refuseReport(ctx, reportCheck{id: id})
			continue
		}
		if len(ask) == g.reportBound() {
			break
		}
		ask = append(ask, id)
	}
	if len(ask) == 0 {
		return
	}
	for _, id := range ask {
		g.verifying[id] = struct{}{}
	}
	worker, jobs := g.id, g.deps.Jobs
	offTurn(ctx, g.timers, g.deps.storeTimeout(),
		func(rctx context.Context) ([]reportCheck, error) { return checkReported(rctx, jobs, worker, ask) },
		func(checks []reportCheck, err error) { g.settleReported(ctx, checks, err) })
}

// checkReported asks the job store about each id; on a store failure it
// returns what it learned before it (the rest is asked again later).
func checkReported(ctx context.Context, jobs persistence.JobStore, worker string, ids []string) ([]reportCheck, error) {
	out := make([]reportCheck, 0, len(ids))
	for _, id := range ids {
		j, err := jobs.Get(ctx, id)
		switch {
		case errors.Is(err, persistence.ErrNotFound):
			out = append(out, reportCheck{id: id})
		case err != nil:
			return out, fmt.Errorf("read reported job %s: %w", id, err)
		default:
			out = append(out, reportCheck{id: id, exists: true, attempt: j.Attempts, own: j.WorkerID == worker,
				held: j.Status == persistence.StatusRunning && j.WorkerID == worker, final: j.Status.Final()})
		}
	}
	return out, nil
}

// settleReported acts on the store's answers, against the state found now:
// a job assigned meanwhile is held already.
func (g *workerGrain) settleReported(ctx actor.Context, checks []reportCheck, err error) {
	clear(g.verifying)
	if err != nil {
		g.log.Warn("job store read of reported jobs failed; they are asked about again with the next report", slog.Any("err", err))
	}
	for _, c := range checks {
		if _, held := g.running[c.id]; held {
			continue
		}
		if _, freed := g.acking[c.id]; freed {
			continue // assigned and ended while the store was asked
		}
		if c.held {
			g.hold(c.id, int32(c.attempt))
			g.log.Info("reported job adopted: the store says this worker holds it", slog.String("job_id", c.id),
				slog.Int("attempt", c.attempt))
			continue
		}
		g.refuseReport(ctx, c)
	}
	g.info.InFlight = len(g.running)
	g.publish(ctx)
	if err == nil {
		// The latest report may list more than this batch took (its bound,
		// or a report that came while it was out): settle those now rather
		// than at the next heartbeat. A failed read waits for one.
		g.adoptRunning(ctx, g.info.Reported)
	}
}

// refuseReport answers a listed id the worker does not hold: no slot, and
// the worker is told, so an honest one drops it. A job that exists gets a
// cancel_job: whatever attempt of it the worker still runs is stale (the
// store gave the job to another, queued it again, or ended it), and a
// job assigned to this worker later reaches it after the cancel, on the
// same link. Each id is refused once per refusedMemory.
//
// A job this worker itself ran to its end is the one honest case — its
// result is being acknowledged while the report crossed it — so it is
// neither counted nor answered with an error; everything else is counted
// in paprika_fenced_reports_total{kind="running"} and logged.
func (g *workerGrain) refuseReport(ctx actor.Context, c reportCheck) {
	g.remember(c.id)
	if c.exists {
		g.send(ctx, messages.Frame{Type: messages.TypeCancelJob, JobID: c.id})
	}
	if c.final && c.own {
		g.log.Debug("reported job already ended; not held", slog.String("job_id", c.id))
		return
	}
	g.deps.Metrics.FencedReports.WithLabelValues(fencedRunning).Inc()
	g.log.Warn("worker reports a job it does not hold; refused", slog.String("job_id", c.id), slog.Bool("exists", c.exists))
	g.send(ctx, messages.Frame{Type: messages.TypeError, Code: string(messages.CodeNotHolder),
		Message: fmt.Sprintf("running %s: this worker does not hold it; not counted", c.id)})
}

// fencedRunning is the kind of paprika_fenced_reports_total that counts
// refused entries of running lists.
const fencedRunning = "running"

// remember notes a refused id (see refusedMemory, maxRefused).
func (g *workerGrain) remember(id string) {
	noteBounded(g.refused, id, g.deps.Clock(), refusedMemory, maxRefused)
}

// noteBounded sets m[id] = now, keeping m under bound entries: when full,
// those noted keep ago or earlier go, and if that is not enough, all.
func noteBounded(m map[string]time.Time, id string, now time.Time, keep time.Duration, bound int) {
	if len(m) >= bound {
		for k, at := range m {
			if now.Sub(at) >= keep {
				delete(m, k)
			}
		}
		if len(m) >= bound {
			clear(m)
		}
	}
	m[id] = now
}
