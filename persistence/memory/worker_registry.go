package memory

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/paprika-hub/paprika/persistence"
)

var _ persistence.WorkerRegistry = (*WorkerRegistry)(nil)

// WorkerRegistry is an in-memory persistence.WorkerRegistry.
//
// Ownership is WorkerInfo.Hub. ReleaseOwner clears it (Hub becomes "") and
// leaves the rest of the record to expire with its TTL, like the separate
// owner key of the Redis registry.
type WorkerRegistry struct {
	mu      sync.Mutex
	workers leases[persistence.WorkerInfo]
	ids     map[string]string // worker id → LAN IP bound by ClaimID
}

// NewWorkerRegistry returns an empty WorkerRegistry.
func NewWorkerRegistry() *WorkerRegistry {
	return &WorkerRegistry{
		workers: make(leases[persistence.WorkerInfo]),
		ids:     make(map[string]string),
	}
}

// Put records w (owned by w.Hub) until ttl passes without another Put.
func (r *WorkerRegistry) Put(ctx context.Context, w persistence.WorkerInfo, ttl time.Duration) error {
	if err := checkTTLWrite(ctx, "put worker", w.ID, ttl); err != nil {
		return err
	}
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.workers.put(w.ID, cloneWorker(w), now, ttl)
	return nil
}

// List returns every unexpired worker, by id.
func (r *WorkerRegistry) List(ctx context.Context) ([]persistence.WorkerInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("list workers: %w", err)
	}
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.workers.sweep(now)
	return byID(r.workers, func(e lease[persistence.WorkerInfo]) persistence.WorkerInfo { return cloneWorker(e.val) }), nil
}

// Get returns worker id, or persistence.ErrNotFound when absent or expired.
func (r *WorkerRegistry) Get(ctx context.Context, id string) (persistence.WorkerInfo, error) {
	if err := ctx.Err(); err != nil {
		return persistence.WorkerInfo{}, fmt.Errorf("get worker %s: %w", id, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.workers.live(id, time.Now())
	if !ok {
		return persistence.WorkerInfo{}, fmt.Errorf("get worker %s: %w", id, persistence.ErrNotFound)
	}
	return cloneWorker(e.val), nil
}

// ClaimID binds id to lanIP unless another IP holds it, and returns the IP
// bound after the call: lanIP when the caller holds the id. Bindings do not
// expire, so an id survives its worker's restarts.
func (r *WorkerRegistry) ClaimID(ctx context.Context, id, lanIP string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("claim worker id %s: %w", id, err)
	}
	if id == "" || lanIP == "" {
		return "", fmt.Errorf("claim worker id %q for %q: empty id or IP", id, lanIP)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if holder, ok := r.ids[id]; ok {
		return holder, nil
	}
	r.ids[id] = lanIP
	return lanIP, nil
}

// ReleaseOwner sets the worker's Hub to "" if it is still hubID; otherwise
// (another hub owns it now, or the worker is gone) it changes nothing and
// returns nil.
func (r *WorkerRegistry) ReleaseOwner(ctx context.Context, workerID, hubID string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("release worker %s from hub %s: %w", workerID, hubID, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.workers.live(workerID, time.Now())
	if !ok || hubID == "" || e.val.Hub != hubID {
		return nil
	}
	e.val.Hub = ""
	r.workers[workerID] = e
	return nil
}

func cloneWorker(w persistence.WorkerInfo) persistence.WorkerInfo {
	w.Lanes = slices.Clone(w.Lanes)
	w.Drivers = slices.Clone(w.Drivers)
	w.Running = slices.Clone(w.Running)
	w.Modes = slices.Clone(w.Modes) // WorkerMode values; their schemas are never written in place
	w.LastSeen = persistence.UTC(w.LastSeen)
	return w
}
