package hub

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/paprika-hub/paprika/actors/grains"
	"github.com/paprika-hub/paprika/messages"
)

// settleTimeout bounds the wait for the worker grains to take their
// disconnects at shutdown.
const settleTimeout = 3 * time.Second

// ownedWorkers lists the workers whose socket this hub holds, read before
// the links close (a disconnect clears the registry's owner).
func (h *Hub) ownedWorkers(ctx context.Context) []string {
	rctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	ws, err := h.stores.Workers.List(rctx)
	if err != nil {
		h.log.Debug("shutdown: worker list failed; not waiting for their grains", slog.Any("err", err))
		return nil
	}
	var ids []string
	for _, w := range ws {
		if w.Hub == h.id {
			ids = append(ids, w.ID)
		}
	}
	return ids
}

// settleWorkerGrains asks each worker grain whose link just closed for its
// info: the request queues behind the link's WorkerDisconnected, so once
// it is answered the grain has released its owner key — while the stores
// are still open (they close after the member leaves, and a release after
// that failed with "redis: client is closed", leaving the key to expire).
func (h *Hub) settleWorkerGrains(ctx context.Context, ids []string) {
	if len(ids) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, settleTimeout)
	defer cancel()
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = grains.CallContext(ctx, h.member.Cluster, id, grains.KindWorker, &messages.WorkerGetInfo{}, settleTimeout)
		}()
	}
	wg.Wait()
}
