package grains

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/paprika-hub/paprika/messages"
	"github.com/paprika-hub/paprika/persistence"
)

// fleetCapsTTL is how long one read of the registry answers WaitingFor:
// clients poll GET /jobs/{id} of a waiting job, and a registry read per
// poll would cost the fleet a round trip each (1,000 workers' records on
// Redis). A worker that became alive within it may not count yet.
const fleetCapsTTL = time.Second

// fleetCaps is what the alive workers of the whole fleet could run, from
// the registry (every hub's workers), read at most once per fleetCapsTTL.
type fleetCaps struct {
	mu      sync.Mutex // held across a refresh, so concurrent callers share one read
	at      time.Time
	anyLane bool            // some alive, active worker has a lane
	drivers map[string]bool // drivers of those workers
	modes   []persistence.ModeInfo
	byName  map[string]int // mode → its index in modes
}

// capable is the part of pick_worker's filter (PickRule.Eligible) that
// does not pass with load: alive, active, with a lane. A busy worker, or
// one whose disk is full for now, may still run the job later.
func capable(w persistence.WorkerInfo, aliveWindow time.Duration, now time.Time) bool {
	return w.Connected && now.Sub(w.LastSeen) <= aliveWindow && w.Status == WorkerActive &&
		(len(w.Lanes) > 0 || w.BrowserURL != "") && w.MaxConcurrent > 0
}

// refresh reads the registry unless the last read is fresh; f.mu held.
func (f *fleetCaps) refresh(ctx context.Context, d *Deps) error {
	now := time.Now()
	if !f.at.IsZero() && now.Sub(f.at) <= fleetCapsTTL {
		return nil
	}
	bound := d.Timing.FleetReadTimeout
	if bound <= 0 {
		bound = 1500 * time.Millisecond
	}
	rctx, cancel := context.WithTimeout(ctx, bound)
	ws, err := d.Workers.List(rctx)
	cancel()
	if err != nil {
		return fmt.Errorf("read the worker registry: %w", err)
	}
	f.anyLane, f.drivers = false, map[string]bool{}
	for _, w := range ws {
		if capable(w, d.Timing.AliveWindow, now) {
			f.anyLane = true
			for _, dr := range w.Drivers {
				f.drivers[dr] = true
			}
		}
	}
	f.modes = fleetModes(ws, d.Timing.AliveWindow, now)
	f.byName = make(map[string]int, len(f.modes))
	for i, m := range f.modes {
		f.byName[m.Name] = i
	}
	f.at = now
	return nil
}

// waitingFor reads the fleet (or the cached read) and names what a job of
// mode needs that no alive worker has; "" when some worker could run it.
func (f *fleetCaps) waitingFor(ctx context.Context, d *Deps, mode string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.refresh(ctx, d); err != nil {
		return "", err
	}
	if mode == "" {
		mode = messages.ModeNoop
	}
	if _, ok := f.byName[mode]; ok {
		return "", nil
	}
	if !isBuiltinMode(mode) {
		return "a worker declaring mode " + mode, nil
	}
	need := messages.ModeDriver(mode)
	switch {
	case need == "" && !f.anyLane:
		return "a worker with a lane", nil
	case need != "" && !f.drivers[need]:
		return "a worker with a " + need + " lane", nil
	}
	// Workers with the lanes are there, but each declares its modes and
	// none this one.
	return "a worker declaring mode " + mode, nil
}

// fleetModes returns the modes the fleet's alive workers run now (the
// cached read), by name; the slice is the caller's.
func (f *fleetCaps) fleetModes(ctx context.Context, d *Deps) ([]persistence.ModeInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.refresh(ctx, d); err != nil {
		return nil, err
	}
	return slices.Clone(f.modes), nil
}
