package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/paprika-hub/paprika/actors"
	"github.com/paprika-hub/paprika/api"
	"github.com/paprika-hub/paprika/messages"
	"github.com/paprika-hub/paprika/persistence"
)

var _ api.Backend = (*Hub)(nil)

// Submit stores a queued job and wakes its grain, which enqueues it with the
// scheduler. The store write comes first: once 201 is sent the job exists
// whatever happens to this hub.
func (h *Hub) Submit(ctx context.Context, j persistence.Job) (persistence.Job, bool, error) {
	j.Status = persistence.StatusQueued
	j.CreatedAt = time.Now().UTC()
	stored, created, err := h.stores.Jobs.Create(ctx, j)
	if err != nil {
		return stored, false, fmt.Errorf("create job: %w", err)
	}
	if created {
		h.deps.Metrics.JobsSubmitted.WithLabelValues(stored.Mode).Inc()
		if err := actors.Wake(h.member.Cluster, stored.ID); err != nil {
			// Stored and queued: the re-drive picks it up.
			h.log.Warn("could not wake a new job; re-drive will", "job_id", stored.ID, "err", err)
		}
	}
	return stored, created, nil
}

// Job reads a job from the store: reads need no grain.
func (h *Hub) Job(ctx context.Context, id string) (persistence.Job, error) {
	return h.stores.Jobs.Get(ctx, id)
}

// Jobs lists jobs.
func (h *Hub) Jobs(ctx context.Context, q persistence.ListQuery) ([]persistence.Job, string, error) {
	return h.stores.Jobs.List(ctx, q)
}

// Cancel asks the job grain, which owns the transition.
func (h *Hub) Cancel(ctx context.Context, id string) (persistence.Job, error) {
	if _, err := h.stores.Jobs.Get(ctx, id); err != nil {
		return persistence.Job{}, err
	}
	r, err := actors.CallContext(ctx, h.member.Cluster, id, actors.KindJob, &messages.JobCancel{}, h.deps.Timing.GrainTimeout)
	if err != nil {
		return persistence.Job{}, fmt.Errorf("cancel job %s: %w: %w", id, persistence.ErrUnavailable, err)
	}
	var j persistence.Job
	if len(r.Json) > 0 {
		_ = json.Unmarshal(r.Json, &j)
	}
	if !r.Ok {
		if r.Code == "conflict" {
			return j, api.Errorf(http.StatusConflict, "already_final", "%s", r.Message)
		}
		return j, fmt.Errorf("cancel job %s: %w: %s", id, persistence.ErrUnavailable, r.Message)
	}
	return j, nil
}

// Logs implements api.Backend.
func (h *Hub) Logs() persistence.LogStore { return h.stores.Logs }

// Assets implements api.Backend.
func (h *Hub) Assets() persistence.AssetStore { return h.stores.Assets }

// Workers is the fleet-wide view from the registry, with alive computed now.
func (h *Hub) Workers(ctx context.Context) ([]persistence.WorkerInfo, error) {
	ws, err := h.stores.Workers.List(ctx)
	if err != nil {
		return nil, fmt.Errorf("list workers: %w", err)
	}
	now := time.Now()
	for i := range ws {
		ws[i].Alive = ws[i].Connected && now.Sub(ws[i].LastSeen) <= h.cfg.Worker.AliveWindow
	}
	return ws, nil
}

// SetWorkerStatus asks the worker grain.
func (h *Hub) SetWorkerStatus(ctx context.Context, id, status string) (persistence.WorkerInfo, error) {
	var w persistence.WorkerInfo
	r, err := actors.CallContext(ctx, h.member.Cluster, id, actors.KindWorker, &messages.WorkerSetStatus{Status: status}, h.deps.Timing.GrainTimeout)
	if err != nil {
		return w, fmt.Errorf("set worker %s status: %w: %w", id, persistence.ErrUnavailable, err)
	}
	if !r.Ok {
		if r.Code == "not_found" {
			return w, fmt.Errorf("worker %s: %w", id, persistence.ErrNotFound)
		}
		return w, api.Errorf(http.StatusBadRequest, r.Code, "%s", r.Message)
	}
	if err := json.Unmarshal(r.Json, &w); err != nil {
		return w, fmt.Errorf("decode worker %s: %w", id, err)
	}
	return w, nil
}

// Hubs lists the hub registry.
func (h *Hub) Hubs(ctx context.Context) ([]persistence.HubInfo, error) {
	hs, err := h.stores.Hubs.List(ctx)
	if err != nil {
		return nil, fmt.Errorf("list hubs: %w", err)
	}
	now := time.Now()
	for i := range hs {
		hs[i].Local = hs[i].ID == h.id
		// The key lives hub_ttl (so a dead hub stays listed); alive means
		// beating within the member timeout, as the cluster sees it.
		hs[i].Alive = hs[i].Alive && now.Sub(hs[i].LastSeen) <= h.cfg.Cluster.MemberTimeout
	}
	return hs, nil
}

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
