package redisstore

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/paprika-hub/paprika/persistence"
)

var _ persistence.WorkerRegistry = (*WorkerRegistry)(nil)

// releaseOwnerScript deletes the owner key only if it still names the
// releasing hub (DESIGN.md, recovery layers): a late unregister on hub A
// must not delete hub B's fresh ownership. GET and DEL in one script are
// atomic; two commands from the client would not be.
var releaseOwnerScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
	return redis.call('DEL', KEYS[1])
end
return 0`)

// pruneWorkersScript removes ids from the index (KEYS[1]) whose record
// (KEYS[i+1]) is gone. It checks again inside Redis, so a worker that came
// back between List's read and the prune keeps its index entry.
var pruneWorkersScript = redis.NewScript(`
local n = 0
for i, id in ipairs(ARGV) do
	if redis.call('EXISTS', KEYS[i + 1]) == 0 then
		n = n + redis.call('ZREM', KEYS[1], id)
	end
end
return n`)

// WorkerRegistry is the Redis persistence.WorkerRegistry: one record per
// worker with the heartbeat's TTL, an owner key beside it holding the hub
// id, an index ZSET scored by last_seen, and the id bindings (layout in the
// package doc). It is safe for concurrent use.
//
// WorkerInfo.Hub is not stored in the record: Get and List report the
// owner key, so ReleaseOwner can clear the ownership alone while the rest
// of the record lives out its TTL.
type WorkerRegistry struct {
	client *redis.Client
	keys   keys
	cfg    config
}

// NewWorkerRegistry returns a WorkerRegistry on client. Options:
// WithPrefix, WithLogger.
func NewWorkerRegistry(client *redis.Client, opts ...Option) *WorkerRegistry {
	cfg := newConfig(opts)
	return &WorkerRegistry{client: client, keys: keys{cfg.prefix}, cfg: cfg}
}

// Put records w until ttl passes without another Put, in one MULTI/EXEC:
// the record and the owner key (w.Hub; deleted when empty) with ttl, and
// the index entry scored by w.LastSeen (now when zero).
func (r *WorkerRegistry) Put(ctx context.Context, w persistence.WorkerInfo, ttl time.Duration) error {
	if err := persistence.CheckTTLWrite("put worker", w.ID, ttl); err != nil {
		return err
	}
	hub := w.Hub
	w.Hub = ""
	w.LastSeen = w.LastSeen.UTC()
	rec, err := json.Marshal(w)
	if err != nil {
		return fmt.Errorf("put worker %s: %w", w.ID, err)
	}
	seen := w.LastSeen
	if seen.IsZero() {
		seen = time.Now()
	}
	ttl = max(ttl, time.Millisecond) // PX takes whole milliseconds
	_, err = r.client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, r.keys.worker(w.ID), rec, ttl)
		if hub != "" {
			p.Set(ctx, r.keys.owner(w.ID), hub, ttl)
		} else {
			p.Del(ctx, r.keys.owner(w.ID))
		}
		p.ZAdd(ctx, r.keys.workers(), redis.Z{Score: float64(seen.UnixMilli()), Member: w.ID})
		return nil
	})
	return wrapErr(ctx, "put worker "+w.ID, err)
}

// List returns every worker whose record has not expired, by id: the
// index, then the records and owner keys in one MGET. Ids whose record
// expired are pruned from the index on the way.
func (r *WorkerRegistry) List(ctx context.Context) ([]persistence.WorkerInfo, error) {
	const op = "list workers"
	ids, err := r.client.ZRange(ctx, r.keys.workers(), 0, -1).Result()
	if err != nil {
		return nil, wrapErr(ctx, op, err)
	}
	if len(ids) == 0 {
		return []persistence.WorkerInfo{}, nil
	}
	vals, err := r.client.MGet(ctx, r.recordKeys(ids)...).Result()
	if err != nil {
		return nil, wrapErr(ctx, op, err)
	}
	out := make([]persistence.WorkerInfo, 0, len(ids))
	var gone []string
	for i, id := range ids {
		w, ok, err := decodeWorker(id, vals[i], vals[len(ids)+i])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", op, err)
		}
		if !ok {
			gone = append(gone, id)
			continue
		}
		out = append(out, w)
	}
	if len(gone) > 0 {
		r.prune(ctx, gone)
	}
	slices.SortFunc(out, func(a, b persistence.WorkerInfo) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

// recordKeys returns the record keys of ids, then their owner keys.
func (r *WorkerRegistry) recordKeys(ids []string) []string {
	ks := make([]string, 2*len(ids))
	for i, id := range ids {
		ks[i], ks[len(ids)+i] = r.keys.worker(id), r.keys.owner(id)
	}
	return ks
}

// prune drops expired ids from the index; a failure only leaves them for
// the next List.
func (r *WorkerRegistry) prune(ctx context.Context, ids []string) {
	ks := make([]string, 1, 1+len(ids))
	ks[0] = r.keys.workers()
	argv := make([]any, len(ids))
	for i, id := range ids {
		ks = append(ks, r.keys.worker(id))
		argv[i] = id
	}
	if err := pruneWorkersScript.Run(ctx, r.client, ks, argv...).Err(); err != nil {
		r.cfg.log.Warn("prune worker index", slog.Int("ids", len(ids)), slog.Any("err", err))
	}
}

// Get returns worker id with its owner, or persistence.ErrNotFound when
// its record is absent or expired.
func (r *WorkerRegistry) Get(ctx context.Context, id string) (persistence.WorkerInfo, error) {
	op := "get worker " + id
	vals, err := r.client.MGet(ctx, r.keys.worker(id), r.keys.owner(id)).Result()
	if err != nil {
		return persistence.WorkerInfo{}, wrapErr(ctx, op, err)
	}
	w, ok, err := decodeWorker(id, vals[0], vals[1])
	if err != nil {
		return persistence.WorkerInfo{}, fmt.Errorf("%s: %w", op, err)
	}
	if !ok {
		return persistence.WorkerInfo{}, fmt.Errorf("%s: %w", op, persistence.ErrNotFound)
	}
	return w, nil
}

// decodeWorker builds a WorkerInfo from MGET values of its record and
// owner key; ok is false when the record is missing.
func decodeWorker(id string, rec, owner any) (w persistence.WorkerInfo, ok bool, err error) {
	s, isStr := rec.(string)
	if !isStr {
		return w, false, nil
	}
	if err := json.Unmarshal([]byte(s), &w); err != nil {
		return w, false, fmt.Errorf("decode record of worker %s: %w", id, err)
	}
	w.ID = id
	w.Hub, _ = owner.(string)
	w.LastSeen = w.LastSeen.UTC()
	return w, true, nil
}

// ClaimID binds id to lanIP unless another IP holds it, and returns the IP
// bound after the call — one atomic SET NX GET. Bindings never expire, so
// a worker id survives restarts and self-updates.
func (r *WorkerRegistry) ClaimID(ctx context.Context, id, lanIP string) (string, error) {
	if id == "" || lanIP == "" {
		return "", fmt.Errorf("claim worker id %q for %q: empty id or IP", id, lanIP)
	}
	holder, err := r.client.SetArgs(ctx, r.keys.workerID(id), lanIP, redis.SetArgs{Mode: "NX", Get: true}).Result()
	switch {
	case errors.Is(err, redis.Nil):
		return lanIP, nil // nobody held it: ours now
	case err != nil:
		return "", wrapErr(ctx, fmt.Sprintf("claim worker id %s for %s", id, lanIP), err)
	default:
		return holder, nil
	}
}

// ReleaseOwner deletes the worker's owner key if it still names hubID (a
// compare-and-delete script); otherwise it changes nothing and returns nil.
// The record stays until its TTL, with Hub "".
func (r *WorkerRegistry) ReleaseOwner(ctx context.Context, workerID, hubID string) error {
	if hubID == "" {
		return nil
	}
	err := releaseOwnerScript.Run(ctx, r.client, []string{r.keys.owner(workerID)}, hubID).Err()
	return wrapErr(ctx, fmt.Sprintf("release worker %s from hub %s", workerID, hubID), err)
}
