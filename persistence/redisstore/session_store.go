package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/paprika-hub/paprika/persistence"
)

var _ persistence.SessionStore = (*SessionStore)(nil)

// pruneSessionsScript removes ids from the session index (KEYS[1]) whose
// record (KEYS[i+1]) is gone. It checks again inside Redis, so a session
// written between List's read and the prune keeps its index entry.
var pruneSessionsScript = redis.NewScript(`
local n = 0
for i, id in ipairs(ARGV) do
	if redis.call('EXISTS', KEYS[i + 1]) == 0 then
		n = n + redis.call('ZREM', KEYS[1], id)
	end
end
return n`)

// sessionListRounds bounds the index reads of one List: a page whose
// records expired under it is topped up from further on at most this many
// times, then returned short with its cursor.
const sessionListRounds = 3

// SessionStore is the Redis persistence.SessionStore: one string key per
// session holding its record as JSON, with the caller's TTL, and an index
// of the ids for List (layout in the package doc). It is safe for
// concurrent use.
//
// The index is a ZSET whose members all score 0, so Redis orders them by
// id and List pages with ZRANGEBYLEX from the cursor. A record that
// expired leaves its id in the index until a List finds the record gone
// and prunes it; records of sessions that end are deleted with their id.
type SessionStore struct {
	client *redis.Client
	keys   keys
	cfg    config
}

// NewSessionStore returns a SessionStore on client. Options: WithPrefix,
// WithLogger.
func NewSessionStore(client *redis.Client, opts ...Option) *SessionStore {
	cfg := newConfig(opts)
	return &SessionStore{client: client, keys: keys{cfg.prefix}, cfg: cfg}
}

// Put writes r with ttl (SET PX) and indexes its id, in one MULTI/EXEC,
// replacing any record of r.ID.
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
	_, err = s.client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, s.keys.session(r.ID), rec, ttl)
		p.ZAdd(ctx, s.keys.sessions(), redis.Z{Member: r.ID})
		return nil
	})
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
	r, err := decodeSession(id, b)
	if err != nil {
		return persistence.SessionRecord{}, fmt.Errorf("%s: %w", op, err)
	}
	return r, nil
}

func decodeSession(id string, b []byte) (persistence.SessionRecord, error) {
	var r persistence.SessionRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return persistence.SessionRecord{}, fmt.Errorf("decode record: %w", err)
	}
	r.ID = id
	r.CreatedAt, r.LastUsed = persistence.UTC(r.CreatedAt), persistence.UTC(r.LastUsed)
	return r, nil
}

// Delete removes the record of id and its index entry (DEL and ZREM in
// one MULTI/EXEC; an absent key is no error).
func (s *SessionStore) Delete(ctx context.Context, id string) error {
	_, err := s.client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Del(ctx, s.keys.session(id))
		p.ZRem(ctx, s.keys.sessions(), id)
		return nil
	})
	return wrapErr(ctx, "delete session "+id, err)
}

// List reads a page of the index after q.Cursor (ZRANGEBYLEX, one more id
// than it needs, to know whether more follow), then those records (MGET):
// two round trips, plus a prune of ids whose record expired, and a few
// more rounds only when expired records left the page short.
func (s *SessionStore) List(ctx context.Context, q persistence.SessionListQuery) ([]persistence.SessionRecord, string, error) {
	const op = "list sessions"
	limit := q.PageLimit()
	out := make([]persistence.SessionRecord, 0, min(limit, 64))
	cursor := q.Cursor
	for range sessionListRounds {
		want := limit - len(out)
		lo := "-"
		if cursor != "" {
			lo = "(" + cursor
		}
		ids, err := s.client.ZRangeByLex(ctx, s.keys.sessions(), &redis.ZRangeBy{Min: lo, Max: "+", Count: int64(want) + 1}).Result()
		if err != nil {
			return nil, "", wrapErr(ctx, op, err)
		}
		more := len(ids) > want
		if more {
			ids = ids[:want]
		}
		if len(ids) == 0 {
			return out, "", nil
		}
		ks := make([]string, len(ids))
		for i, id := range ids {
			ks[i] = s.keys.session(id)
		}
		vals, err := s.client.MGet(ctx, ks...).Result()
		if err != nil {
			return nil, "", wrapErr(ctx, op, err)
		}
		var gone []string
		for i, v := range vals {
			str, ok := v.(string)
			if !ok {
				gone = append(gone, ids[i])
				continue
			}
			r, err := decodeSession(ids[i], []byte(str))
			if err != nil {
				return nil, "", fmt.Errorf("%s: session %s: %w", op, ids[i], err)
			}
			out = append(out, r)
		}
		if len(gone) > 0 {
			s.prune(ctx, gone)
		}
		cursor = ids[len(ids)-1]
		if !more {
			return out, "", nil
		}
		if len(out) == limit {
			return out, cursor, nil
		}
	}
	return out, cursor, nil
}

// prune drops ids whose record expired from the index; a failure only
// leaves them for the next List.
func (s *SessionStore) prune(ctx context.Context, ids []string) {
	ks := make([]string, 1, 1+len(ids))
	ks[0] = s.keys.sessions()
	argv := make([]any, len(ids))
	for i, id := range ids {
		ks = append(ks, s.keys.session(id))
		argv[i] = id
	}
	if err := pruneSessionsScript.Run(ctx, s.client, ks, argv...).Err(); err != nil {
		s.cfg.log.Warn("prune session index", slog.Int("ids", len(ids)), slog.Any("err", err))
	}
}
