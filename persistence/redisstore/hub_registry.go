package redisstore

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/paprika-hub/paprika/persistence"
)

var _ persistence.HubRegistry = (*HubRegistry)(nil)

// pruneHubsScript forgets hubs dead since before ARGV[1] (Unix ms):
// KEYS[1] the index, KEYS[2] the info hash, KEYS[i+2] the liveness key of
// ARGV[i]. It checks score and key again inside Redis, so a hub that beat
// between List's read and the prune stays.
var pruneHubsScript = redis.NewScript(`
local n = 0
local cutoff = tonumber(ARGV[1])
for i = 2, #ARGV do
	local s = redis.call('ZSCORE', KEYS[1], ARGV[i])
	if s and tonumber(s) < cutoff and redis.call('EXISTS', KEYS[i + 1]) == 0 then
		redis.call('ZREM', KEYS[1], ARGV[i])
		redis.call('HDEL', KEYS[2], ARGV[i])
		n = n + 1
	end
end
return n`)

// HubRegistry is the Redis persistence.HubRegistry. A beat writes, in one
// MULTI/EXEC, the liveness key <p>hub:<id> with the heartbeat's TTL (90 s in
// the hub), the index ZSET <p>hubs scored by the beat's time, and the
// record into the hash <p>hubs:info, which outlives the TTL: a hub whose
// key expired stays listed with Alive=false ("recently dead" in the admin
// view) until Remove or until it has been dead WithHubHistory long. It is
// safe for concurrent use.
type HubRegistry struct {
	client *redis.Client
	keys   keys
	cfg    config
}

// NewHubRegistry returns a HubRegistry on client. Options: WithPrefix,
// WithHubHistory, WithLogger.
func NewHubRegistry(client *redis.Client, opts ...Option) *HubRegistry {
	cfg := newConfig(opts)
	return &HubRegistry{client: client, keys: keys{cfg.prefix}, cfg: cfg}
}

// Beat records h as alive for ttl. A zero LastSeen is set to now. Alive and
// Local are not stored: List computes Alive, and Local depends on who asks.
func (r *HubRegistry) Beat(ctx context.Context, h persistence.HubInfo, ttl time.Duration) error {
	if err := persistence.CheckTTLWrite("beat hub", h.ID, ttl); err != nil {
		return err
	}
	now := time.Now()
	if h.LastSeen.IsZero() {
		h.LastSeen = now
	}
	h.LastSeen, h.StartedAt = h.LastSeen.UTC(), h.StartedAt.UTC()
	h.Alive, h.Local = false, false
	rec, err := json.Marshal(h)
	if err != nil {
		return fmt.Errorf("beat hub %s: %w", h.ID, err)
	}
	ttl = max(ttl, time.Millisecond) // PX takes whole milliseconds
	_, err = r.client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, r.keys.hub(h.ID), rec, ttl)
		p.HSet(ctx, r.keys.hubsInfo(), h.ID, rec)
		p.ZAdd(ctx, r.keys.hubs(), redis.Z{Score: float64(now.UnixMilli()), Member: h.ID})
		return nil
	})
	return wrapErr(ctx, "beat hub "+h.ID, err)
}

// List returns every hub of the index, by id, Alive when its liveness key
// exists; Local is always false. Hubs dead for longer than the history are
// pruned on the way.
func (r *HubRegistry) List(ctx context.Context) ([]persistence.HubInfo, error) {
	const op = "list hubs"
	index, err := r.client.ZRangeWithScores(ctx, r.keys.hubs(), 0, -1).Result()
	if err != nil {
		return nil, wrapErr(ctx, op, err)
	}
	if len(index) == 0 {
		return []persistence.HubInfo{}, nil
	}
	ids := make([]string, len(index))
	live := make([]string, len(index))
	for i, z := range index {
		ids[i], _ = z.Member.(string)
		live[i] = r.keys.hub(ids[i])
	}
	pipe := r.client.Pipeline()
	alive := pipe.MGet(ctx, live...)
	infos := pipe.HMGet(ctx, r.keys.hubsInfo(), ids...)
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, wrapErr(ctx, op, err)
	}
	cutoff := float64(time.Now().Add(-r.cfg.hubHistory).UnixMilli())
	out := make([]persistence.HubInfo, 0, len(ids))
	var stale []string
	for i, id := range ids {
		liveRec, isAlive := alive.Val()[i].(string)
		rec, ok := infos.Val()[i].(string)
		if !ok {
			rec, ok = liveRec, isAlive
		}
		if !isAlive && (!ok || index[i].Score < cutoff) {
			// Dead for longer than the history, or removed meanwhile.
			stale = append(stale, id)
			continue
		}
		var h persistence.HubInfo
		if err := json.Unmarshal([]byte(rec), &h); err != nil {
			return nil, fmt.Errorf("%s: decode record of hub %s: %w", op, id, err)
		}
		h.ID, h.Alive, h.Local = id, isAlive, false
		h.LastSeen, h.StartedAt = h.LastSeen.UTC(), h.StartedAt.UTC()
		out = append(out, h)
	}
	if len(stale) > 0 {
		r.prune(ctx, stale, cutoff)
	}
	slices.SortFunc(out, func(a, b persistence.HubInfo) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

// prune forgets hubs dead since before cutoff; a failure only leaves them
// for the next List.
func (r *HubRegistry) prune(ctx context.Context, ids []string, cutoff float64) {
	ks := make([]string, 2, 2+len(ids))
	ks[0], ks[1] = r.keys.hubs(), r.keys.hubsInfo()
	argv := make([]any, 1, 1+len(ids))
	argv[0] = strconv.FormatFloat(cutoff, 'f', 0, 64)
	for _, id := range ids {
		ks = append(ks, r.keys.hub(id))
		argv = append(argv, id)
	}
	if err := pruneHubsScript.Run(ctx, r.client, ks, argv...).Err(); err != nil {
		r.cfg.log.Warn("prune hub index", slog.Int("ids", len(ids)), slog.Any("err", err))
	}
}

// Remove forgets hub id (liveness key, index entry and record) in one
// MULTI/EXEC; removing an unknown hub is not an error.
func (r *HubRegistry) Remove(ctx context.Context, id string) error {
	_, err := r.client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Del(ctx, r.keys.hub(id))
		p.ZRem(ctx, r.keys.hubs(), id)
		p.HDel(ctx, r.keys.hubsInfo(), id)
		return nil
	})
	return wrapErr(ctx, "remove hub "+id, err)
}
