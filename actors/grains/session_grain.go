package grains

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"

	"github.com/paprika-hub/paprika/actors/supervise"
	"github.com/paprika-hub/paprika/internal/deadline"
	"github.com/paprika-hub/paprika/messages"
	"github.com/paprika-hub/paprika/persistence"
)

// KindSession is the session grain kind: `session/<id>`.
const KindSession = "session"

// Session states: persistence's, shared with the Go client.
const (
	SessionOpening = persistence.SessionOpening
	SessionOpen    = persistence.SessionOpen
	SessionClosed  = persistence.SessionClosed
)

// Session is the session object of the API.
type Session struct {
	ID           string            `json:"id"`
	WorkerID     string            `json:"worker_id,omitempty"`
	Lane         string            `json:"lane,omitempty"`
	Status       string            `json:"status"`
	Reason       string            `json:"reason,omitempty"`
	IdleTimeoutS int               `json:"idle_timeout_s"`
	Labels       map[string]string `json:"labels,omitempty"`
	CreatedAt    time.Time         `json:"created_at"`
	LastUsed     time.Time         `json:"last_used"`
	// Browser is what the lane's own /json/version says of its browser
	// (Browser, Protocol-Version, User-Agent, V8-Version, WebKit-Version),
	// read by the worker when the session opened; the hub's
	// /sessions/{id}/json/version answers with it. No URL is kept here.
	Browser map[string]string `json:"browser,omitempty"`
	// Tunnels counts the CDP clients attached now.
	Tunnels int `json:"cdp_clients"`
	// Profile is the profile the session holds (README "Profiles and
	// affinity"), "" for none.
	Profile string `json:"profile,omitempty"`
}

// sessionGrain is `session/<id>`: an interactive lane reserved on a worker.
// Any hub reaches it by identity (no hub-to-hub forwarding): it sends each
// command to the worker's socket through the worker grain and answers the
// caller when the worker's session_result comes back.
//
// An open session is recorded in the session store, so it outlives its
// activation: when the grain's hub dies (or the grain restarts), the next
// message activates it elsewhere, it loads the record and carries on with
// the same worker and lane, its idle timer re-armed from the recorded last
// use. The lane's reservation needs nothing from here: the worker grain
// holds it (and records it in the registry) until this grain releases it.
// Commands in flight when the hub died are lost; their callers time out.
type sessionGrain struct {
	// fixed after construction
	deps *Deps

	// actor-confined state
	grain
	s        Session
	epoch    string // this activation's part of its command ids
	seq      int
	pending  map[string]*actor.PID // command id → caller waiting for the result
	closeCmd string                // the close command whose answer frees the slot
	released bool
	loaded   bool      // the store was read, or this activation opened the session
	savedAt  time.Time // last write of the record
	// Cancels of the armed timers: a restart keeps the PID, and a timer of
	// the struct before it must not fire into the one after it (which
	// re-arms its own from the store).
	idleStop    supervise.Stop
	releaseStop supervise.Stop
	cmdStops    map[string]supervise.Stop // command id → its timeout
	// profileHeld: the scheduler's profile lock is this session's until
	// profileDone sends SchedRemove (after the worker confirmed its
	// close, so after the profile's save).
	profileHeld bool
	// opening is the open waiting for its profile (pickRetry), nil else.
	opening  *sessionOpening
	pickStop supervise.Stop
	tunnels  map[string]*sessionTunnel // tunnel id → its client end (session_tunnel.go)
}

// Session record timing.
const (
	// sessionTouchEvery bounds how often commands rewrite the record's
	// last_used (see touch).
	sessionTouchEvery = 5 * time.Second
	// sessionRecordSlack is how long a record outlives the idle timeout
	// counted from its last write. The grain deletes the record when it
	// closes the session; the TTL only clears records of sessions whose
	// grain died and was never woken again.
	sessionRecordSlack = time.Minute
)

type sessionCmdTimeout struct{ commandID string }

// sessionOpening is an open whose profile another job or session holds:
// its pick is retried until deadline (Timing.SessionProfileWait).
type sessionOpening struct {
	caller   *actor.PID
	msg      *messages.SessionOpen
	profile  string
	deadline time.Time
}

// sessionPickRetry fires to retry the pick of a waiting open.
type sessionPickRetry struct{}

// sessionPickRetryEvery is how often a waiting open asks again: a
// session is interactive, so soon after the holder ends, not at once
// (each ask is a scheduler turn).
const sessionPickRetryEvery = 250 * time.Millisecond

// sessionIdleCheck fires when the session may have been idle for its
// idle_timeout_s. A timer of its own, not the actor's receive timeout:
// reading the session (GET) must not count as using it.
type sessionIdleCheck struct{}

// commandTimeout bounds one session command (cluster.forward_timeout).
func (d *Deps) commandTimeout() time.Duration {
	if d.Timing.ForwardTimeout > 0 {
		return d.Timing.ForwardTimeout
	}
	return time.Minute
}

// NewSessionKind registers the session grain.
func NewSessionKind(d *Deps) *cluster.Kind {
	return newKind(d, KindSession, func() actor.Actor { return &sessionGrain{deps: d} })
}

func (g *sessionGrain) Receive(ctx actor.Context) {
	if g.common(ctx) {
		return
	}
	switch msg := ctx.Message().(type) {
	case *cluster.ClusterInit:
		// Also after a restart: protoactor sends ClusterInit after every
		// Started, and a restart starts a fresh struct.
		g.begin(ctx, g.deps, msg, KindSession, "session_id")
		g.pending = map[string]*actor.PID{}
		g.cmdStops = map[string]supervise.Stop{}
		g.tunnels = map[string]*sessionTunnel{}
		// Command ids must not repeat an earlier activation's: the worker
		// may still answer those, and a stale answer must match nothing.
		g.epoch = strconv.FormatUint(uint64(rand.Uint32()), 36)
		if err := g.restore(ctx); err != nil {
			g.log.Warn("session store read failed; retrying on the next request", slog.Any("err", err))
		}
		return
	case *messages.SessionOpen:
		// A new id has no record, so a failed read does not stop an open.
		g.loaded = true
		g.open(ctx, msg)
		return
	case *messages.SessionGet, *messages.SessionCommand, *messages.SessionClose, *messages.SessionResult,
		*messages.SessionWorkerGone, *messages.SessionEnsure, *messages.SessionTunnelOpen,
		*messages.SessionTunnelAttach, *messages.SessionTunnelTouch, *messages.SessionTunnelEnd:
		if err := g.restore(ctx); err != nil {
			g.log.Warn("session store read failed", slog.Any("err", err))
			reply(ctx, fail(messages.CodeUnavailable, "session %s: %v", g.id, err))
			return
		}
	}
	switch msg := ctx.Message().(type) {
	case *messages.SessionCommand:
		g.command(ctx, msg)
	case *messages.SessionTunnelOpen:
		g.tunnelOpen(ctx, msg)
	case *messages.SessionTunnelAttach:
		g.tunnelAttach(ctx, msg)
	case *messages.SessionTunnelTouch:
		g.tunnelTouch(ctx, msg)
	case *messages.SessionTunnelEnd:
		g.tunnelEnd(ctx, msg)
	case *tunnelAttachTimeout:
		g.tunnelExpire(msg)
	case *messages.SessionResult:
		g.result(ctx, msg)
	case *messages.SessionGet:
		if g.s.ID == "" {
			reply(ctx, fail(messages.CodeNotFound, "no session %s", g.id))
			return
		}
		reply(ctx, ok(g.json()))
	case *messages.SessionClose:
		if g.s.ID == "" {
			reply(ctx, fail(messages.CodeNotFound, "no session %s", g.id))
			return
		}
		g.close(ctx, "closed by request")
		reply(ctx, ok(g.json()))
	case *messages.SessionWorkerGone:
		if g.s.ID != "" && g.s.Status != SessionClosed && msg.WorkerId == g.s.WorkerID {
			g.end(ctx, fmt.Sprintf("worker %s disconnected", g.s.WorkerID))
		}
	case *messages.SessionEnsure:
		if g.s.ID == "" && g.closeCmd == "" && msg.WorkerId != "" {
			g.reclaim(ctx, msg.WorkerId)
		}
	case *sessionCmdTimeout:
		delete(g.cmdStops, msg.commandID)
		if p, ok := g.pending[msg.commandID]; ok {
			delete(g.pending, msg.commandID)
			ctx.Send(p, fail(messages.CodeTimeout, "worker %s did not answer within %s", g.s.WorkerID, g.deps.commandTimeout()))
		}
	case *sessionReleaseTimeout:
		g.release(ctx)
	case *sessionPickRetry:
		g.pickStop = nil
		if o := g.opening; o != nil {
			g.opening = nil
			g.pick(ctx, o)
		}
	case *sessionIdleCheck:
		if g.s.Status != SessionOpen {
			return
		}
		// An attached CDP client is using the session however quiet it is.
		if len(g.tunnels) > 0 {
			g.touch()
		}
		if left := g.idleTimeout() - g.deps.Clock().Sub(g.s.LastUsed); left > 0 || len(g.pending) > 0 {
			g.armIdle(ctx, max(left, 100*time.Millisecond))
			return
		}
		g.close(ctx, "idle timeout")
	case *supervise.IdleTimeout:
		if g.s.Status == SessionClosed || g.s.Status == "" {
			ctx.Stop(ctx.Self()) // passivate
		}
	case *supervise.InjectPanic:
		panic("injected panic in session grain " + g.id)
	}
}

// restore loads the session once per activation: after its hub died, a
// passivation or a restart, the record is all that is left of it. A
// session past its idle timeout is closed at once, as it would have been.
func (g *sessionGrain) restore(ctx actor.Context) error {
	if g.loaded {
		return nil
	}
	rctx := deadline.Within(g.deps.storeTimeout())
	rec, err := g.deps.Sessions.Get(rctx, g.id)
	if err != nil {
		// Nothing here: passivate when idle (a failed read is retried by
		// the next message, or by the next activation).
		g.idle.Set(g.deps.Timing.IdlePassivate)
		if errors.Is(err, persistence.ErrNotFound) {
			g.loaded = true
			return nil
		}
		g.deps.Metrics.SessionStoreErrors.Inc()
		return fmt.Errorf("load session %s: %w", g.id, err)
	}
	g.loaded = true
	g.s = sessionOfRecord(rec)
	g.profileHeld = rec.Profile != ""
	g.savedAt = g.deps.Clock()
	g.idle.Cancel()
	g.deps.Metrics.SessionsResumed.Inc()
	g.log.Info("session resumed from the store", slog.String("worker_id", rec.WorkerID), slog.String("lane", rec.Lane),
		slog.Time("last_used", rec.LastUsed))
	left := g.idleTimeout() - g.deps.Clock().Sub(rec.LastUsed)
	if left <= 0 {
		g.close(ctx, "idle timeout")
		return nil
	}
	g.armIdle(ctx, left)
	return nil
}

// reclaim frees a lane a worker holds for this session although no record
// of it is left: its grain died between reserving the lane and recording
// the session (mid-open), or the release of a closed session was lost with
// its hub. Nobody else would free it: the worker grain keeps a session's
// slot until the session grain releases it or the worker disconnects.
// Callers still get not-found: nothing is known of the session but its
// worker.
func (g *sessionGrain) reclaim(ctx actor.Context, workerID string) {
	g.deps.Metrics.SessionsReclaimed.Inc()
	g.log.Warn("worker holds a lane for an unrecorded session; closing it", slog.String("worker_id", workerID))
	g.s.WorkerID = workerID
	g.closeOnWorker(ctx)
}

// armIdle sets the one idle check of the session to fire after d.
func (g *sessionGrain) armIdle(ctx actor.Context, d time.Duration) {
	if g.idleStop != nil {
		g.idleStop()
	}
	g.idleStop = g.timers.After(d, &sessionIdleCheck{})
}

func (g *sessionGrain) idleTimeout() time.Duration {
	return time.Duration(max(g.s.IdleTimeoutS, 1)) * time.Second
}

// touch marks the session used now. The record's last_used is rewritten
// at most every sessionTouchEvery (or a tenth of the idle timeout, when
// shorter), not on each command: commands come in bursts, and each write
// is a store round trip inside this grain's turn. The price is that a
// session resumed on another hub may idle out up to that much early, never
// late — the safe side, since the worker closes the lane itself a tenth of
// the idle timeout after the hub would (agent.DefaultSessionIdleTimeout).
func (g *sessionGrain) touch() {
	now := g.deps.Clock()
	g.s.LastUsed = now
	if now.Sub(g.savedAt) >= min(sessionTouchEvery, g.idleTimeout()/10) {
		g.save()
	}
}

// save writes the record of the open session. A failed write is logged and
// the session goes on: it works on this hub, it would only not survive it.
func (g *sessionGrain) save() {
	g.savedAt = g.deps.Clock()
	rec := persistence.SessionRecord{ID: g.id, WorkerID: g.s.WorkerID, Lane: g.s.Lane,
		IdleTimeoutS: g.s.IdleTimeoutS, Labels: g.s.Labels, State: g.s.Status, CreatedAt: g.s.CreatedAt, LastUsed: g.s.LastUsed,
		Browser: g.s.Browser, Profile: g.s.Profile}
	// The touch interval is inside the TTL too: between two writes the
	// record must not expire while the session is in use.
	ttl := g.idleTimeout() + sessionTouchEvery + sessionRecordSlack
	rctx := deadline.Within(g.deps.storeTimeout())
	if err := g.deps.Sessions.Put(rctx, rec, ttl); err != nil {
		g.deps.Metrics.SessionStoreErrors.Inc()
		g.log.Warn("session store write failed; the session would not survive this hub", slog.Any("err", err))
	}
}

// forget deletes the record of a session that ended; a failed delete
// leaves it to its TTL.
func (g *sessionGrain) forget() {
	rctx := deadline.Within(g.deps.storeTimeout())
	if err := g.deps.Sessions.Delete(rctx, g.id); err != nil {
		g.deps.Metrics.SessionStoreErrors.Inc()
		g.log.Warn("session store delete failed; the record expires with its TTL", slog.Any("err", err))
	}
}

func (g *sessionGrain) open(ctx actor.Context, m *messages.SessionOpen) {
	if g.s.ID != "" {
		reply(ctx, fail(messages.CodeConflict, "session %s exists", g.id))
		return
	}
	var opts struct {
		Profile string `json:"profile"`
	}
	if len(m.Options) > 0 {
		_ = json.Unmarshal(m.Options, &opts) // the API checked them
	}
	if opts.Profile != "" && messages.CheckProfileName(opts.Profile) != nil {
		reply(ctx, fail(messages.CodeBadCommand, "%v", messages.CheckProfileName(opts.Profile)))
		return
	}
	now := g.deps.Clock()
	g.s = Session{ID: g.id, Status: SessionOpening, IdleTimeoutS: int(m.IdleTimeoutS), Labels: m.Labels, CreatedAt: now, LastUsed: now,
		Profile: opts.Profile}
	g.pick(ctx, &sessionOpening{caller: ctx.Sender(), msg: m, profile: opts.Profile, deadline: now.Add(g.deps.Timing.SessionProfileWait)})
}

// pick asks the scheduler for a worker (and the profile's lock). Both
// steps answer as continuations: the grain answers GET (status
// "opening") and a close meanwhile. A profile in use is asked for again
// every sessionPickRetryEvery until o.deadline (a timer, not a wait in
// the turn), then the open answers profile_in_use.
func (g *sessionGrain) pick(ctx actor.Context, o *sessionOpening) {
	caller, m := o.caller, o.msg
	Ask(ctx, g.timers, g.cl, SchedulerID, KindScheduler, &messages.SchedPickSession{SessionId: g.id, Profile: o.profile}, g.deps.Timing.GrainTimeout,
		func(res *messages.Reply, err error) {
			var pick sessionPick
			if err == nil {
				_ = json.Unmarshal(res.Json, &pick)
			}
			if res == nil || !res.Ok {
				pick.WorkerID = ""
			}
			if o.profile != "" && (pick.WorkerID != "" || err != nil) {
				// Held, or maybe: a pick whose answer was lost may have
				// taken the lock, and a SchedRemove for it costs nothing.
				g.profileHeld = true
			}
			if g.s.Status != SessionOpening {
				// Closed while the pick was on its way: give the lane back.
				if pick.WorkerID != "" {
					g.sched(ctx, &messages.SchedPlaceFailed{JobId: sessionSlot(g.id), WorkerId: pick.WorkerID})
				}
				g.profileDone(ctx)
				g.answer(ctx, caller, fail(messages.CodeClosed, "session %s closed: %s", g.id, g.s.Reason))
				return
			}
			if err == nil && res.Code == string(messages.CodeProfileInUse) {
				if g.deps.Clock().Before(o.deadline) {
					g.opening = o
					g.pickStop = g.timers.After(min(sessionPickRetryEvery, max(o.deadline.Sub(g.deps.Clock()), time.Millisecond)), &sessionPickRetry{})
					return
				}
				g.s = Session{}
				r := fail(messages.CodeProfileInUse, "%s (waited %s)", res.Message, g.deps.Timing.SessionProfileWait)
				r.Json, _ = json.Marshal(map[string]string{"in_use_by": holderName(pick.InUseBy)})
				g.answer(ctx, caller, r)
				g.idle.Set(g.deps.Timing.IdlePassivate)
				return
			}
			if pick.WorkerID == "" {
				g.profileDone(ctx)
				g.s = Session{}
				g.answer(ctx, caller, fail(messages.CodeNoCapacity, "no worker with a free chromium lane: %s", ErrString(err, res)))
				g.idle.Set(g.deps.Timing.IdlePassivate)
				return
			}
			g.assignLane(ctx, caller, pick.WorkerID, pick.Lane, m.IdleTimeoutS, m.Options)
		})
}

// holderName is how the API names a profile's holder: a job's id, or a
// session's id for its slot key.
func holderName(key string) string {
	if id, ok := slotSession(key); ok {
		return id
	}
	return key
}

// profileDone gives the session's profile lock back (once), naming the
// lane it ran on: the profile's next holder is hinted to it.
func (g *sessionGrain) profileDone(ctx actor.Context) {
	if g.profileHeld {
		g.profileHeld = false
		g.sched(ctx, &messages.SchedRemove{JobId: sessionSlot(g.id), Lane: g.s.Lane})
	}
}

// assignLane reserves the picked worker's lane and sends it the open
// command, with the session's browser options (JSON, or empty) and the
// scheduler's lane hint (the profile's warm lane; empty: none); the
// worker's session_result finishes the open.
func (g *sessionGrain) assignLane(ctx actor.Context, caller *actor.PID, workerID, lane string, idleTimeoutS int32, options []byte) {
	g.s.WorkerID = workerID
	cmdID := g.nextCommand()
	open := fmt.Sprintf(`{"op":%q,"idle_timeout_s":%d}`, messages.OpOpen, idleTimeoutS)
	if len(options) > 0 && json.Valid(options) {
		open = fmt.Sprintf(`{"op":%q,"idle_timeout_s":%d,"options":%s}`, messages.OpOpen, idleTimeoutS, options)
	}
	frame, _ := messages.Frame{Type: messages.TypeSessionCommand, SessionID: g.id, CommandID: cmdID, Lane: lane,
		Command: json.RawMessage(open)}.Encode()
	// Parked before the answer: the worker's result may overtake it.
	g.await(ctx, caller, cmdID)
	Ask(ctx, g.timers, g.cl, workerID, KindWorker, &messages.WorkerAssign{JobId: sessionSlot(g.id), Frame: frame},
		g.deps.Timing.AssignGrace, func(ares *messages.Reply, err error) {
			if err == nil && ares.Ok {
				g.sched(ctx, &messages.SchedPlaced{JobId: sessionSlot(g.id), WorkerId: workerID})
				return
			}
			g.sched(ctx, &messages.SchedPlaceFailed{JobId: sessionSlot(g.id), WorkerId: workerID})
			if g.s.Status != SessionOpening || g.s.WorkerID != workerID {
				return // closed meanwhile, or the worker answered first
			}
			g.dropCommand(cmdID)
			g.profileDone(ctx)
			g.s = Session{}
			g.answer(ctx, caller, fail(messages.CodeNoCapacity, "worker %s refused the session: %s", workerID, ErrString(err, ares)))
			g.idle.Set(g.deps.Timing.IdlePassivate)
		})
}

// answer sends r to a caller parked before the turn that answers it.
func (g *sessionGrain) answer(ctx actor.Context, caller *actor.PID, r *messages.Reply) {
	if caller != nil {
		ctx.Send(caller, r)
	}
}

// await parks caller until the worker answers cmdID (or the timeout).
func (g *sessionGrain) await(ctx actor.Context, caller *actor.PID, cmdID string) {
	if caller != nil {
		g.pending[cmdID] = caller
	}
	g.cmdStops[cmdID] = g.timers.After(g.deps.commandTimeout(), &sessionCmdTimeout{commandID: cmdID})
}

// dropCommand forgets a command nobody will answer.
func (g *sessionGrain) dropCommand(cmdID string) {
	if stop := g.cmdStops[cmdID]; stop != nil {
		stop()
		delete(g.cmdStops, cmdID)
	}
	delete(g.pending, cmdID)
}

func (g *sessionGrain) command(ctx actor.Context, m *messages.SessionCommand) {
	if g.s.Status != SessionOpen {
		code := messages.CodeNotFound
		if g.s.Status == SessionClosed {
			code = messages.CodeClosed
		}
		reply(ctx, fail(code, "session %s is not open (%s)", g.id, g.s.Reason))
		return
	}
	cmdID := g.nextCommand()
	frame, err := messages.Frame{Type: messages.TypeSessionCommand, SessionID: g.id, CommandID: cmdID, Command: m.Command}.Encode()
	if err != nil {
		reply(ctx, fail(messages.CodeBadCommand, "%v", err))
		return
	}
	g.touch()
	Send(ctx, g.cl, g.s.WorkerID, KindWorker, &messages.WorkerForward{Frame: frame})
	g.await(ctx, ctx.Sender(), cmdID)
}

func (g *sessionGrain) result(ctx actor.Context, m *messages.SessionResult) {
	if m.WorkerId != "" && m.WorkerId != g.s.WorkerID {
		// Another worker's link: its word on this session counts for
		// nothing (it could close the session, or answer for its lane).
		g.deps.Metrics.FencedReports.WithLabelValues("session_result").Inc()
		g.log.Warn("session result from a worker not holding the session; refused", slog.String("from", m.WorkerId))
		return
	}
	if m.CommandId == g.closeCmd && g.closeCmd != "" {
		g.release(ctx) // the worker's lane is free now
		return
	}
	caller, waiting := g.pending[m.CommandId]
	g.dropCommand(m.CommandId)
	if g.s.Status == SessionOpening {
		if !m.Ok {
			g.release(ctx)
			g.s.Status, g.s.Reason = SessionClosed, m.Error
			if waiting {
				ctx.Send(caller, fail(messages.CodeNoCapacity, "worker %s could not open the session: %s", g.s.WorkerID, m.Error))
			}
			g.s = Session{}
			g.idle.Set(g.deps.Timing.IdlePassivate)
			return
		}
		// Only the lane's name is kept: an older worker also sends its
		// browser's DevTools address, which no API answer shows.
		var r struct {
			Lane    string            `json:"lane"`
			Browser map[string]string `json:"browser"`
		}
		_ = json.Unmarshal(m.Result, &r)
		g.s.Status, g.s.Lane, g.s.LastUsed = SessionOpen, r.Lane, g.deps.Clock()
		g.s.Browser = boundBrowser(r.Browser)
		g.save()
		g.log.Info("session open", slog.String("worker_id", g.s.WorkerID), slog.String("lane", r.Lane))
		g.armIdle(ctx, g.idleTimeout())
		if waiting {
			ctx.Send(caller, ok(g.json()))
		}
		return
	}
	if g.s.Status == SessionOpen {
		g.touch() // the worker's idle timer restarts when it answers, too
	}
	if !waiting {
		return
	}
	if !m.Ok {
		ctx.Send(caller, fail(messages.CodeCommandFailed, "%s", m.Error))
		return
	}
	ctx.Send(caller, ok(m.Result))
}

// close tells the worker to free the lane and ends the session. The slot
// is released when the worker confirms (its lane is really free then), or
// after closeWait.
func (g *sessionGrain) close(ctx actor.Context, reason string) {
	if g.s.Status == SessionClosed {
		return
	}
	if g.s.WorkerID == "" {
		if o := g.opening; o != nil { // waiting for its profile: no pick in flight
			g.opening = nil
			if g.pickStop != nil {
				g.pickStop()
				g.pickStop = nil
			}
			g.answer(ctx, o.caller, fail(messages.CodeClosed, "session %s closed: %s", g.id, reason))
		}
		g.finish(ctx, reason) // still opening: no lane picked yet
		return
	}
	g.closeOnWorker(ctx)
	g.finish(ctx, reason)
}

// closeOnWorker sends the close command to g.s.WorkerID; its answer (or
// closeWait) releases the slot.
func (g *sessionGrain) closeOnWorker(ctx actor.Context) {
	g.closeCmd = g.nextCommand()
	frame, _ := messages.Frame{Type: messages.TypeSessionCommand, SessionID: g.id, CommandID: g.closeCmd,
		Command: json.RawMessage(fmt.Sprintf(`{"op":%q}`, messages.OpClose))}.Encode()
	Send(ctx, g.cl, g.s.WorkerID, KindWorker, &messages.WorkerForward{Frame: frame})
	g.releaseStop = g.timers.After(closeWait, &sessionReleaseTimeout{})
}

// closeWait bounds the wait for a worker to confirm a session's close.
const closeWait = 10 * time.Second

type sessionReleaseTimeout struct{}

// end: the worker is gone; the slot goes with it.
func (g *sessionGrain) end(ctx actor.Context, reason string) {
	g.release(ctx)
	g.finish(ctx, reason)
}

// finish marks the session closed, fails waiting callers and deletes the
// record: a later activation must not resume it.
func (g *sessionGrain) finish(ctx actor.Context, reason string) {
	g.s.Status, g.s.Reason = SessionClosed, reason
	for id, p := range g.pending {
		ctx.Send(p, fail(messages.CodeClosed, "session %s closed: %s", g.id, reason))
		delete(g.pending, id)
	}
	g.closeTunnels(ctx, reason)
	g.forget()
	g.log.Info("session closed", slog.String("reason", reason))
	g.idle.Set(g.deps.Timing.IdlePassivate)
}

// release frees the session's lane and then its profile: the worker
// saved the profile before it confirmed the close (or never will).
func (g *sessionGrain) release(ctx actor.Context) {
	if g.s.WorkerID != "" && !g.released {
		g.released = true
		Send(ctx, g.cl, g.s.WorkerID, KindWorker, &messages.WorkerRelease{JobId: sessionSlot(g.id)})
	}
	g.profileDone(ctx)
}

func (g *sessionGrain) sched(ctx actor.Context, msg interface{}) {
	Send(ctx, g.cl, SchedulerID, KindScheduler, msg)
}

func (g *sessionGrain) nextCommand() string {
	g.seq++
	return g.id + "-" + g.epoch + "-" + strconv.Itoa(g.seq)
}

func (g *sessionGrain) json() []byte {
	g.s.Tunnels = g.attachedTunnels()
	b, _ := json.Marshal(g.s)
	return b
}
