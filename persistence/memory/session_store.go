package memory

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/paprika-hub/paprika/persistence"
)

var _ persistence.SessionStore = (*SessionStore)(nil)

// sessionSweepEvery is how often a Put also forgets every expired record:
// Get forgets the one it reads, but a session nobody asks for again would
// otherwise stay in memory for the life of the hub.
const sessionSweepEvery = time.Minute

// SessionStore is an in-memory persistence.SessionStore, the embedded
// mode's: one hub, so a record only has to outlive a restart of the
// session grain, not of the process.
type SessionStore struct {
	mu        sync.Mutex
	sessions  leases[persistence.SessionRecord]
	lastSweep time.Time
}

// NewSessionStore returns an empty SessionStore.
func NewSessionStore() *SessionStore {
	return &SessionStore{sessions: make(leases[persistence.SessionRecord]), lastSweep: time.Now()}
}

// Put records r until ttl passes without another Put.
func (s *SessionStore) Put(ctx context.Context, r persistence.SessionRecord, ttl time.Duration) error {
	if err := checkTTLWrite(ctx, "put session", r.ID, ttl); err != nil {
		return err
	}
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if now.Sub(s.lastSweep) >= sessionSweepEvery {
		s.lastSweep = now
		s.sessions.sweep(now)
	}
	s.sessions.put(r.ID, cloneSession(r), now, ttl)
	return nil
}

// Get returns the record of id, or persistence.ErrNotFound when absent or
// expired.
func (s *SessionStore) Get(ctx context.Context, id string) (persistence.SessionRecord, error) {
	if err := ctx.Err(); err != nil {
		return persistence.SessionRecord{}, fmt.Errorf("get session %s: %w", id, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.sessions.live(id, time.Now())
	if !ok {
		return persistence.SessionRecord{}, fmt.Errorf("get session %s: %w", id, persistence.ErrNotFound)
	}
	return cloneSession(e.val), nil
}

// Delete forgets the record of id, if any.
func (s *SessionStore) Delete(ctx context.Context, id string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("delete session %s: %w", id, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.sessions, id)
	return nil
}

// List returns a page of the live records in id order (see
// persistence.SessionStore.List); next is set only when more follow.
func (s *SessionStore) List(ctx context.Context, q persistence.SessionListQuery) ([]persistence.SessionRecord, string, error) {
	if err := ctx.Err(); err != nil {
		return nil, "", fmt.Errorf("list sessions: %w", err)
	}
	limit := q.PageLimit()
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]string, 0, len(s.sessions))
	for id, e := range s.sessions {
		if id > q.Cursor && e.alive(now) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	next := ""
	if len(ids) > limit {
		ids = ids[:limit]
		next = ids[limit-1]
	}
	out := make([]persistence.SessionRecord, len(ids))
	for i, id := range ids {
		out[i] = cloneSession(s.sessions[id].val)
	}
	return out, next, nil
}

func cloneSession(r persistence.SessionRecord) persistence.SessionRecord {
	r.Labels = maps.Clone(r.Labels)
	r.CreatedAt, r.LastUsed = persistence.UTC(r.CreatedAt), persistence.UTC(r.LastUsed)
	return r
}
