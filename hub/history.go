package hub

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"time"

	"github.com/paprika-hub/paprika/persistence"
)

// History sizes: an hour of fleet samples every 10 s, and the last 60
// heartbeats of each worker (15 min at the default 15 s interval). Both
// are fixed rings, so the console's charts cost a bounded, small memory
// whatever the job rate or the uptime (a worker's ring goes when the
// worker leaves the registry).
const (
	historyInterval  = 10 * time.Second
	historySamples   = 360
	heartbeatSamples = 60
	// historyScan bounds the jobs one sample reads per final status to
	// count what finished since the previous sample: newest first, so a
	// fleet finishing more than this many jobs of one status in 10 s shows
	// this many (the charts say "at least").
	historyScan = 500
	// maxReasons bounds a sample's failures-by-reason map.
	maxReasons = 16
)

// fleetSample is one point of the Overview charts (GET /stats/history).
type fleetSample struct {
	T            time.Time `json:"t"`
	Queued       int       `json:"queued"`
	Running      int       `json:"running"`
	LanesBusy    int       `json:"lanes_busy"`
	LanesFree    int       `json:"lanes_free"`
	WorkersAlive int       `json:"workers_alive"`
	// Succeeded, Failed and Canceled count the jobs that finished since
	// the previous sample (FinishedAt in (previous T, T]).
	Succeeded int `json:"succeeded"`
	Failed    int `json:"failed"`
	Canceled  int `json:"canceled"`
	// FailedByReason splits Failed and Canceled by reason.
	FailedByReason map[string]int `json:"failed_by_reason,omitempty"`
	// Partial is set when a read failed or timed out: the fields it feeds
	// are zero, not "nothing happened".
	Partial bool `json:"partial,omitempty"`
}

// heartbeat is one point of a worker's sparkline: what its registry entry
// said at a new last_seen.
type heartbeat struct {
	T        time.Time `json:"t"`
	CPUPct   float64   `json:"cpu_pct"`
	MemPct   float64   `json:"mem_pct"`
	DiskPct  float64   `json:"disk_pct"`
	InFlight int       `json:"in_flight"`
}

// history keeps the rings. One goroutine, owned by the hub (start/stop),
// samples; the API reads under the mutex.
type history struct {
	h *Hub
	// sampling serializes samples, so that two never count one finished
	// job twice (each reads the previous one's T).
	sampling sync.Mutex
	mu       sync.Mutex
	ring     []fleetSample // oldest first, at most historySamples
	hbs      map[string][]heartbeat
	last     time.Time // T of the newest sample

	stopCh chan struct{}
	done   chan struct{}
}

func newHistory(h *Hub) *history {
	return &history{h: h, hbs: map[string][]heartbeat{}, stopCh: make(chan struct{}), done: make(chan struct{})}
}

// start samples now and then every historyInterval until stop.
func (hi *history) start() {
	go func() {
		defer close(hi.done)
		t := time.NewTicker(historyInterval)
		defer t.Stop()
		for {
			hi.sample()
			select {
			case <-hi.stopCh:
				return
			case <-t.C:
			}
		}
	}()
}

// stop ends the sampler and waits for it (a sample in progress is bounded
// by its timeouts).
func (hi *history) stop() {
	close(hi.stopCh)
	<-hi.done
}

func (hi *history) sample() {
	hi.sampling.Lock()
	defer hi.sampling.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), historyInterval/2)
	defer cancel()
	now := time.Now()
	hi.mu.Lock()
	since := hi.last
	hi.mu.Unlock()
	if since.IsZero() {
		since = now.Add(-historyInterval)
	}
	s := fleetSample{T: now, FailedByReason: map[string]int{}}
	if f, err := hi.h.fleet(ctx); err == nil {
		for _, n := range f.QueueDepth {
			s.Queued += n
		}
		s.LanesBusy, s.LanesFree, s.WorkersAlive = f.LanesBusy, f.LanesFree, f.WorkersAlive
	} else {
		s.Partial = true
		hi.h.log.Debug("stats history: fleet read failed", slog.Any("err", err))
	}
	jobs := hi.h.stores.Jobs
	if running, _, err := jobs.List(ctx, persistence.ListQuery{Status: persistence.StatusRunning, Limit: 1000}); err == nil {
		s.Running = len(running)
	} else {
		s.Partial = true
	}
	for _, st := range []persistence.Status{persistence.StatusSucceeded, persistence.StatusFailed, persistence.StatusCanceled} {
		page, _, err := jobs.List(ctx, persistence.ListQuery{Status: st, Limit: historyScan})
		if err != nil {
			s.Partial = true
			continue
		}
		for _, j := range page {
			if !j.FinishedAt.After(since) || j.FinishedAt.After(now) {
				continue
			}
			switch st {
			case persistence.StatusSucceeded:
				s.Succeeded++
			case persistence.StatusFailed:
				s.Failed++
			default:
				s.Canceled++
			}
			if st != persistence.StatusSucceeded && j.Reason != "" {
				if _, ok := s.FailedByReason[j.Reason]; ok || len(s.FailedByReason) < maxReasons {
					s.FailedByReason[j.Reason]++
				}
			}
		}
	}
	ws, werr := hi.h.Workers(ctx)
	if werr != nil {
		ws = nil // the rings keep what they had
	}
	hi.record(s, ws, werr == nil)
}

// record appends s to the ring (dropping the oldest past historySamples)
// and each worker's new heartbeat to its ring; with complete, a worker
// no longer listed loses its ring.
func (hi *history) record(s fleetSample, ws []persistence.WorkerInfo, complete bool) {
	hi.mu.Lock()
	defer hi.mu.Unlock()
	hi.last = s.T
	if len(hi.ring) == historySamples {
		copy(hi.ring, hi.ring[1:])
		hi.ring = hi.ring[:historySamples-1]
	}
	hi.ring = append(hi.ring, s)
	seen := make(map[string]bool, len(ws))
	for _, w := range ws {
		seen[w.ID] = true
		ring := hi.hbs[w.ID]
		if n := len(ring); n > 0 && !w.LastSeen.After(ring[n-1].T) {
			continue // no heartbeat since the last sample
		}
		if len(ring) == heartbeatSamples {
			copy(ring, ring[1:])
			ring = ring[:heartbeatSamples-1]
		}
		hi.hbs[w.ID] = append(ring, heartbeat{T: w.LastSeen, CPUPct: w.CPUPct, MemPct: w.MemPct, DiskPct: w.DiskPct, InFlight: w.InFlight})
	}
	if !complete {
		return
	}
	for id := range hi.hbs {
		if !seen[id] {
			delete(hi.hbs, id)
		}
	}
}

// StatsHistory implements api.HistorySource.
func (hi *history) StatsHistory(workers bool) (json.RawMessage, error) {
	hi.mu.Lock()
	defer hi.mu.Unlock()
	out := struct {
		IntervalS int                    `json:"interval_s"`
		Samples   []fleetSample          `json:"samples"`
		Workers   map[string][]heartbeat `json:"workers,omitempty"`
	}{IntervalS: int(historyInterval / time.Second), Samples: hi.ring}
	if out.Samples == nil {
		out.Samples = []fleetSample{}
	}
	if workers {
		out.Workers = hi.hbs
	}
	return json.Marshal(out)
}
