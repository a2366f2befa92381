package redisstore

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// An approval is one key under the prefix that never expires: it must
// outlive the worker's registry record, whose TTL lapses while it is away.
func TestApprovalKeyLayout(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	tb := setup(t)
	s := NewApprovalStore(tb.client, WithPrefix(tb.prefix))
	require.NoError(t, s.Approve(ctx, "w50150"))
	k := tb.prefix + "approved:w50150"
	_, err := time.Parse(time.RFC3339, tb.client.Get(ctx, k).Val())
	require.NoError(t, err, "the value is the approval time")
	require.Equal(t, time.Duration(-1), tb.client.PTTL(ctx, k).Val(), "approvals do not expire")
	require.NoError(t, s.Revoke(ctx, "w50150"))
	require.Zero(t, tb.client.Exists(ctx, k).Val())
}
