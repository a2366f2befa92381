package hub

import (
	"context"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/scheduler"

	"github.com/paprika-hub/paprika/persistence"
)

// hubBeat records this hub in the hub registry every hub_ttl/3, so GET /hubs
// (and, with Redis, the other hubs) see it alive; a timer message, not a
// goroutine.
type hubBeat struct {
	h      *Hub
	cancel scheduler.CancelFunc
}

type beatTick struct{}

func (b *hubBeat) Receive(ctx actor.Context) {
	switch ctx.Message().(type) {
	case *actor.Started:
		every := max(b.h.cfg.Cluster.MemberTimeout/3, 100*time.Millisecond)
		b.beat()
		b.cancel = scheduler.NewTimerScheduler(ctx).SendRepeatedly(every, every, ctx.Self(), &beatTick{})
	case *beatTick:
		b.beat()
	case *actor.Stopping:
		if b.cancel != nil {
			b.cancel()
		}
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
