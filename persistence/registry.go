package persistence

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// Worker statuses (API.md, PATCH /workers/{id}): the values of
// WorkerInfo.Status, set by an operator. Only an active worker is given
// new jobs. They live beside WorkerInfo, not in the hub's actors, so the
// API and the client SDK (which imports only this package) spell them
// from the same place.
const (
	WorkerActive  = "active"
	WorkerDrain   = "drain"
	WorkerStandby = "standby"
	// WorkerPending is a worker not approved yet (auth.worker_approval):
	// linked and listed, given no work. PATCH status active approves it;
	// PATCH status pending withdraws an approval.
	WorkerPending = "pending"
)

// WorkerStatuses lists every worker status, in the order error messages
// name them.
var WorkerStatuses = []string{WorkerActive, WorkerDrain, WorkerStandby, WorkerPending}

// ValidWorkerStatus reports whether s is one of WorkerStatuses.
func ValidWorkerStatus(s string) bool { return slices.Contains(WorkerStatuses, s) }

// WorkerInfo is one worker as the fleet sees it (API.md, GET /workers).
type WorkerInfo struct {
	ID        string `json:"id"`
	Hub       string `json:"hub"`
	Status    string `json:"status"` // one of WorkerStatuses
	Alive     bool   `json:"alive"`
	Connected bool   `json:"connected"`
	// Leaving: the worker said, on its live link, that it takes no more
	// work (it drains itself or stops); placement passes it over whatever
	// Status says, and its next link clears it.
	Leaving       bool `json:"leaving,omitempty"`
	InFlight      int  `json:"in_flight"`
	MaxConcurrent int  `json:"max_concurrent"` // the slots placement uses: what the worker reports, under the operator's cap
	// ReportedMaxConcurrent is what the worker says it can run.
	ReportedMaxConcurrent int `json:"reported_max_concurrent,omitempty"`
	// MaxConcurrentCap is the operator's cap (PATCH /workers/{id}); 0 = none.
	MaxConcurrentCap int `json:"max_concurrent_cap,omitempty"`
	// Lanes is each lane's state as the worker last reported it; its length
	// is the worker's lane count (hello's lane_urls). State is empty for a
	// worker that does not report states.
	Lanes []LaneStatus `json:"lanes"`
	// BrowserURL is hello's capabilities.browser_url: kept for placement
	// (a worker with a browser but no lanes), never shown (Public).
	BrowserURL string    `json:"browser_url,omitempty"`
	Drivers    []string  `json:"drivers,omitempty"`
	CPUPct     float64   `json:"cpu_pct"`
	MemPct     float64   `json:"mem_pct"`
	DiskPct    float64   `json:"disk_pct"`
	LanIP      string    `json:"lan_ip,omitempty"`
	Version    string    `json:"version,omitempty"`
	Running    []string  `json:"running,omitempty"`
	LastSeen   time.Time `json:"last_seen"`
	// Link is the actor address of the WorkerConn holding the socket
	// ("address/id"), so a restarted worker grain finds it again.
	Link string `json:"link,omitempty"`
	// LinkStarted is when that socket was accepted (unix ns): the newest
	// socket of a worker is its live one.
	LinkStarted int64 `json:"link_started,omitempty"`
	// Reported is what the worker itself last said it runs (heartbeat or
	// hello, results not yet acknowledged included), at ReportedAt; Running
	// is what the hub reserved for it. Operators compare the two.
	Reported   []string  `json:"reported,omitempty"`
	ReportedAt time.Time `json:"reported_at,omitzero"`
	// Modes are the job modes the worker declared in hello; a worker that
	// declares none runs the built-in modes its drivers allow.
	Modes []WorkerMode `json:"modes,omitempty"`

	// ShmFreeMB is /dev/shm's free MiB as last reported (absent when not
	// measured); Skipped is HealthSkipShm while it is under
	// scheduler.min_shm_free_mb (the worker gets no work), else "".
	ShmFreeMB *int64 `json:"shm_free_mb,omitempty"`
	Skipped   string `json:"skipped,omitempty"`
}

// LaneStatus is one lane of a worker in GET /workers.
type LaneStatus struct {
	// Lane is the lane's index on its worker, from 0.
	Lane int `json:"lane"`
	// State is one of messages.LaneStates (idle, job, session,
	// restarting); empty when the worker does not report it.
	State string `json:"state,omitempty"`
	// Health is the lane's browser health as last reported (absent when
	// the worker reports none); Skipped is why placement counts the lane
	// as unavailable (one of HealthSkip*), "" when it does not.
	Health  *LaneHealth `json:"health,omitempty"`
	Skipped string      `json:"skipped,omitempty"`
}

// Public is w as the API shows it: without Link, LinkStarted and
// BrowserURL. The registry needs the link's actor address, but handed out
// it tells anyone who can reach a cluster port where to send a WorkerConn a
// job that exists nowhere; a browser's DevTools address lets whoever can
// reach the worker's machine drive the browser past the hub. The JSON tags
// cannot drop them, the registry stores this JSON.
func (w WorkerInfo) Public() WorkerInfo {
	w.Link, w.LinkStarted, w.BrowserURL = "", 0, ""
	if len(w.Modes) > 0 {
		// Schemas are GET /modes' to show, once per mode rather than once
		// per worker declaring it.
		modes := make([]WorkerMode, len(w.Modes))
		for i, m := range w.Modes {
			modes[i] = WorkerMode{Name: m.Name, Lane: m.Lane}
		}
		w.Modes = modes
	}
	return w
}

// WorkerRegistry is the fleet-wide view of workers: every hub writes the
// workers whose socket it holds; any hub reads all of them.
type WorkerRegistry interface {
	// Put records a worker's state, owned by hubID, expiring after ttl
	// unless refreshed.
	Put(ctx context.Context, w WorkerInfo, ttl time.Duration) error
	// List returns every worker still recorded.
	List(ctx context.Context) ([]WorkerInfo, error)
	// Get returns one worker; ErrNotFound when absent.
	Get(ctx context.Context, id string) (WorkerInfo, error)
	// ClaimID binds a worker id to a LAN IP so two machines cannot share a
	// short id; it returns the IP already bound when another holds it.
	ClaimID(ctx context.Context, id, lanIP string) (holder string, err error)
	// ReleaseOwner clears hubID's ownership of the worker's socket, only if
	// hubID still owns it (compare-and-delete: a late release on one hub
	// must not erase another hub's fresh ownership).
	ReleaseOwner(ctx context.Context, workerID, hubID string) error
}

// HubInfo is one hub as the fleet sees it (API.md, GET /hubs).
type HubInfo struct {
	ID      string `json:"id"`
	Address string `json:"address"`
	// Member is the hub's address in the cluster (its remoting
	// host:port), by which a hub finds the API address of the member that
	// owns a grain; empty in a record of an older hub.
	Member    string    `json:"member,omitempty"`
	Alive     bool      `json:"alive"`
	Local     bool      `json:"local"`
	StartedAt time.Time `json:"started_at"`
	LastSeen  time.Time `json:"last_seen"`
}

// HubRegistry records hub heartbeats.
type HubRegistry interface {
	Beat(ctx context.Context, h HubInfo, ttl time.Duration) error
	// List returns known hubs; those whose heartbeat expired show Alive=false.
	List(ctx context.Context) ([]HubInfo, error)
	Remove(ctx context.Context, id string) error
}

// CheckTTLWrite validates a write that expires (HubRegistry.Beat,
// WorkerRegistry.Put, SessionStore.Put) as every store must, so that all
// of them refuse the same input in the same words: op names the call
// ("put worker"), id the record, and ttl must be positive.
func CheckTTLWrite(op, id string, ttl time.Duration) error {
	if id == "" {
		return fmt.Errorf("%s: empty id", op)
	}
	if ttl <= 0 {
		return fmt.Errorf("%s %s: ttl %s is not positive", op, id, ttl)
	}
	return nil
}
