package grains

import (
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"

	"github.com/paprika-hub/paprika/actors/supervise"
	"github.com/paprika-hub/paprika/messages"
)

// KindLive is the live grain kind: `live/<kind>.<id>` (messages.LiveIdentity),
// one per job or session being watched.
const KindLive = "live"

// liveAttachWait is how long the grain waits for the worker to dial its
// screencast socket before telling the viewers it ended.
const liveAttachWait = 15 * time.Second

// liveGrain runs at most one screencast of a lane and fans its frames out
// to the viewers, wherever their hubs are. It holds the latest frame only:
// each viewer is sent the latest when it acknowledged the one before
// (a slow viewer skips frames, never queues them), and the source is
// acknowledged — so the worker acknowledges Chromium and gets the next
// frame — as soon as one viewer acknowledged, so the fastest viewer paces
// the screencast and at most one frame per lane is in flight. With no
// viewer left it stops the source: no screencast runs unwatched.
type liveGrain struct {
	deps *Deps
	grain

	workerID, kind, target string
	liveID                 string     // the screencast asked for; "" when none
	source                 *actor.PID // the actor holding the worker's socket, once attached
	viewers                map[string]*liveViewer
	latest                 *messages.LiveFrame
	seq                    int64
	owed                   bool // the source's latest frame is not acknowledged yet
	attachStop             supervise.Stop
}

type liveViewer struct {
	pid      *actor.PID
	control  bool
	inFlight int64 // seq sent and not acknowledged; 0 when ready
	last     int64 // the newest seq sent
}

type liveAttachTimeout struct{ liveID string }

type liveSourceGone struct{ source *actor.PID }

// NewLiveKind registers the live grain.
func NewLiveKind(d *Deps) *cluster.Kind {
	return newKind(d, KindLive, func() actor.Actor { return &liveGrain{deps: d} })
}

func (g *liveGrain) Receive(ctx actor.Context) {
	if g.common(ctx) {
		return
	}
	switch msg := ctx.Message().(type) {
	case *cluster.ClusterInit:
		g.begin(ctx, g.deps, msg, KindLive, "live")
		g.viewers = map[string]*liveViewer{}
		g.attachStop = func() {}
		g.idle.Set(g.deps.Timing.IdlePassivate)
	case *messages.LiveJoin:
		g.join(ctx, msg)
	case *messages.LiveLeave:
		if p := pidOf(msg.Viewer); p != nil {
			g.drop(ctx, p)
		}
	case *messages.LiveAck:
		g.ack(ctx, msg)
	case *messages.LiveInput:
		g.input(ctx, msg)
	case *messages.LiveAttach:
		g.attach(ctx, msg)
	case *messages.LiveFrame:
		g.frame(ctx, msg)
	case *messages.LiveEnd:
		if msg.LiveId == g.liveID && g.liveID != "" {
			g.endAll(ctx, msg.Reason)
		}
	case *liveAttachTimeout:
		if msg.liveID == g.liveID && g.source == nil {
			g.endAll(ctx, "the worker did not open the screencast")
		}
	case *actor.Terminated:
		switch {
		case samePID(msg.Who, g.source):
			// A system message overtakes the source's last user message
			// (its LiveEnd with the worker's reason): handle it behind.
			ctx.Send(ctx.Self(), &liveSourceGone{source: msg.Who})
		default:
			g.drop(ctx, msg.Who)
		}
	case *liveSourceGone:
		if samePID(msg.source, g.source) {
			g.endAll(ctx, "the hub carrying the screencast went away")
		}
	case *supervise.IdleTimeout:
		if len(g.viewers) == 0 && g.liveID == "" {
			ctx.Stop(ctx.Self()) // passivate
		}
	}
}

func (g *liveGrain) join(ctx actor.Context, m *messages.LiveJoin) {
	p := pidOf(m.Viewer)
	if p == nil || m.WorkerId == "" || (m.Kind != messages.LiveKindJob && m.Kind != messages.LiveKindSession) ||
		messages.LiveIdentity(m.Kind, m.TargetId) != g.id {
		reply(ctx, fail(messages.CodeBadCommand, "a live join of %s must name its viewer, worker and target", g.id))
		return
	}
	if g.liveID != "" && m.WorkerId != g.workerID {
		// The job moved to another worker (a retry): start over there.
		g.endAll(ctx, "the job moved to worker "+m.WorkerId)
	}
	if g.viewers[p.String()] == nil {
		ctx.Watch(p)
	}
	g.viewers[p.String()] = &liveViewer{pid: p, control: m.Control}
	if g.liveID == "" {
		g.workerID, g.kind, g.target = m.WorkerId, m.Kind, m.TargetId
		g.liveID = messages.NewLiveID(g.id)
		f := messages.Frame{Type: messages.TypeLiveOpen, LiveID: g.liveID}
		if m.Kind == messages.LiveKindJob {
			f.JobID = m.TargetId
		} else {
			f.SessionID = m.TargetId
		}
		frame, err := f.Encode()
		if err != nil {
			reply(ctx, fail(messages.CodeBadCommand, "%v", err))
			return
		}
		Send(ctx, g.cl, g.workerID, KindWorker, &messages.WorkerForward{Frame: frame})
		g.attachStop = g.timers.After(liveAttachWait, &liveAttachTimeout{liveID: g.liveID})
		g.idle.Cancel()
		g.log.Info("screencast asked of the worker", slog.String("worker_id", g.workerID), slog.String("live_id", g.liveID))
	}
	reply(ctx, ok(nil))
	state := messages.LiveWaiting
	if g.source != nil && g.latest != nil {
		state = messages.LiveLive
	}
	ctx.Send(p, &messages.LiveStatus{State: state})
	if g.latest != nil {
		g.sendTo(ctx, g.viewers[p.String()])
	}
}

func (g *liveGrain) attach(ctx actor.Context, m *messages.LiveAttach) {
	src := pidOf(m.Source)
	switch {
	case m.LiveId == "" || m.LiveId != g.liveID || src == nil:
		reply(ctx, fail(messages.CodeNotFound, "no screencast %s is wanted", m.LiveId))
		return
	case m.WorkerId != g.workerID:
		g.deps.Metrics.FencedReports.WithLabelValues("live_attach").Inc()
		reply(ctx, fail(messages.CodeNotHolder, "worker %s was not asked for screencast %s", m.WorkerId, m.LiveId))
		return
	case g.source != nil:
		reply(ctx, fail(messages.CodeConflict, "screencast %s is attached already", m.LiveId))
		return
	}
	g.source = src
	g.attachStop()
	ctx.Watch(src)
	reply(ctx, ok(nil))
}

func (g *liveGrain) frame(ctx actor.Context, m *messages.LiveFrame) {
	// The live id is the source's own secret (the worker dialled it).
	if g.source == nil || m.LiveId != g.liveID {
		return
	}
	first := g.latest == nil
	g.seq++
	m.Seq = g.seq
	g.latest = m
	g.owed = true
	for _, v := range g.viewers {
		if first {
			ctx.Send(v.pid, &messages.LiveStatus{State: messages.LiveLive})
		}
		if v.inFlight == 0 {
			g.sendTo(ctx, v)
		}
	}
}

// sendTo sends the latest frame to a ready viewer that has not had it.
func (g *liveGrain) sendTo(ctx actor.Context, v *liveViewer) {
	if g.latest == nil || v.inFlight != 0 || v.last >= g.latest.Seq {
		return
	}
	v.inFlight, v.last = g.latest.Seq, g.latest.Seq
	ctx.Send(v.pid, g.latest)
}

func (g *liveGrain) ack(ctx actor.Context, m *messages.LiveAck) {
	p := pidOf(m.Viewer)
	if p == nil {
		return
	}
	v := g.viewers[p.String()]
	if v == nil || v.inFlight == 0 || m.Seq != v.inFlight {
		return // stale or made up: only the frame in flight is acknowledged
	}
	v.inFlight = 0
	g.sendTo(ctx, v)
	if g.owed && g.source != nil {
		g.owed = false
		ctx.Send(g.source, &messages.LiveAck{Seq: g.latest.Seq})
	}
}

func (g *liveGrain) input(ctx actor.Context, m *messages.LiveInput) {
	p := pidOf(m.Viewer)
	if p == nil {
		return
	}
	if v := g.viewers[p.String()]; v != nil && v.control && g.source != nil && g.kind == messages.LiveKindSession {
		ctx.Send(g.source, &messages.LiveInput{Input: m.Input, Event: m.Event})
	}
}

// drop forgets a viewer; the last one's leaving stops the screencast.
func (g *liveGrain) drop(ctx actor.Context, p *actor.PID) {
	v := g.viewers[p.String()]
	if v == nil {
		return
	}
	ctx.Unwatch(p)
	delete(g.viewers, p.String())
	if len(g.viewers) > 0 {
		// The leaver may have held the only frame in flight: the others
		// are busy with older ones and will take the latest when they ack.
		if v.inFlight != 0 && g.owed && g.source != nil {
			ready := false
			for _, o := range g.viewers {
				ready = ready || o.inFlight == 0
			}
			if ready {
				g.owed = false
				ctx.Send(g.source, &messages.LiveAck{Seq: g.latest.Seq})
			}
		}
		return
	}
	g.stopSource(ctx, "no viewer left")
}

// endAll tells every viewer the screencast ended and stops the source.
func (g *liveGrain) endAll(ctx actor.Context, reason string) {
	for k, v := range g.viewers {
		ctx.Unwatch(v.pid)
		ctx.Send(v.pid, &messages.LiveStatus{State: messages.LiveEnded, Reason: reason})
		delete(g.viewers, k)
	}
	g.stopSource(ctx, reason)
}

func (g *liveGrain) stopSource(ctx actor.Context, reason string) {
	if g.source != nil {
		ctx.Unwatch(g.source)
		ctx.Send(g.source, &messages.LiveStop{Reason: reason})
	}
	if g.liveID != "" {
		g.log.Info("screencast stopped", slog.String("live_id", g.liveID), slog.String("reason", reason))
	}
	g.attachStop()
	g.attachStop = func() {}
	g.source, g.liveID, g.latest, g.owed = nil, "", nil, false
	g.idle.Set(g.deps.Timing.IdlePassivate)
}
