package grains

import (
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/paprika-hub/paprika/actors/supervise"
	"github.com/paprika-hub/paprika/internal/deadline"
	"github.com/paprika-hub/paprika/persistence"
)

// hubBeat records this hub in the hub registry every member_timeout/3, so
// GET /hubs (and, with Redis, the other hubs) see it alive; a timer
// message, not a goroutine.
type hubBeat struct {
	// fixed after construction
	deps    *Deps
	address func() string // the API's URL, known once the hub listens
	started time.Time

	// actor-confined state
	timers *supervise.Timers
}

type beatTick struct{}

// NewHubBeatProps builds the hub's registry beat (one per hub).
func NewHubBeatProps(d *Deps, address func() string, started time.Time) *actor.Props {
	return actor.PropsFromProducer(func() actor.Actor { return &hubBeat{deps: d, address: address, started: started} },
		actor.WithReceiverMiddleware(supervise.Recover("hub_beat", d.Log, d.Metrics)))
}

// Receive implements actor.Actor.
func (b *hubBeat) Receive(ctx actor.Context) {
	switch ctx.Message().(type) {
	case *actor.Started:
		every := max(b.deps.Timing.MemberTimeout/3, 100*time.Millisecond)
		b.beat()
		b.timers = supervise.NewTimers(ctx, "hub_beat")
		b.timers.Every(every, &beatTick{})
	case *actor.Stopping, *actor.Restarting:
		b.timers.StopAll()
	case *beatTick:
		b.beat()
	case *supervise.InjectPanic:
		panic("injected panic in hub beat")
	}
}

func (b *hubBeat) beat() {
	ctx := deadline.Within(b.deps.storeTimeout())
	info := persistence.HubInfo{ID: b.deps.HubID, Address: b.address(), Alive: true, StartedAt: b.started, LastSeen: time.Now()}
	if cl := b.deps.Cluster(); cl != nil {
		info.Member = cl.ActorSystem.Address()
	}
	if err := b.deps.Hubs.Beat(ctx, info, b.deps.Timing.HubTTL); err != nil {
		b.deps.Log.Warn("hub heartbeat failed", slog.Any("err", err))
	}
}
