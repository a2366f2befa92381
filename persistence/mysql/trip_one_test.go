package mysql

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTripOneStampsInsteadOfCounting: each conditional UPDATE of a
// distinct job stamps its own token and needs no ROW_COUNT(); two on one
// job (the later would overwrite the earlier's token) are counted.
func TestTripOneStampsInsteadOfCounting(t *testing.T) {
	req := func(id, query string, args ...any) *txCall {
		return &txCall{req: txReq{id: id, query: query, args: args}}
	}
	cond := []*txCall{
		req("a", claimSQL, "w", "t", "a"),
		req("b", setLaneSQL, "0", "b", 1),
		req("c", claimSQL, "w", "t", "c"),
	}
	query, args, tokens, counted := tripOne(cond, []string{"a", "b", "c"}, false, 42)
	require.NotContains(t, query, "ROW_COUNT()")
	require.Equal(t, 3, strings.Count(query, updateJobsSet+"op_token = ?, "))
	require.Equal(t, []bool{false, false, false}, counted)
	require.Len(t, tokens, 3)
	seen := map[uint64]bool{}
	for _, tok := range tokens {
		require.NotZero(t, tok)
		require.False(t, seen[tok], "tokens are distinct within a trip")
		seen[tok] = true
	}
	// Each UPDATE's arguments follow its token; then the ids read.
	require.Equal(t, []any{tokens[0], "w", "t", "a", tokens[1], "0", "b", 1, tokens[2], "w", "t", "c", "a", "b", "c"}, args)
	require.Equal(t, strings.Count(query, "?"), len(args))
	require.True(t, strings.HasSuffix(query, "; COMMIT"))

	// A job with two conditional UPDATEs (in the order they came) and a
	// query that is not an UPDATE of jobs are counted; the others stamped.
	cond = []*txCall{
		req("a", setLaneSQL, "0", "a", 1),
		req("a", finishFromSQL, "x"),
		req("b", "UPDATE other SET x = ?", 1),
		req("c", claimSQL, "w", "t", "c"),
	}
	query, args, tokens, counted = tripOne(cond, []string{"a", "b", "c"}, true, 7)
	require.Equal(t, []bool{true, true, true, false}, counted)
	require.Equal(t, 3, strings.Count(query, "; SELECT ROW_COUNT()"))
	require.Equal(t, 1, strings.Count(query, "op_token = ?"))
	require.NotZero(t, tokens[3])
	require.Equal(t, []any{"0", "a", 1, "x", 1, tokens[3], "w", "t", "c", "a", "b", "c"}, args)
	require.True(t, strings.HasSuffix(query, " FOR UPDATE"))
}
