package redisstore

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/persistence"
)

// The session key is where the package doc says, under the prefix, with
// the TTL of the last Put; Delete removes it.
func TestSessionKeyLayout(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	tb := setup(t)
	c, p := tb.client, tb.prefix
	s := NewSessionStore(c, WithPrefix(p))
	r := persistence.SessionRecord{ID: "s-1", WorkerID: "w1", Lane: "ws://l/0", IdleTimeoutS: 60, State: "open"}
	require.NoError(t, s.Put(ctx, r, 90*time.Second))
	require.Contains(t, c.Get(ctx, p+"session:s-1").Val(), `"worker_id":"w1"`)
	require.InDelta(t, 90, c.PTTL(ctx, p+"session:s-1").Val().Seconds(), 5)

	require.Equal(t, []string{"s-1"}, c.ZRange(ctx, p+"sessions", 0, -1).Val(), "the List index")

	require.NoError(t, s.Delete(ctx, "s-1"))
	require.Zero(t, c.Exists(ctx, p+"session:s-1").Val())
	require.Zero(t, c.Exists(ctx, p+"sessions").Val(), "Delete leaves no index entry")
}

// A record that expires leaves its id in the index until a List finds the
// record gone and prunes it.
func TestSessionListPrunesExpired(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	tb := setup(t)
	c, p := tb.client, tb.prefix
	s := NewSessionStore(c, WithPrefix(p))
	r := persistence.SessionRecord{ID: "s-1", WorkerID: "w1", IdleTimeoutS: 60, State: "open"}
	require.NoError(t, s.Put(ctx, r, 50*time.Millisecond))
	r.ID = "s-2"
	require.NoError(t, s.Put(ctx, r, time.Minute))
	require.Eventually(t, func() bool { return c.Exists(ctx, p+"session:s-1").Val() == 0 }, 5*time.Second, 10*time.Millisecond)
	require.Equal(t, []string{"s-1", "s-2"}, c.ZRange(ctx, p+"sessions", 0, -1).Val())

	recs, next, err := s.List(ctx, persistence.SessionListQuery{})
	require.NoError(t, err)
	require.Empty(t, next)
	require.Len(t, recs, 1)
	require.Equal(t, "s-2", recs[0].ID)
	require.Equal(t, []string{"s-2"}, c.ZRange(ctx, p+"sessions", 0, -1).Val(), "pruned")
}
