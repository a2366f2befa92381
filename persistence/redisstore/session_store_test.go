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

	require.NoError(t, s.Delete(ctx, "s-1"))
	require.Zero(t, c.Exists(ctx, p+"session:s-1").Val())
}
