package memory

import (
	"bytes"
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
	// Even an expired record's slices are ours to reuse: none was handed out.
	r.workers.put(w.ID, keepWorker(w, r.workers[w.ID].val), now, ttl)
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

// keepWorker is w owning its memory, for storing over prev (the stored
// record, or the zero value). A worker grain writes its record on every
// assignment and release while its lanes, drivers and modes seldom change:
// a list equal to prev's keeps prev's copy (no caller holds it: reads
// clone), and only what changed is copied.
func keepWorker(w, prev persistence.WorkerInfo) persistence.WorkerInfo {
	if !sameNil(w.Lanes, prev.Lanes) || !slices.EqualFunc(w.Lanes, prev.Lanes, laneEqual) {
		w.Lanes = cloneLanes(w.Lanes)
	} else {
		w.Lanes = prev.Lanes
	}
	w.Drivers = keep(w.Drivers, prev.Drivers, eq[string])
	w.Running = keep(w.Running, prev.Running, eq[string])
	w.Reported = keep(w.Reported, prev.Reported, eq[string])
	w.Modes = keep(w.Modes, prev.Modes, modeEqual) // WorkerMode values; their schemas are never written in place
	if w.ShmFreeMB != nil {
		if prev.ShmFreeMB != nil && *prev.ShmFreeMB == *w.ShmFreeMB {
			w.ShmFreeMB = prev.ShmFreeMB
		} else {
			v := *w.ShmFreeMB
			w.ShmFreeMB = &v
		}
	}
	w.LastSeen = persistence.UTC(w.LastSeen)
	return w
}

// keep is s as the store may hold it: prev when equal (nil stays nil),
// else a copy.
func keep[T any](s, prev []T, equal func(a, b T) bool) []T {
	if sameNil(s, prev) && slices.EqualFunc(s, prev, equal) {
		return prev
	}
	return slices.Clone(s)
}

func sameNil[T any](a, b []T) bool { return (a == nil) == (b == nil) }

// cloneLanes copies lanes with their health: one allocation for all of it.
func cloneLanes(lanes []persistence.LaneStatus) []persistence.LaneStatus {
	if lanes == nil {
		return nil
	}
	out := slices.Clone(lanes)
	var health []persistence.LaneHealth
	for i := range out {
		if h := out[i].Health; h != nil {
			if health == nil {
				health = make([]persistence.LaneHealth, 0, len(out)-i)
			}
			health = append(health, *h)
			out[i].Health = &health[len(health)-1]
		}
	}
	return out
}

func eq[T comparable](a, b T) bool { return a == b }

// laneEqual compares health by value: the grain sets a fresh pointer on
// every report, equal or not.
func laneEqual(a, b persistence.LaneStatus) bool {
	if a.Lane != b.Lane || a.State != b.State || a.Skipped != b.Skipped || (a.Health == nil) != (b.Health == nil) {
		return false
	}
	return a.Health == nil || *a.Health == *b.Health
}

func modeEqual(a, b persistence.WorkerMode) bool {
	return a.Name == b.Name && a.Lane == b.Lane && bytes.Equal(a.Schema, b.Schema)
}

func cloneWorker(w persistence.WorkerInfo) persistence.WorkerInfo {
	w.Lanes = cloneLanes(w.Lanes)
	w.Drivers = slices.Clone(w.Drivers)
	w.Running = slices.Clone(w.Running)
	w.Reported = slices.Clone(w.Reported)
	if w.ShmFreeMB != nil {
		v := *w.ShmFreeMB
		w.ShmFreeMB = &v
	}
	w.Modes = slices.Clone(w.Modes) // WorkerMode values; their schemas are never written in place
	w.LastSeen = persistence.UTC(w.LastSeen)
	return w
}
