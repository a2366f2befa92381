package grains

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"

	"github.com/paprika-hub/paprika/actors/supervise"
	"github.com/paprika-hub/paprika/internal/deadline"
	"github.com/paprika-hub/paprika/messages"
	"github.com/paprika-hub/paprika/persistence"
)

// workerGrain is `worker/<id>`: the authority on one worker's slots. It holds
// the worker's capabilities, status, last heartbeat, the jobs it reserved
// slots for, and the PID of the WorkerConn that holds its socket (on
// whichever hub). Its state is rebuilt from the registry and the worker's
// next hello/heartbeat after a restart or a move.
type workerGrain struct {
	// fixed after construction
	deps *Deps

	// actor-confined state
	grain
	info persistence.WorkerInfo
	// runnable is runnableModes(info.Modes, info.Drivers), set with them:
	// every push to the scheduler carries it, a job's life makes two.
	runnable []string
	conn     *actor.PID
	connAt   int64            // when conn's socket was accepted (unix ns)
	running  map[string]int32 // job id → attempt holding a slot
	heldAt   map[string]time.Time
	sending  map[string][]waiter // job id → callers waiting for its link to take the frame
	lostStop supervise.Stop
	// registryStop: a registry write is due (publishSoon); nil when none.
	registryStop supervise.Stop
	// verifying: reported ids whose holder the job store is being asked
	// about; refused: reported ids it said this worker does not hold, and
	// when (worker_adopt.go).
	verifying map[string]struct{}
	refused   map[string]time.Time
	// approval (auth.worker_approval): what the store says, the number of
	// operator decisions so far (a read older than the last is dropped),
	// and whether a read is out (worker_approval.go).
	approval        approvalState
	approvalGen     int
	approvalReading bool
	// skips: what the worker on link skipConn was last told of its
	// skipped lanes (health.go, syncSkips).
	skips skipSent
	// leaving: the link on which the worker said it takes no more work
	// (a leaving frame: it drains or stops). Placement sees the worker as
	// draining while that link lasts; a new link starts without it.
	leaving *actor.PID
	// placed: jobs whose assignment the link took since the last push to
	// the scheduler; the next SchedWorkerState settles them there.
	placed []string
	// removed: the SchedRemoves of final releases, for the same push.
	removed []*messages.SchedRemove
	// pushes: publishSoon's rounds of state pushes.
	pushes pushRounds
	// acking: the jobs whose slot this activation freed, which the worker
	// may still list, and when each was freed (worker_adopt.go, acking).
	acking map[string]time.Time
	// rejectHolds: the capacity of slots freed by rejections since the
	// worker's last report, still counted taken (WorkerRelease.rejected).
	rejectHolds int
}

// ConnAckTimeout bounds the wait for a WorkerConn to take a frame; a live
// one answers in microseconds, a dead hub's never.
const ConnAckTimeout = 3 * time.Second

// SlotPruneAfter is how long a slot may go unreported before the worker's own
// report frees it. Reports and assignments cross on the socket, so a job
// sent a moment ago may be missing from a report composed before it
// arrived; past this age it is not: the worker finished it (and the
// release was lost — sent to an activation that a topology change had just
// stopped) or never got it. Either way the lane is free, and a slot leaked
// this way would shrink the fleet for good. Over-assigning by mistake only
// costs a "rejected" requeue.
const SlotPruneAfter = 5 * time.Second

// registryFlushDelay is how long a slot change (an assignment or a
// release) may wait for its registry write, so that a busy worker's many
// changes go as one write. The registry's list of running jobs is only
// read by a later activation and the reconciler; the worker's own report
// corrects a stale one (and an over-assignment costs a rejected requeue).
const registryFlushDelay = 250 * time.Millisecond

// pushTick ends a round of publishSoon's pushes: the state push left due,
// if any (a value: a busy grain sends one a round, and it carries nothing).
type pushTick struct{}

// pushRounds coalesces a worker grain's state pushes by mailbox rounds:
// a change with no round open is pushed at once and opens one (a pushTick
// to itself); the changes until that tick is handled — the messages that
// were in the mailbox before it — wait and go in one push at the tick,
// which opens the next round; a tick with nothing waiting closes it.
type pushRounds struct {
	open bool // a pushTick is in the mailbox
	due  bool // a change waits for it
}

// change notes a change of the state: true to push it now and open a
// round (send a pushTick), false when it waits for the round's tick.
func (r *pushRounds) change() bool {
	if r.open {
		r.due = true
		return false
	}
	r.open = true
	return true
}

// tick ends a round: push what waits (and send the next round's tick), or
// close the rounds.
func (r *pushRounds) tick() bool {
	if !r.due {
		r.open = false
		return false
	}
	return true
}

// pushed notes a push, whatever sent it: nothing waits any more.
func (r *pushRounds) pushed() { r.due = false }

// registryFlushTick writes the registry record publishSoon left due.
type registryFlushTick struct{}

// workerLostTick fires orphan_grace after the socket closed.
type workerLostTick struct{ conn *actor.PID }

// NewWorkerKind registers the worker grain.
func NewWorkerKind(d *Deps) *cluster.Kind {
	return newKind(d, KindWorker, func() actor.Actor { return &workerGrain{deps: d} })
}

func (g *workerGrain) Receive(ctx actor.Context) {
	if g.common(ctx) {
		return
	}
	switch msg := ctx.Message().(type) {
	case *cluster.ClusterInit:
		g.init(ctx, msg)
	case *messages.WorkerConnected:
		g.connected(ctx, msg)
	case *messages.WorkerHeartbeat:
		g.heartbeat(ctx, msg)
	case *messages.WorkerDisconnected:
		g.disconnected(ctx, msg)
	case *messages.WorkerLeaving:
		g.leave(ctx, msg)
	case *messages.WorkerAssign:
		g.assign(ctx, msg)
	case *messages.WorkerRelease:
		g.released(ctx, msg)
	case *messages.WorkerForward:
		if g.conn != nil {
			ctx.Send(g.conn, &messages.ConnSend{Frame: msg.Frame})
			return
		}
		if f, err := messages.DecodeFrame(msg.Frame); err == nil && f.Type == messages.TypeSessionCommand {
			// Its caller should hear at once, not at the command timeout.
			Send(ctx, g.cl, f.SessionID, KindSession, &messages.SessionResult{CommandId: f.CommandID,
				Error: fmt.Sprintf("worker %s is not connected (it may be reconnecting); try again", g.id)})
		}
	case *messages.WorkerCancelJob:
		g.send(ctx, messages.Frame{Type: messages.TypeCancelJob, JobID: msg.JobId, Attempt: int(msg.Attempt)})
	case *messages.WorkerSetStatus:
		reply(ctx, g.setStatus(ctx, msg))
	case *messages.WorkerGetInfo:
		reply(ctx, ok(g.infoJSON()))
	case *messages.WorkerSync:
		g.pushScheduler(ctx)
	case *workerLostTick:
		g.lost(ctx, msg)
	case pushTick:
		if g.pushes.tick() {
			g.pushScheduler(ctx)
			ctx.Send(ctx.Self(), pushTick{}) // the next round's changes wait for it
		}
	case *registryFlushTick:
		g.registryStop = nil
		g.writeRegistry()
	case *supervise.InjectPanic:
		panic("injected panic in worker grain " + g.id)
	}
}

func (g *workerGrain) init(ctx actor.Context, msg *cluster.ClusterInit) {
	g.begin(ctx, g.deps, msg, KindWorker, "worker_id")
	g.running = map[string]int32{}
	g.heldAt = map[string]time.Time{}
	g.sending = map[string][]waiter{}
	g.verifying = map[string]struct{}{}
	g.refused = map[string]time.Time{}
	g.acking = map[string]time.Time{}
	g.info = persistence.WorkerInfo{ID: g.id, Status: WorkerActive}
	g.readApproval(ctx)
	// The registry keeps what must outlive this activation: the operator's
	// status (a drained worker stays drained) and the jobs it was running.
	rctx := deadline.Within(g.deps.Timing.FleetReadTimeout)
	if w, err := g.deps.Workers.Get(rctx, g.id); err == nil {
		g.info = w
		g.runnable = runnableModes(w.Modes, w.Drivers)
		g.info.Alive = false
		if g.info.Status == WorkerPending {
			g.info.Status = WorkerActive // the approval store decides that (status)
		}
		for _, j := range w.Running {
			g.hold(j, 0)
		}
		// A restart (or a move) keeps the socket: its WorkerConn is still
		// there, recorded by the last activation.
		if w.Connected && w.Link != "" {
			addr, id, _ := strings.Cut(w.Link, "/")
			g.conn, g.connAt = actor.NewPID(addr, id), w.LinkStarted
		} else if len(g.running) > 0 {
			// Away with work held: the grace runs again from now (the
			// timer of the activation before is gone with it).
			g.lostStop = g.timers.After(g.deps.Timing.OrphanGrace, &workerLostTick{})
		}
	} else if !errors.Is(err, persistence.ErrNotFound) {
		g.log.Warn("worker grain: registry read failed; starting from the next hello", slog.Any("err", err))
	}
}

// connected takes a worker's new link. A second link for a worker whose
// link is alive is refused (id_taken): the live one is displaced only when
// it fails a ping, or its hub has left the cluster — a holder of the
// worker's credential cannot take over a working link.
func (g *workerGrain) connected(ctx actor.Context, msg *messages.WorkerConnected) {
	hello, err := messages.DecodeFrame(msg.Hello)
	if err != nil || hello.Type != messages.TypeHello {
		reply(ctx, fail(messages.CodeBadHello, "hello frame: %v", err))
		return
	}
	modes, err := declaredModes(hello.Capabilities.Modes)
	if err != nil {
		reply(ctx, fail(messages.CodeBadHello, "hello frame: %v", err))
		return
	}
	hello.Capabilities.Modes = nil // kept as modes, below
	newConn := pidOf(msg.Conn)
	if g.conn == nil || samePID(g.conn, newConn) || !g.memberAlive(g.conn) {
		reply(ctx, g.accept(ctx, msg, hello, modes))
		return
	}
	if msg.ConnStartedUnixNs < g.connAt {
		// A late hello of an older socket: the live one is newer.
		reply(ctx, fail(messages.CodeSuperseded, "worker %s has a newer link", g.id))
		return
	}
	old := g.conn
	fut := ctx.RequestFuture(old, &messages.ConnProbe{}, 2*connProbeWait)
	g.timers.Reenter(ctx, fut, func(res interface{}, err error) {
		if r, _ := res.(*messages.Reply); err == nil && r != nil && r.Ok && samePID(g.conn, old) {
			g.deps.Metrics.LinksRefused.Inc()
			g.log.Warn("a second link for a worker whose link answers; refused")
			reply(ctx, fail(messages.CodeIDTaken, "worker %s is linked already, and its link answers", g.id))
			return
		}
		reply(ctx, g.accept(ctx, msg, hello, modes))
	})
}

// connProbeWait is how long a link's probe may take (link.probeWait).
const connProbeWait = time.Second

// memberAlive: pid lives on a member of the cluster (a hub that left takes
// its sockets with it).
func (g *workerGrain) memberAlive(pid *actor.PID) bool {
	return MemberAddress(g.cl, pid.Address)
}

// MemberAddress reports whether addr is this hub's own actor system or a
// member of the cluster as this hub sees it now.
func MemberAddress(cl *cluster.Cluster, addr string) bool {
	if addr == cl.ActorSystem.Address() {
		return true
	}
	for _, m := range cl.MemberList.Members().Members() {
		if m.Address() == addr {
			return true
		}
	}
	return false
}

// accept makes newConn the worker's link; an older one is told to close.
func (g *workerGrain) accept(ctx actor.Context, msg *messages.WorkerConnected, hello messages.Frame, modes []persistence.WorkerMode) *messages.Reply {
	newConn := pidOf(msg.Conn)
	if g.conn != nil && !samePID(g.conn, newConn) {
		// Its socket failed the probe (or its hub is gone): the newest
		// socket wins, the old one is told to close.
		ctx.Send(g.conn, &messages.ConnClose{Code: "replaced", Message: "worker reconnected on another link"})
	}
	g.cancelLost()
	g.conn, g.connAt = newConn, msg.ConnStartedUnixNs
	g.info.Hub = msg.HubId
	g.info.Connected = true
	g.info.LanIP = hello.LanIP
	g.info.Version = hello.Version
	caps := hello.Capabilities
	g.info.ReportedMaxConcurrent = caps.MaxConcurrent
	g.info.MaxConcurrent = g.slots()
	// The lane count comes from lane_urls; their addresses are not kept:
	// nothing on the hub dials a lane, and shown they would hand a raw
	// DevTools endpoint to every API client.
	g.info.Lanes = laneStatuses(len(caps.LaneURLs), hello.LaneStates)
	g.info.BrowserURL = caps.BrowserURL
	g.info.Drivers = caps.Drivers
	g.info.Modes = modes
	g.runnable = runnableModes(modes, caps.Drivers)
	if hello.Stats != nil {
		g.applyStats(hello.Stats)
	}
	g.applyHealth(hello.LaneHealth, hello.Stats)
	g.readApproval(ctx)
	g.adoptRunning(ctx, hello.Running)
	g.pruneUnreported(ctx, hello.Running, true)
	g.rejectHolds = 0 // the report says what is free now
	g.info.LastSeen = g.deps.Clock()
	g.info.Reported, g.info.ReportedAt = hello.Running, g.info.LastSeen
	g.log.Info("worker connected", slog.String("lan_ip", hello.LanIP), slog.Int("max_concurrent", caps.MaxConcurrent),
		slog.Int("running", len(g.running)), slog.String("status", g.status()))
	g.publish(ctx)
	g.skips.newLink(newConn)
	g.syncSkips(ctx)
	return ok(g.infoJSON())
}

func (g *workerGrain) heartbeat(ctx actor.Context, msg *messages.WorkerHeartbeat) {
	from := pidOf(msg.Conn)
	if from != nil && !samePID(g.conn, from) && (g.conn == nil || msg.ConnStartedUnixNs > g.connAt) {
		// This activation lost track, or holds a dead hub's socket: the
		// newest socket that speaks is the live one.
		g.conn, g.connAt = from, msg.ConnStartedUnixNs
		g.info.Connected = true
		g.cancelLost()
	}
	if !samePID(g.conn, from) {
		return // a stale socket's last words
	}
	f, err := messages.DecodeFrame(msg.Frame)
	if err != nil || f.Stats == nil {
		return
	}
	g.applyStats(f.Stats)
	if len(f.LaneStates) > 0 {
		// A lane's state changed since the worker last reported it.
		// Absent means unchanged (most heartbeats); a list that does not
		// match hello's lane count is ignored, not trusted to resize the
		// worker.
		if len(f.LaneStates) == len(g.info.Lanes) {
			old := g.info.Lanes
			g.info.Lanes = laneStatuses(len(f.LaneStates), f.LaneStates)
			carryHealth(old, g.info.Lanes)
		} else {
			g.log.Debug("lane_states ignored: not one per lane", slog.Int("lanes", len(g.info.Lanes)), slog.Int("states", len(f.LaneStates)))
		}
	}
	g.applyHealth(f.LaneHealth, f.Stats)
	if g.approval == approvalUnknown {
		g.readApproval(ctx) // the last read failed: try again
	}
	g.adoptRunning(ctx, f.Running)
	g.pruneUnreported(ctx, f.Running, false)
	g.rejectHolds = 0 // the report says what is free now
	g.info.LastSeen = g.deps.Clock()
	g.info.Reported, g.info.ReportedAt = f.Running, g.info.LastSeen
	g.publish(ctx)
	g.syncSkips(ctx)
}

// laneStatuses lists n lanes with their states; states is used only when it
// has one per lane (validated against messages.LaneStates by DecodeFrame),
// else every state is left empty (unknown).
func laneStatuses(n int, states []string) []persistence.LaneStatus {
	out := make([]persistence.LaneStatus, n)
	for i := range out {
		out[i].Lane = i
		if len(states) == n {
			out[i].State = states[i]
		}
	}
	return out
}

// pruneUnreported frees the slots of jobs the worker's report leaves out.
// Sessions are not in the report: their slots end by close or disconnect.
//
// A heartbeat may have been composed before an assignment it crosses on
// the socket arrived, so there a slot goes only SlotPruneAfter after it
// was taken. A hello (hello true) is composed before its link carries any
// assignment: a job it leaves out was never delivered (sent down a link
// that failed) or has ended, and its slot goes at once — unless its frame
// is still being handed to an older link (sending). Waiting for the age
// there kept a worker whose grain moved with its link's hub full of
// slots the registry still listed (its last write, made within
// registryFlushDelay, died with that hub), taking no job until a
// heartbeat 15 s later.
func (g *workerGrain) pruneUnreported(ctx actor.Context, reported []string, hello bool) {
	now := g.deps.Clock()
	for id := range g.running {
		if isSessionSlot(id) || slices.Contains(reported, id) {
			continue
		}
		if _, handing := g.sending[id]; handing || (!hello && now.Sub(g.heldAt[id]) < SlotPruneAfter) {
			continue
		}
		g.deps.Metrics.WorkerSlotsPruned.Inc()
		g.log.Info("worker no longer reports the job; slot freed", slog.String("job_id", id))
		if att := g.running[id]; att > 0 {
			// If the job is still running by the store, the worker lost it
			// (restarted, say): the job grain asks it and settles the attempt
			// now rather than at its deadline.
			Send(ctx, g.cl, id, KindJob, &messages.JobCheck{WorkerId: g.id, Attempt: att})
		}
		g.release(id)
	}
	g.info.InFlight = len(g.running)
}

// hold reserves a slot for a job (or session) under an attempt.
func (g *workerGrain) hold(id string, attempt int32) {
	if _, ok := g.running[id]; !ok {
		g.heldAt[id] = g.deps.Clock()
	}
	g.running[id] = attempt
}

// release frees a slot.
func (g *workerGrain) release(id string) {
	delete(g.running, id)
	delete(g.heldAt, id)
}

// applyStats takes the worker's figures, clamped to 0–100: they are the
// worker's say, and a negative disk figure must not pass the disk filter.
func (g *workerGrain) applyStats(s *messages.Stats) {
	pct := func(v float64) float64 { return min(max(v, 0), 100) }
	g.info.CPUPct, g.info.MemPct, g.info.DiskPct = pct(s.CPUPct), pct(s.MemPct), pct(s.DiskPct)
}

func (g *workerGrain) disconnected(ctx actor.Context, msg *messages.WorkerDisconnected) {
	if !samePID(g.conn, pidOf(msg.Conn)) {
		return
	}
	g.conn = nil
	g.info.Connected = false
	g.log.Info("worker disconnected", slog.Int("running", len(g.running)))
	g.publish(ctx)
	rctx := deadline.Within(g.deps.Timing.FleetReadTimeout)
	if err := g.deps.Workers.ReleaseOwner(rctx, g.id, g.deps.HubID); err != nil {
		g.log.Warn("release worker owner", slog.Any("err", err))
	}
	if len(g.running) > 0 {
		// Jobs and sessions live on across a reconnect (a hub that stops
		// sends its workers to the others); only when the worker stays away
		// past the grace are they declared lost.
		g.lostStop = g.timers.After(g.deps.Timing.OrphanGrace, &workerLostTick{})
	}
}

// leave: the worker on this link takes no more work. Every assignment
// this grain sent on the link went to the WorkerConn before the answer
// does, so when the worker reads leave_ack it has read them all, and has
// answered each (run, or rejected) in a frame it writes before its close
// frame: none can cross the close and be taken for lost.
func (g *workerGrain) leave(ctx actor.Context, m *messages.WorkerLeaving) {
	conn := pidOf(m.Conn)
	if !samePID(g.conn, conn) {
		return // an older link's: the live one has not said so
	}
	if g.leaving == nil {
		g.leaving = conn
		g.log.Info("worker leaving: no more assignments on this link", slog.Int("running", len(g.running)))
		g.publish(ctx)
	}
	g.send(ctx, messages.Frame{Type: messages.TypeLeaveAck})
}

// placeStatus is the status placement goes by: the operator's, or drain
// while the worker's live link said it is leaving. Never stored: the
// registry keeps the operator's status, which a new link goes back to.
func (g *workerGrain) placeStatus() string {
	if st := g.status(); st != WorkerActive || !g.isLeaving() {
		return st
	}
	return WorkerDrain
}

// isLeaving: the live link said leaving.
func (g *workerGrain) isLeaving() bool {
	return samePID(g.leaving, g.conn)
}

func (g *workerGrain) lost(ctx actor.Context, _ *workerLostTick) {
	g.lostStop = nil
	if g.conn != nil {
		return
	}
	g.log.Warn("worker gone past the grace; its jobs are lost", slog.Int("jobs", len(g.running)),
		slog.Duration("grace", g.deps.Timing.OrphanGrace))
	for key, att := range g.running {
		if sid, isSession := slotSession(key); isSession {
			// Its caller gets a clear error on the next request.
			Send(ctx, g.cl, sid, KindSession, &messages.SessionWorkerGone{WorkerId: g.id})
		} else {
			g.deps.Metrics.WorkerLostJobs.Inc()
			Send(ctx, g.cl, key, KindJob, &messages.JobWorkerLost{WorkerId: g.id, Attempt: att})
		}
		g.release(key)
	}
	g.info.InFlight = 0
	g.publish(ctx)
}

func (g *workerGrain) cancelLost() {
	if g.lostStop != nil {
		g.lostStop()
		g.lostStop = nil
	}
}

// assign reserves a slot for the job and sends its frame down the link.
// The slot is held from the moment the frame leaves, so a quick job's
// release that overtakes the link's confirmation frees it for good. The
// answer waits for the WorkerConn to take the frame, but this grain does
// not: its other messages (heartbeats, releases, other assignments) go on.
func (g *workerGrain) assign(ctx actor.Context, msg *messages.WorkerAssign) {
	if att, held := g.running[msg.JobId]; held && att == msg.Attempt {
		// A retried request (the first answer was late): the job is already
		// sent, or on its way. Refusing now would roll the claim back and
		// run it twice; the retry hears what the first hears.
		if waiters, sending := g.sending[msg.JobId]; sending {
			g.sending[msg.JobId] = append(waiters, waiter{ctx.Sender(), msg.Call})
			return
		}
		reply(ctx, ok(nil))
		return
	}
	switch {
	case g.conn == nil:
		reply(ctx, fail(messages.CodeNotConnected, "worker %s has no link", g.id))
		return
	case g.placeStatus() != WorkerActive:
		reply(ctx, fail(messages.CodeNotActive, "worker %s is %s", g.id, g.placeStatus()))
		return
	case g.taken() >= g.info.MaxConcurrent:
		g.publish(ctx) // the scheduler's view was stale: correct it
		reply(ctx, fail(messages.CodeFull, "worker %s has %d of %d slots taken", g.id, g.taken(), g.info.MaxConcurrent))
		return
	}
	conn := g.conn
	g.hold(msg.JobId, msg.Attempt)
	g.info.InFlight = len(g.running)
	g.sending[msg.JobId] = []waiter{{ctx.Sender(), msg.Call}}
	// The frame counts as sent only when a live WorkerConn has queued it:
	// a PID of a hub that restarted would swallow it, and the job would sit
	// "running" on a worker that never heard of it.
	countMessage(ctx.ActorSystem(), kindLink, opRequest, conn)
	send := &messages.ConnSend{Frame: msg.Frame, Ack: true, JobId: msg.JobId, Job: msg.Job, Attempt: msg.Attempt}
	Request(ctx, g.timers, g.cl, conn, send, ConnAckTimeout, func(res interface{}, err error) {
		answer := g.assignSent(ctx, msg, conn, res, err)
		for _, w := range g.sending[msg.JobId] {
			if w.pid != nil {
				ctx.Send(w.pid, answer.Answering(w.call))
			}
		}
		delete(g.sending, msg.JobId)
	})
}

// waiter is a caller waiting for an assignment's answer: its PID, and
// its call id (0: it asked through a future).
type waiter struct {
	pid  *actor.PID
	call uint64
}

// assignSent settles an assignment once the link answered (or did not).
func (g *workerGrain) assignSent(ctx actor.Context, msg *messages.WorkerAssign, conn *actor.PID, res interface{}, err error) *messages.Reply {
	if errors.Is(err, actor.ErrTimeout) {
		// A slow link, or a dead hub's: the frame may still go out. Keep the
		// slot; the job grain keeps its claim (never a second run), and the
		// worker's report or the job's deadline settles it.
		g.publish(ctx)
		return fail(messages.CodeUnconfirmed, "worker %s link did not confirm within %s", g.id, ConnAckTimeout)
	}
	if r, _ := res.(*messages.Reply); err == nil && messages.CodeNotMember.Is(r) {
		// The link is fine; it is this hub the link's hub does not count
		// as a member (dropped from the cluster, or not yet seen joining):
		// the job is not sent, and goes back to the queue.
		g.unhold(msg)
		g.publish(ctx)
		return r
	}
	if r, _ := res.(*messages.Reply); err != nil || r == nil || !r.Ok {
		g.log.Warn("worker link did not take the job; treating it as gone", slog.String("job_id", msg.JobId),
			slog.String("cause", ErrString(err, r)))
		g.unhold(msg)
		if samePID(g.conn, conn) {
			g.conn = nil
			g.info.Connected = false
		}
		g.publish(ctx)
		return fail(messages.CodeNotConnected, "worker %s link is gone: %s", g.id, ErrString(err, r))
	}
	// The state push that counts the slot also settles the placement, so
	// the job grain sends no SchedPlaced of its own; the registry follows
	// within registryFlushDelay.
	g.placed = append(g.placed, msg.JobId)
	g.publishSoon(ctx)
	return &messages.Reply{Ok: true, PlacedReported: true}
}

// released frees the slot msg's attempt holds. A final release's
// SchedRemove rides on the state push that frees the slot; when this grain
// holds no such attempt (a fresh activation, a release that overtook the
// assignment) there is no push, and the scheduler is sent it alone.
func (g *workerGrain) released(ctx actor.Context, msg *messages.WorkerRelease) {
	var removed *messages.SchedRemove
	if msg.Final {
		removed = &messages.SchedRemove{JobId: msg.JobId, Lane: msg.Lane}
	}
	if att, ok := g.running[msg.JobId]; ok && (msg.Attempt == 0 || att == msg.Attempt || att == 0) {
		g.release(msg.JobId)
		if msg.Rejected {
			// The worker has no lane free: its capacity stays taken until
			// its next report, which a freed lane sends. Never past its
			// slots, whatever the releases say.
			g.rejectHolds = min(g.rejectHolds+1, g.slots())
		} else {
			g.freedReported(msg.JobId)
		}
		g.info.InFlight = len(g.running)
		if removed != nil {
			g.removed = append(g.removed, removed)
		}
		g.publishSoon(ctx)
		return
	}
	if removed != nil {
		Send(ctx, g.cl, SchedulerID, KindScheduler, removed)
	}
	if !msg.Rejected {
		// The worker may list the job until its end is acknowledged, and
		// a check of such a listing may be out now (verifying) with a
		// store read older than this end: neither may adopt the slot the
		// job's grain has just let go (worker_adopt.go, acking).
		g.freedReported(msg.JobId)
	}
}

// unhold frees the slot an assignment that was not sent reserved, if it
// still holds it (a release may have come first).
func (g *workerGrain) unhold(msg *messages.WorkerAssign) {
	if att, held := g.running[msg.JobId]; held && att == msg.Attempt {
		g.release(msg.JobId)
		g.info.InFlight = len(g.running)
	}
}

// setStatus applies an operator's change: the status, the cap on the
// worker's slots, or both. Every check comes before the first change, so
// a refused request changes nothing. With auth.worker_approval, status
// active approves a pending worker and pending revokes an approval (both
// stored first); drain and standby apply to approved workers only.
func (g *workerGrain) setStatus(ctx actor.Context, m *messages.WorkerSetStatus) *messages.Reply {
	if m.Status != "" && !persistence.ValidWorkerStatus(m.Status) {
		return fail(messages.CodeBadStatus, "status %q is not one of %s", m.Status, strings.Join(persistence.WorkerStatuses, ", "))
	}
	if m.Status == WorkerPending && g.deps.Approvals == nil {
		return fail(messages.CodeBadStatus, "status %q needs auth.worker_approval: without it every worker is approved", m.Status)
	}
	if g.info.MaxConcurrent == 0 && g.info.LastSeen.IsZero() {
		return fail(messages.CodeNotFound, "worker %s is not known", g.id)
	}
	if m.SetMaxConcurrent {
		switch {
		case m.MaxConcurrent < 0:
			return fail(messages.CodeOutOfRange, "max_concurrent %d: must be 0 (no cap) or more", m.MaxConcurrent)
		case int(m.MaxConcurrent) > g.info.ReportedMaxConcurrent:
			return fail(messages.CodeOutOfRange, "max_concurrent %d: worker %s reports %d lanes; a cap cannot raise that",
				m.MaxConcurrent, g.id, g.info.ReportedMaxConcurrent)
		}
	}
	if m.Status != "" && g.deps.Approvals != nil {
		if r := g.setApprovalStatus(m.Status); r != nil {
			return r
		}
	}
	if m.SetMaxConcurrent {
		g.info.MaxConcurrentCap = int(m.MaxConcurrent)
		g.info.MaxConcurrent = g.slots()
		g.log.Info("worker slots capped", slog.Int("max_concurrent", g.info.MaxConcurrent))
	}
	if m.Status != "" {
		if m.Status != WorkerPending {
			g.info.Status = m.Status
		}
		g.log.Info("worker status set", slog.String("status", g.status()))
	}
	g.publish(ctx)
	return ok(g.infoJSON())
}

// slots is what placement may use of the worker: what it reports, under
// the operator's cap and the fleet-wide bound (limits.worker_max_lanes) —
// a worker advertising 10,000 lanes gets no more than that.
func (g *workerGrain) slots() int {
	n := g.info.ReportedMaxConcurrent
	if c := g.info.MaxConcurrentCap; c > 0 {
		n = min(n, c)
	}
	if c := g.deps.Timing.WorkerMaxLanes; c > 0 {
		n = min(n, c)
	}
	return n
}

func (g *workerGrain) send(ctx actor.Context, f messages.Frame) {
	if g.conn == nil {
		return
	}
	b, err := f.Encode()
	if err != nil {
		g.log.Error("encode frame", slog.Any("err", err))
		return
	}
	ctx.Send(g.conn, &messages.ConnSend{Frame: b})
}

// publish pushes the state to the scheduler and the fleet registry.
func (g *workerGrain) publish(ctx actor.Context) {
	g.pushScheduler(ctx)
	g.writeRegistry()
}

// publishSoon pushes the state to the scheduler (by mailbox rounds, below)
// and to the registry within registryFlushDelay, one write for all the
// changes until then.
//
// A change with no push in the last mailbox round is pushed at once; the
// changes after it, until the messages that were already in the mailbox
// are handled (pushTick), go in one push — releases and assignments
// arriving together, flat out, cost one push each round instead of one
// each, every push a message to the scheduler (across the cluster when it
// lives on another hub) and a placement pass there. The wait is the
// mailbox's, not a timer's.
func (g *workerGrain) publishSoon(ctx actor.Context) {
	if g.pushes.change() {
		g.pushScheduler(ctx)
		ctx.Send(ctx.Self(), pushTick{}) // opens the round
	}
	if g.registryStop == nil {
		g.registryStop = g.timers.After(registryFlushDelay, &registryFlushTick{})
	}
}

// writeRegistry writes the record, which also settles a write that was due.
func (g *workerGrain) writeRegistry() {
	if g.registryStop != nil {
		g.registryStop()
		g.registryStop = nil
	}
	g.info.Connected = g.conn != nil
	g.info.Link, g.info.LinkStarted = "", 0
	if g.conn != nil {
		g.info.Link, g.info.LinkStarted = g.conn.Address+"/"+g.conn.Id, g.connAt
	}
	g.info.Running = make([]string, 0, len(g.running))
	for id := range g.running {
		g.info.Running = append(g.info.Running, id)
	}
	rec := g.info
	rec.Status = g.status()
	rec.Leaving = g.isLeaving()
	rctx := deadline.Within(g.deps.Timing.FleetReadTimeout)
	ttl := g.deps.Timing.AliveWindow + g.deps.Timing.OrphanGrace
	if err := g.deps.Workers.Put(rctx, rec, ttl); err != nil {
		g.deps.Metrics.RegistryErrors.Inc()
		g.log.Warn("registry write failed; the scheduler still has the state", slog.Any("err", err))
	}
}

func (g *workerGrain) pushScheduler(ctx actor.Context) {
	g.pushes.pushed() // this push carries what a pending one would
	st := &messages.SchedWorkerState{
		WorkerId:       g.id,
		Status:         g.placeStatus(),
		Connected:      g.conn != nil,
		LastSeenUnixMs: g.info.LastSeen.UnixMilli(),
		MaxConcurrent:  int32(g.info.MaxConcurrent),
		InFlight:       int32(g.taken()),
		Lanes:          int32(len(g.info.Lanes)),
		HasBrowser:     g.info.BrowserURL != "",
		DiskPct:        g.info.DiskPct,
		Drivers:        g.info.Drivers,
		DeclaresModes:  len(g.info.Modes) > 0,
		Modes:          g.runnable,
		Placed:         g.placed,
		Removed:        g.removed,
	}
	if g.conn != nil {
		st.LinkAddress = g.conn.Address
	}
	g.placed, g.removed = nil, nil
	g.judgeHealth(st)
	Send(ctx, g.cl, SchedulerID, KindScheduler, st)
}

func (g *workerGrain) infoJSON() []byte {
	w := g.info
	w.Status = g.status()
	w.Leaving = g.isLeaving()
	w.Connected = g.conn != nil
	w.Alive = w.Connected && g.deps.Clock().Sub(w.LastSeen) <= g.deps.Timing.AliveWindow
	w.InFlight = len(g.running)
	b, _ := json.Marshal(w)
	return b
}
