package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/paprika-hub/paprika/actors/grains"
	"github.com/paprika-hub/paprika/api"
	"github.com/paprika-hub/paprika/messages"
	"github.com/paprika-hub/paprika/persistence"
)

var _ api.Backend = (*Hub)(nil)

// Logs implements api.Backend.
func (h *Hub) Logs() persistence.LogStore { return h.stores.Logs }

// Assets implements api.Backend.
func (h *Hub) Assets() persistence.AssetStore { return h.stores.Assets }

// Ready checks each store with a cheap read.
func (h *Hub) Ready(ctx context.Context) map[string]error {
	res := map[string]error{}
	_, _, err := h.stores.Jobs.List(ctx, persistence.ListQuery{Limit: 1})
	res["jobs"] = err
	_, err = h.stores.Logs.Len(ctx, "readyz")
	res["logs"] = err
	_, err = h.stores.Workers.List(ctx)
	res["workers"] = err
	if _, err := h.stores.Assets.List(ctx, "readyz"); err != nil && !errors.Is(err, persistence.ErrNotFound) {
		res["assets"] = err
	} else {
		res["assets"] = nil
	}
	return res
}

// QueueDepth implements api.Backend: the scheduler grain's queued,
// scheduled (delayed, or waiting to retry) and being-placed jobs, the fleet's queue (one scheduler per cluster). The
// API caches it (limits.max_queued); the job store has no count to ask.
func (h *Hub) QueueDepth(ctx context.Context) (int, error) {
	r, err := grains.CallContext(ctx, h.member.Cluster, grains.SchedulerID, grains.KindScheduler,
		&messages.SchedGetStats{}, h.deps.Timing.GrainTimeout)
	if err != nil {
		return 0, err
	}
	if !r.Ok {
		return 0, fmt.Errorf("scheduler stats: %s: %s", r.Code, r.Message)
	}
	var st grains.SchedStats
	if err := json.Unmarshal(r.Json, &st); err != nil {
		return 0, fmt.Errorf("scheduler stats: %w", err)
	}
	// Scheduled jobs count: they will be queued, and delaying them must not
	// get round the cap.
	return st.Queued + st.Pending + st.Scheduled, nil
}
