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
	// Lane is the name of the lane the worker reserved
	// (chromium://<worker>/lane/<n>), never a browser's DevTools address.
	Lane         string            `json:"lane,omitempty"`
	IdleTimeoutS int               `json:"idle_timeout_s"`
	Labels       map[string]string `json:"labels,omitempty"`
	// State is the session status of the API (SessionOpen for every
	// record a hub writes today: closed sessions are deleted).
	State     string    `json:"state"`
	CreatedAt time.Time `json:"created_at"`
	LastUsed  time.Time `json:"last_used"`
	// Browser is the lane browser's version strings (its /json/version),
	// which the hub's /sessions/{id}/json/version repeats.
	Browser map[string]string `json:"browser,omitempty"`
	// Profile is the profile the session holds (README "Profiles and
	// affinity"), "" for none: a fresh scheduler takes its lock again.
	Profile string `json:"profile,omitempty"`
}

// Session statuses (API.md, the session object). They live here, beside
// the record, so that the Go client shares them as it shares the job
// statuses.
const (
	// SessionOpening: the hub is reserving a lane.
	SessionOpening = "opening"
	// SessionOpen: the lane is reserved and takes commands.
	SessionOpen = "open"
	// SessionClosed: closed by its client, its idle timeout or the loss of
	// its worker; Reason says which.
	SessionClosed = "closed"
)

// SessionListQuery selects one page of SessionStore.List: records in id
// order after Cursor.
type SessionListQuery struct {
	// Limit caps the page: 1..MaxSessionListLimit; 0 means
	// DefaultSessionListLimit.
	Limit int
	// Cursor is the previous page's next cursor (the last id it held);
	// "" starts at the first id.
	Cursor string
}

// Bounds of a SessionStore.List page.
const (
	DefaultSessionListLimit = 50
	MaxSessionListLimit     = 1000
)

// PageLimit is q.Limit within its bounds.
func (q SessionListQuery) PageLimit() int {
	if q.Limit <= 0 {
		return DefaultSessionListLimit
	}
	return min(q.Limit, MaxSessionListLimit)
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
	// List returns the live records with ids after q.Cursor, in id order,
	// at most q.PageLimit() of them, and the cursor of the next page: ""
	// when no record follows. A page may hold fewer records than the
	// limit while next is set (records expire between the index and the
	// read); only next == "" ends a walk.
	List(ctx context.Context, q SessionListQuery) (records []SessionRecord, next string, err error)
}
