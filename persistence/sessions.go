package persistence

import (
	"context"
	"time"
)

// SessionRecord is what an interactive session (API.md, /sessions) keeps
// outside its grain, so that the session outlives the hub holding the
// grain: a re-activation on another hub loads it and carries on with the
// same worker and lane.
type SessionRecord struct {
	ID       string `json:"id"`
	WorkerID string `json:"worker_id"`
	// Lane is the lane URL the worker reserved; DevtoolsURL the lane's live
	// browser address when the worker reports one.
	Lane         string            `json:"lane,omitempty"`
	DevtoolsURL  string            `json:"devtools_url,omitempty"`
	IdleTimeoutS int               `json:"idle_timeout_s"`
	Labels       map[string]string `json:"labels,omitempty"`
	// State is the session status of the API ("open" for every record a
	// hub writes today: closed sessions are deleted).
	State     string    `json:"state"`
	CreatedAt time.Time `json:"created_at"`
	LastUsed  time.Time `json:"last_used"`
	// Browser is the lane browser's version strings (its /json/version),
	// which the hub's /sessions/{id}/json/version repeats.
	Browser map[string]string `json:"browser,omitempty"`
}

// SessionStore keeps session records, keyed by session id, each with a TTL
// so that the record of a session nobody closes disappears on its own.
type SessionStore interface {
	// Put writes r, replacing any record of r.ID, and (re)sets its expiry
	// to ttl from now.
	Put(ctx context.Context, r SessionRecord, ttl time.Duration) error
	// Get returns the record of id; ErrNotFound when absent or expired.
	Get(ctx context.Context, id string) (SessionRecord, error)
	// Delete removes the record of id; deleting an absent one is not an
	// error.
	Delete(ctx context.Context, id string) error
}
