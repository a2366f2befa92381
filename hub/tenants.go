package hub

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/paprika-hub/paprika/actors/grains"
	"github.com/paprika-hub/paprika/api"
	"github.com/paprika-hub/paprika/config"
	"github.com/paprika-hub/paprika/messages"
)

// tenantConfig is the scheduler's tenant policy from the config (validated
// at start, so the parse cannot fail here).
func tenantConfig(cfg *config.Config) grains.TenantConfig {
	w, _ := cfg.Scheduler.ParseTenantWeights()
	q, _ := cfg.Scheduler.ParseTenantQuotas()
	return grains.TenantConfig{Weights: w, Quotas: q}
}

// schedStats asks the scheduler grain (one per cluster, whichever hub
// holds it) for its numbers.
func (h *Hub) schedStats(ctx context.Context) (grains.SchedStats, error) {
	var st grains.SchedStats
	r, err := grains.CallContext(ctx, h.member.Cluster, grains.SchedulerID, grains.KindScheduler,
		&messages.SchedGetStats{}, h.deps.Timing.GrainTimeout)
	if err != nil {
		return st, err
	}
	if !r.Ok {
		return st, fmt.Errorf("scheduler stats: %s: %s", r.Code, r.Message)
	}
	if err := json.Unmarshal(r.Json, &st); err != nil {
		return st, fmt.Errorf("scheduler stats: %w", err)
	}
	return st, nil
}

// Load implements api.Backend: the fleet's load for GET /pressure and the
// per-tenant quota check, from one scheduler request.
func (h *Hub) Load(ctx context.Context) (api.Load, error) {
	st, err := h.schedStats(ctx)
	if err != nil {
		return api.Load{}, err
	}
	return api.Load{Queued: st.Queued + st.Pending, Scheduled: st.Scheduled, Running: st.LanesBusy, LanesFree: st.LanesFree,
		LanesBusy: st.LanesBusy, WorkersAlive: st.WorkersAlive,
		QueuedByTenant: st.QueuedByTenant, RunningByTenant: st.RunningByTenant}, nil
}

// apiTenants are the API's tenant options.
func apiTenants(cfg *config.Config, t grains.TenantConfig) api.TenantOptions {
	o := api.TenantOptions{Label: cfg.Scheduler.TenantLabel}
	if t.Quotas.Any() {
		o.MaxQueued = func(tenant string) int { return t.Quotas.For(tenant).MaxQueued }
	}
	return o
}
