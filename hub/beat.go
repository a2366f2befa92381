package hub

import (
	"context"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/paprika-hub/paprika/actors"

	"github.com/paprika-hub/paprika/persistence"
)

// hubBeat records this hub in the hub registry every hub_ttl/3, so GET /hubs
// (and, with Redis, the other hubs) see it alive; a timer message, not a
// goroutine.
type hubBeat struct {
	h      *Hub
	timers *actors.Timers
}

type beatTick struct{}

func (b *hubBeat) Receive(ctx actor.Context) {
	switch ctx.Message().(type) {
	case *actor.Started:
		every := max(b.h.cfg.Cluster.MemberTimeout/3, 100*time.Millisecond)
		b.beat()
		b.timers = actors.NewTimers(ctx, "hub_beat")
		b.timers.Every(every, &beatTick{})
	case *beatTick:
		b.beat()
	case *actors.InjectPanic:
		panic("injected panic in hub beat")
	case *actor.Stopping, *actor.Restarting:
		b.timers.StopAll()
	}
}

func (b *hubBeat) beat() {
	h := b.h
	ctx, cancel := context.WithTimeout(context.Background(), h.cfg.Reconciler.FleetReadTimeout)
	defer cancel()
	info := persistence.HubInfo{ID: h.id, Address: h.URL(), Alive: true, StartedAt: h.started, LastSeen: time.Now()}
	if err := h.stores.Hubs.Beat(ctx, info, h.cfg.Cluster.HubTTL); err != nil {
		h.log.Warn("hub heartbeat failed", slog.Any("err", err))
	}
}
