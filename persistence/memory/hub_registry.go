package memory

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/paprika-hub/paprika/persistence"
)

var _ persistence.HubRegistry = (*HubRegistry)(nil)

// HubRegistry is an in-memory persistence.HubRegistry. A hub whose
// heartbeat expired stays listed with Alive=false until Remove, like the
// index of the Redis registry ("recently dead" hubs for the admin UI).
type HubRegistry struct {
	mu   sync.Mutex
	hubs leases[persistence.HubInfo]
}

// NewHubRegistry returns an empty HubRegistry.
func NewHubRegistry() *HubRegistry {
	return &HubRegistry{hubs: make(leases[persistence.HubInfo])}
}

// Beat records h as alive for ttl. A zero LastSeen is set to now. Alive and
// Local are not stored: List computes Alive, and Local depends on who asks.
func (r *HubRegistry) Beat(ctx context.Context, h persistence.HubInfo, ttl time.Duration) error {
	if err := checkTTLWrite(ctx, "beat hub", h.ID, ttl); err != nil {
		return err
	}
	now := time.Now()
	if h.LastSeen.IsZero() {
		h.LastSeen = now
	}
	h.LastSeen = persistence.UTC(h.LastSeen)
	h.StartedAt = persistence.UTC(h.StartedAt)
	h.Alive, h.Local = false, false
	r.mu.Lock()
	defer r.mu.Unlock()
	r.hubs.put(h.ID, h, now, ttl)
	return nil
}

// List returns every hub not removed, by id; Alive is whether its last
// heartbeat is younger than its ttl. Local is always false.
func (r *HubRegistry) List(ctx context.Context) ([]persistence.HubInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("list hubs: %w", err)
	}
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	return byID(r.hubs, func(e lease[persistence.HubInfo]) persistence.HubInfo {
		h := e.val
		h.Alive = e.alive(now)
		return h
	}), nil
}

// Remove forgets hub id; removing an unknown hub is not an error.
func (r *HubRegistry) Remove(ctx context.Context, id string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("remove hub %s: %w", id, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.hubs, id)
	return nil
}
