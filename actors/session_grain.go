package actors

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/scheduler"

	"github.com/paprika-hub/paprika/messages"
)

// KindSession is the session grain kind: `session/<id>`.
const KindSession = "session"

// Session states.
const (
	SessionOpening = "opening"
	SessionOpen    = "open"
	SessionClosed  = "closed"
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
}

// sessionGrain is `session/<id>`: an interactive lane reserved on a worker.
// Any hub reaches it by identity (no hub-to-hub forwarding): it sends each
// command to the worker's socket through the worker grain and answers the
// caller when the worker's session_result comes back. Its state is live
// only: if its hub dies, the session is lost (the worker frees the lane
// after the idle timeout) — the caller gets a clear not-found.
type sessionGrain struct {
	// fixed after construction
	deps *Deps

	// actor-confined state
	id       string
	cl       *cluster.Cluster
	log      *slog.Logger
	s        Session
	seq      int
	pending  map[string]*actor.PID // command id → caller waiting for the result
	closeCmd string                // the close command whose answer frees the slot
	released bool
	timers   *scheduler.TimerScheduler
}

type sessionCmdTimeout struct{ commandID string }

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
	props := actor.PropsFromProducer(func() actor.Actor { return &sessionGrain{deps: d} },
		actor.WithReceiverMiddleware(recoverMiddleware(KindSession, d)))
	return cluster.NewKind(KindSession, props)
}

func (g *sessionGrain) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *cluster.ClusterInit:
		g.id = msg.Identity.Identity
		g.cl = msg.Cluster
		g.log = g.deps.Log.With(slog.String("session_id", g.id), slog.String("hub_id", g.deps.HubID))
		g.pending = map[string]*actor.PID{}
		g.timers = scheduler.NewTimerScheduler(ctx)
	case *messages.SessionOpen:
		g.open(ctx, msg)
	case *messages.SessionCommand:
		g.command(ctx, msg)
	case *messages.SessionResult:
		g.result(ctx, msg)
	case *messages.SessionGet:
		if g.s.ID == "" {
			reply(ctx, fail("not_found", "no session %s", g.id))
			return
		}
		reply(ctx, ok(g.json()))
	case *messages.SessionClose:
		if g.s.ID == "" {
			reply(ctx, fail("not_found", "no session %s", g.id))
			return
		}
		g.close(ctx, "closed by request")
		reply(ctx, ok(g.json()))
	case *messages.SessionWorkerGone:
		if g.s.Status != SessionClosed && msg.WorkerId == g.s.WorkerID {
			g.end(ctx, fmt.Sprintf("worker %s disconnected", g.s.WorkerID))
		}
	case *sessionCmdTimeout:
		if p, ok := g.pending[msg.commandID]; ok {
			delete(g.pending, msg.commandID)
			ctx.Send(p, fail("timeout", "worker %s did not answer within %s", g.s.WorkerID, g.deps.commandTimeout()))
		}
	case *sessionReleaseTimeout:
		g.release(ctx)
	case *sessionIdleCheck:
		if g.s.Status != SessionOpen {
			return
		}
		idle := time.Duration(g.s.IdleTimeoutS) * time.Second
		if left := idle - g.deps.now().Sub(g.s.LastUsed); left > 0 || len(g.pending) > 0 {
			g.timers.SendOnce(max(left, 100*time.Millisecond), ctx.Self(), &sessionIdleCheck{})
			return
		}
		g.close(ctx, "idle timeout")
	case *actor.ReceiveTimeout:
		if g.s.Status == SessionClosed || g.s.Status == "" {
			ctx.Stop(ctx.Self()) // passivate
		}
	}
}

func (g *sessionGrain) open(ctx actor.Context, m *messages.SessionOpen) {
	if g.s.ID != "" {
		reply(ctx, fail("conflict", "session %s exists", g.id))
		return
	}
	now := g.deps.now()
	g.s = Session{ID: g.id, Status: SessionOpening, IdleTimeoutS: int(m.IdleTimeoutS), Labels: m.Labels, CreatedAt: now, LastUsed: now}
	res, err := requestGrain(g.cl, SchedulerID, KindScheduler, &messages.SchedPickSession{SessionId: g.id}, g.deps.Timing.GrainTimeout)
	if err != nil || !res.Ok {
		g.s = Session{}
		reply(ctx, fail("no_capacity", "no worker with a free chromium lane: %s", errString(err, res)))
		ctx.SetReceiveTimeout(g.deps.Timing.IdlePassivate)
		return
	}
	var pick struct {
		WorkerID string `json:"worker_id"`
	}
	_ = json.Unmarshal(res.Json, &pick)
	g.s.WorkerID = pick.WorkerID
	cmdID := g.nextCommand()
	frame, _ := messages.Frame{Type: messages.TypeSessionCommand, SessionID: g.id, CommandID: cmdID,
		Command: json.RawMessage(fmt.Sprintf(`{"op":"open","idle_timeout_s":%d}`, m.IdleTimeoutS))}.Encode()
	ares, err := requestGrain(g.cl, pick.WorkerID, KindWorker,
		&messages.WorkerAssign{JobId: sessionSlot(g.id), Frame: frame}, g.deps.Timing.AssignGrace)
	placed := err == nil && ares.Ok
	if placed {
		g.sched(ctx, &messages.SchedPlaced{JobId: sessionSlot(g.id), WorkerId: pick.WorkerID})
	} else {
		g.sched(ctx, &messages.SchedPlaceFailed{JobId: sessionSlot(g.id), WorkerId: pick.WorkerID})
		g.s = Session{}
		reply(ctx, fail("no_capacity", "worker %s refused the session: %s", pick.WorkerID, errString(err, ares)))
		ctx.SetReceiveTimeout(g.deps.Timing.IdlePassivate)
		return
	}
	g.await(ctx, cmdID)
}

// await parks the caller until the worker answers cmdID (or the timeout).
func (g *sessionGrain) await(ctx actor.Context, cmdID string) {
	if ctx.Sender() != nil {
		g.pending[cmdID] = ctx.Sender()
	}
	g.timers.SendOnce(g.deps.commandTimeout(), ctx.Self(), &sessionCmdTimeout{commandID: cmdID})
}

func (g *sessionGrain) command(ctx actor.Context, m *messages.SessionCommand) {
	if g.s.Status != SessionOpen {
		code := "not_found"
		if g.s.Status == SessionClosed {
			code = "closed"
		}
		reply(ctx, fail(code, "session %s is not open (%s)", g.id, g.s.Reason))
		return
	}
	cmdID := g.nextCommand()
	frame, err := messages.Frame{Type: messages.TypeSessionCommand, SessionID: g.id, CommandID: cmdID, Command: m.Command}.Encode()
	if err != nil {
		reply(ctx, fail("bad_command", "%v", err))
		return
	}
	g.s.LastUsed = g.deps.now()
	sendGrain(ctx, g.cl, g.s.WorkerID, KindWorker, &messages.WorkerForward{Frame: frame})
	g.await(ctx, cmdID)
}

func (g *sessionGrain) result(ctx actor.Context, m *messages.SessionResult) {
	if m.CommandId == g.closeCmd && g.closeCmd != "" {
		g.release(ctx) // the worker's lane is free now
		return
	}
	caller, waiting := g.pending[m.CommandId]
	delete(g.pending, m.CommandId)
	if g.s.Status == SessionOpening {
		if !m.Ok {
			g.release(ctx)
			g.s.Status, g.s.Reason = SessionClosed, m.Error
			if waiting {
				ctx.Send(caller, fail("no_capacity", "worker %s could not open the session: %s", g.s.WorkerID, m.Error))
			}
			g.s = Session{}
			ctx.SetReceiveTimeout(g.deps.Timing.IdlePassivate)
			return
		}
		var r struct {
			Lane string `json:"lane"`
		}
		_ = json.Unmarshal(m.Result, &r)
		g.s.Status, g.s.Lane, g.s.LastUsed = SessionOpen, r.Lane, g.deps.now()
		g.log.Info("session open", slog.String("worker_id", g.s.WorkerID), slog.String("lane", r.Lane))
		g.timers.SendOnce(time.Duration(max(g.s.IdleTimeoutS, 1))*time.Second, ctx.Self(), &sessionIdleCheck{})
		if waiting {
			ctx.Send(caller, ok(g.json()))
		}
		return
	}
	g.s.LastUsed = g.deps.now()
	if !waiting {
		return
	}
	if !m.Ok {
		ctx.Send(caller, fail("command_failed", "%s", m.Error))
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
	g.closeCmd = g.nextCommand()
	frame, _ := messages.Frame{Type: messages.TypeSessionCommand, SessionID: g.id, CommandID: g.closeCmd,
		Command: json.RawMessage(`{"op":"close"}`)}.Encode()
	sendGrain(ctx, g.cl, g.s.WorkerID, KindWorker, &messages.WorkerForward{Frame: frame})
	g.timers.SendOnce(closeWait, ctx.Self(), &sessionReleaseTimeout{})
	g.finish(ctx, reason)
}

// closeWait bounds the wait for a worker to confirm a session's close.
const closeWait = 10 * time.Second

type sessionReleaseTimeout struct{}

// end: the worker is gone; the slot goes with it.
func (g *sessionGrain) end(ctx actor.Context, reason string) {
	g.release(ctx)
	g.finish(ctx, reason)
}

// finish marks the session closed and fails waiting callers.
func (g *sessionGrain) finish(ctx actor.Context, reason string) {
	g.s.Status, g.s.Reason = SessionClosed, reason
	for id, p := range g.pending {
		ctx.Send(p, fail("closed", "session %s closed: %s", g.id, reason))
		delete(g.pending, id)
	}
	g.log.Info("session closed", slog.String("reason", reason))
	ctx.SetReceiveTimeout(g.deps.Timing.IdlePassivate)
}

func (g *sessionGrain) release(ctx actor.Context) {
	if g.s.WorkerID != "" && !g.released {
		g.released = true
		sendGrain(ctx, g.cl, g.s.WorkerID, KindWorker, &messages.WorkerRelease{JobId: sessionSlot(g.id)})
	}
}

func (g *sessionGrain) sched(ctx actor.Context, msg interface{}) {
	sendGrain(ctx, g.cl, SchedulerID, KindScheduler, msg)
}

func (g *sessionGrain) nextCommand() string {
	g.seq++
	return g.id + "-" + strconv.Itoa(g.seq)
}

func (g *sessionGrain) json() []byte {
	b, _ := json.Marshal(g.s)
	return b
}

// sessionSlot is the key a session's lane has among a worker's
// reservations, beside job ids.
func sessionSlot(id string) string { return "session:" + id }
