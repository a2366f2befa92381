package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/paprika-hub/paprika/persistence"
)

var _ persistence.SessionStore = (*SessionStore)(nil)

// SessionStore is the Redis persistence.SessionStore: one string key per
// session holding its record as JSON, with the caller's TTL (layout in the
// package doc). Every operation is one command. It is safe for concurrent
// use.
type SessionStore struct {
	client *redis.Client
	keys   keys
}

// NewSessionStore returns a SessionStore on client. Options: WithPrefix.
func NewSessionStore(client *redis.Client, opts ...Option) *SessionStore {
	cfg := newConfig(opts)
	return &SessionStore{client: client, keys: keys{cfg.prefix}}
}

// Put writes r with ttl (SET PX), replacing any record of r.ID.
func (s *SessionStore) Put(ctx context.Context, r persistence.SessionRecord, ttl time.Duration) error {
	if err := persistence.CheckTTLWrite("put session", r.ID, ttl); err != nil {
		return err
	}
	r.CreatedAt, r.LastUsed = persistence.UTC(r.CreatedAt), persistence.UTC(r.LastUsed)
	rec, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("put session %s: %w", r.ID, err)
	}
	ttl = max(ttl, time.Millisecond) // PX takes whole milliseconds
	err = s.client.Set(ctx, s.keys.session(r.ID), rec, ttl).Err()
	return wrapErr(ctx, "put session "+r.ID, err)
}

// Get returns the record of id, or persistence.ErrNotFound when its key is
// absent or expired.
func (s *SessionStore) Get(ctx context.Context, id string) (persistence.SessionRecord, error) {
	op := "get session " + id
	b, err := s.client.Get(ctx, s.keys.session(id)).Bytes()
	switch {
	case errors.Is(err, redis.Nil):
		return persistence.SessionRecord{}, fmt.Errorf("%s: %w", op, persistence.ErrNotFound)
	case err != nil:
		return persistence.SessionRecord{}, wrapErr(ctx, op, err)
	}
	var r persistence.SessionRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return persistence.SessionRecord{}, fmt.Errorf("%s: decode record: %w", op, err)
	}
	r.ID = id
	r.CreatedAt, r.LastUsed = persistence.UTC(r.CreatedAt), persistence.UTC(r.LastUsed)
	return r, nil
}

// Delete removes the record of id (DEL; an absent key is no error).
func (s *SessionStore) Delete(ctx context.Context, id string) error {
	return wrapErr(ctx, "delete session "+id, s.client.Del(ctx, s.keys.session(id)).Err())
}
