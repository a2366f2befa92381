package grains

import (
	"log/slog"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"

	"github.com/paprika-hub/paprika/actors/supervise"
	"github.com/paprika-hub/paprika/internal/lazylog"
	"github.com/paprika-hub/paprika/messages"
)

// grain is what every grain incarnation knows of itself, set from its
// ClusterInit (which protoactor sends after every Started, so also after
// a restart, to the fresh struct).
type grain struct {
	id     string
	cl     *cluster.Cluster
	log    *slog.Logger
	timers *supervise.Timers
	// idle is the incarnation's receive timeout (never protoactor's, whose
	// timer races the turn).
	idle *supervise.Idle
}

// begin fills the incarnation's identity, its logger (with logKey = its
// id, when given) and its timers.
func (b *grain) begin(ctx actor.Context, d *Deps, msg *cluster.ClusterInit, kind, logKey string) {
	b.id, b.cl = msg.Identity.Identity, msg.Cluster
	b.log = d.Log
	if logKey != "" {
		b.log = lazylog.With(d.Log, slog.String(logKey, b.id))
	}
	b.timers = supervise.NewTimers(ctx, kind)
	b.idle = supervise.NewIdle(b.timers)
}

// common handles what every grain handles alike — its end (the timers of
// this incarnation stop with it), the retries of its grain calls, the
// answers to its calls and its idle ticks that are not due; true when the
// message was one of those.
func (b *grain) common(ctx actor.Context) bool {
	if b.idle.Skip(ctx.Message()) {
		return true
	}
	switch m := ctx.Message().(type) {
	case *actor.Stopping, *actor.Restarting:
		b.timers.StopAll()
		return true
	case *GrainCall:
		m.Run(ctx)
		return true
	case *messages.Reply, *supervise.CallSweep:
		return Answered(b.timers, m)
	}
	return false
}
