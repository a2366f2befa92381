package redisstore

import (
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/persistence"
	"github.com/paprika-hub/paprika/persistence/storetest"
)

// The worker keys are where the package doc says, and the owner key is
// what Get reports as Hub.
func TestWorkerKeyLayout(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	tb := setup(t)
	c, p := tb.client, tb.prefix
	r := NewWorkerRegistry(c, WithPrefix(p))
	seen := time.UnixMilli(1_760_000_000_123)
	w := persistence.WorkerInfo{ID: "w1", Hub: "hub-a", MaxConcurrent: 2, LastSeen: seen}
	require.NoError(t, r.Put(ctx, w, time.Minute))

	require.Equal(t, "hub-a", c.Get(ctx, p+"worker:w1:owner").Val())
	require.NotContains(t, c.Get(ctx, p+"worker:w1").Val(), "hub-a", "the record leaves Hub to the owner key")
	require.Equal(t, float64(seen.UnixMilli()), c.ZScore(ctx, p+"workers", "w1").Val())
	for _, k := range []string{"worker:w1", "worker:w1:owner"} {
		require.InDelta(t, time.Minute.Seconds(), c.PTTL(ctx, p+k).Val().Seconds(), 5, k)
	}

	// The owner key alone decides Hub.
	require.NoError(t, c.Set(ctx, p+"worker:w1:owner", "hub-b", time.Minute).Err())
	got, err := r.Get(ctx, "w1")
	require.NoError(t, err)
	require.Equal(t, "hub-b", got.Hub)

	// A Put without a hub clears the ownership, as it replaces the record.
	w.Hub = ""
	require.NoError(t, r.Put(ctx, w, time.Minute))
	got, err = r.Get(ctx, "w1")
	require.NoError(t, err)
	require.Empty(t, got.Hub)
	require.Zero(t, c.Exists(ctx, p+"worker:w1:owner").Val())

	holder, err := r.ClaimID(ctx, "w50150", "10.10.50.150")
	require.NoError(t, err)
	require.Equal(t, "10.10.50.150", holder)
	require.Equal(t, "10.10.50.150", c.Get(ctx, p+"workerid:w50150").Val())
	require.Equal(t, time.Duration(-1), c.PTTL(ctx, p+"workerid:w50150").Val(), "id bindings do not expire")
}

// List drops the index entries of expired workers.
func TestWorkerListPrunesIndex(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	tb := setup(t)
	r := NewWorkerRegistry(tb.client, WithPrefix(tb.prefix))
	require.NoError(t, r.Put(ctx, persistence.WorkerInfo{ID: "stays"}, time.Minute))
	require.NoError(t, r.Put(ctx, persistence.WorkerInfo{ID: "goes"}, 20*time.Millisecond))
	storetest.WaitFor(t, "the record to expire", func() bool {
		_, err := r.Get(ctx, "goes")
		return errors.Is(err, persistence.ErrNotFound)
	})
	require.EqualValues(t, 2, tb.client.ZCard(ctx, tb.prefix+"workers").Val())
	list, err := r.List(ctx)
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.Equal(t, []string{"stays"}, tb.client.ZRange(ctx, tb.prefix+"workers", 0, -1).Val())
}

// The hub keys are where the package doc says; a hub dead for longer than
// the history is pruned by List, a recently dead one is kept.
func TestHubKeyLayoutAndPrune(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	tb := setup(t)
	c, p := tb.client, tb.prefix
	r := NewHubRegistry(c, WithPrefix(p), WithHubHistory(time.Hour))
	require.NoError(t, r.Beat(ctx, persistence.HubInfo{ID: "live", Address: "a:1"}, time.Minute))
	require.NoError(t, r.Beat(ctx, persistence.HubInfo{ID: "recent", Address: "b:1"}, time.Millisecond))
	require.NoError(t, r.Beat(ctx, persistence.HubInfo{ID: "old", Address: "c:1"}, time.Millisecond))
	require.InDelta(t, time.Minute.Seconds(), c.PTTL(ctx, p+"hub:live").Val().Seconds(), 5)
	require.Contains(t, c.HGet(ctx, p+"hubs:info", "live").Val(), `"a:1"`)
	storetest.WaitFor(t, "the short beats to expire", func() bool {
		return c.Exists(ctx, p+"hub:recent", p+"hub:old").Val() == 0
	})
	// "old" last beat two hours ago.
	old := float64(time.Now().Add(-2 * time.Hour).UnixMilli())
	require.NoError(t, c.ZAdd(ctx, p+"hubs", redis.Z{Score: old, Member: "old"}).Err())

	list, err := r.List(ctx)
	require.NoError(t, err)
	require.Len(t, list, 2)
	require.Equal(t, "live", list[0].ID)
	require.True(t, list[0].Alive)
	require.Equal(t, "recent", list[1].ID)
	require.False(t, list[1].Alive)
	require.Equal(t, "b:1", list[1].Address)
	require.Equal(t, []string{"live", "recent"}, c.ZRange(ctx, p+"hubs", 0, -1).Val())
	require.Zero(t, c.HExists(ctx, p+"hubs:info", "old").Val())
}
