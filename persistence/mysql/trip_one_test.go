package mysql

import (
	"slices"
	"strings"
	"testing"
	"time"

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
	query, args, tokens, counted, _ := tripOne(cond, []string{"a", "b", "c"}, false, 42)
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
	query, args, tokens, counted, _ = tripOne(cond, []string{"a", "b", "c"}, true, 7)
	require.Equal(t, []bool{true, true, true, false}, counted)
	require.Equal(t, 3, strings.Count(query, "; SELECT ROW_COUNT()"))
	require.Equal(t, 1, strings.Count(query, "op_token = ?"))
	require.NotZero(t, tokens[3])
	require.Equal(t, []any{"0", "a", 1, "x", 1, tokens[3], "w", "t", "c", "a", "b", "c"}, args)
	require.True(t, strings.HasSuffix(query, " FOR UPDATE"))
}

// TestTripOneMergesARunOfOneTransition: stamped UPDATEs of one query on
// distinct jobs, next to each other in id order, go as one statement; a
// value all of them share is written once, the others by CASE id; a job
// with two UPDATEs, and a run of one, go as before.
func TestTripOneMergesARunOfOneTransition(t *testing.T) {
	req := func(id, query string, args ...any) *txCall {
		return &txCall{req: txReq{id: id, query: query, args: args}}
	}
	at := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	fin := func(id, status, lane string) *txCall {
		return req(id, finishFromSQL, status, "", "", lane, at, nil, nil, "[]", id, 1, "w1", lane, at)
	}
	cond := []*txCall{
		req("a", claimSQL, "w1", at, "a"),
		req("b", claimSQL, "w2", at, "b"),
		req("c", claimSQL, "w3", at.Add(time.Second), "c"),
		fin("d", "succeeded", "0"),
		fin("e", "failed", "1"),
		req("f", setLaneSQL, "0", "f", 1),
		fin("f", "succeeded", "0"),
		req("g", setLaneSQL, "1", "g", 2),
	}
	query, args, tokens, counted, merged := tripOne(cond, []string{"a", "b", "c", "d", "e", "f", "g"}, false, 42)
	require.Equal(t, 5, merged, "a, b, c in one statement; d, e in another")
	require.Equal(t, []bool{false, false, false, false, false, true, true, false}, counted)
	require.Equal(t, strings.Count(query, "?"), len(args))

	stmts := strings.Split(query, "; ")
	require.Equal(t, "START TRANSACTION", stmts[0])
	require.Equal(t, "UPDATE jobs FORCE INDEX (PRIMARY) SET op_token = CASE id WHEN ? THEN ? WHEN ? THEN ? WHEN ? THEN ? END, "+
		"status = 'running', worker_id = CASE id WHEN ? THEN ? WHEN ? THEN ? WHEN ? THEN ? END, attempts = attempts + 1, "+
		"started_at = CASE id WHEN ? THEN ? WHEN ? THEN ? WHEN ? THEN ? END, lane = '', updated_at = UTC_TIMESTAMP(6) "+
		"WHERE id IN (?, ?, ?) AND status = 'queued' AND worker_id IS NULL", stmts[1])
	claimArgs := []any{"a", tokens[0], "b", tokens[1], "c", tokens[2],
		"a", "w1", "b", "w2", "c", "w3",
		"a", at, "b", at, "c", at.Add(time.Second),
		"a", "b", "c"}
	require.Equal(t, claimArgs, args[:len(claimArgs)])

	// The ends share their reason, error, finished_at, result, assets,
	// attempts log, attempt, worker and started_at: written once. Their
	// status and lane differ, in the SET list and in the fence.
	require.Equal(t, "UPDATE jobs FORCE INDEX (PRIMARY) SET op_token = CASE id WHEN ? THEN ? WHEN ? THEN ? END, "+
		"status = CASE id WHEN ? THEN ? WHEN ? THEN ? END, reason = ?, `error` = ?, lane = CASE id WHEN ? THEN ? WHEN ? THEN ? END, "+
		"finished_at = ?, result = ?, assets = ?, attempts_log = ?, updated_at = UTC_TIMESTAMP(6) "+
		"WHERE id IN (?, ?) AND status = 'running' AND attempts = ? AND worker_id = ? AND started_at = ? "+
		"AND CASE id WHEN ? THEN (lane = ?) WHEN ? THEN (lane = ?) END", stmts[2])
	rest := args[len(claimArgs):]
	finArgs := []any{"d", tokens[3], "e", tokens[4], "d", "succeeded", "e", "failed", "", "", "d", "0", "e", "1",
		at, nil, nil, "[]", "d", "e", 1, "w1", at, "d", "0", "e", "1"}
	require.Equal(t, finArgs, rest[:len(finArgs)])

	// f's two go counted, as written; g, alone of its query, as before.
	require.Equal(t, setLaneSQL, stmts[3])
	require.Equal(t, "SELECT ROW_COUNT()", stmts[4])
	require.Equal(t, finishFromSQL, stmts[5])
	require.Equal(t, "SELECT ROW_COUNT()", stmts[6])
	require.Equal(t, updateJobsSet+"op_token = ?, "+strings.TrimPrefix(setLaneSQL, updateJobsSet), stmts[7])
	require.Equal(t, append(append([]any{"0", "f", 1}, cond[6].req.args...), tokens[7], "1", "g", 2, "a", "b", "c", "d", "e", "f", "g"), rest[len(finArgs):])
	stamped := slices.Concat(tokens[:5], tokens[7:])
	require.NotContains(t, stamped, uint64(0))
	require.Len(t, slices.Compact(slices.Sorted(slices.Values(stamped))), len(stamped), "tokens distinct")
}

// TestTripOneMergesOnlyWholeArguments: a transition whose arguments are
// not the ones its UPDATE takes goes alone, as written (the server then
// refuses it), instead of being cut into a merged statement.
func TestTripOneMergesOnlyWholeArguments(t *testing.T) {
	req := func(id string, args ...any) *txCall {
		return &txCall{req: txReq{id: id, query: claimSQL, args: args}}
	}
	cond := []*txCall{req("a", "w1", "t", "a"), req("b", "w1", "b"), req("c", "w1", "t", "c")}
	query, _, _, _, merged := tripOne(cond, []string{"a", "b", "c"}, false, 1)
	require.Zero(t, merged)
	require.Equal(t, 3, strings.Count(query, updateJobsSet+"op_token = ?, "))
}

// TestMergeShapes: every mergeable transition's UPDATE is taken apart
// with its id condition found and every argument placed; a query of
// another form is refused, so it goes as written.
func TestMergeShapes(t *testing.T) {
	for q, sh := range mergeable {
		require.Equal(t, strings.Count(q, "?"), sh.nargs, q)
		require.GreaterOrEqual(t, sh.id, 0, q)
		seen := map[int]bool{sh.id: true}
		for _, p := range append(slices.Clone(sh.sets), sh.conds...) {
			if p.arg >= 0 {
				require.False(t, seen[p.arg], q)
				seen[p.arg] = true
			}
		}
		require.Len(t, seen, sh.nargs, q)
	}
	for _, q := range []string{
		"UPDATE other SET x = ? WHERE id = ?",
		"UPDATE jobs SET x = ? WHERE status = ?",
		"UPDATE jobs SET x = x + ? WHERE id = ?",
		"UPDATE jobs SET x = ? WHERE id = ? OR y = ?",
		"UPDATE jobs SET x = ? WHERE id = ? AND id = ?",
		"UPDATE jobs SET x = ? WHERE id = ? AND y = (SELECT 1 WHERE z = ?)",
		"UPDATE jobs SET x = ? WHERE id = ? AND y = 1 OR z = 2",
	} {
		_, err := parseShape(q)
		require.Error(t, err, q)
	}
}

// TestSameValue: values are the same only with one type and one value (a
// time by its instant); a type the driver's writing is not known for is
// never the same, which only costs a CASE.
func TestSameValue(t *testing.T) {
	at := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		a, b any
		same bool
	}{
		{nil, nil, true}, {nil, "", false}, {"x", "x", true}, {"x", "y", false},
		{1, 1, true}, {1, int64(1), false}, {int64(2), int64(2), true}, {uint64(3), uint64(3), true},
		{true, true, true}, {true, false, false},
		{at, at.In(time.FixedZone("x", 3600)), true}, {at, at.Add(1), false},
		{[]byte("x"), []byte("x"), false}, {1.5, 1.5, false},
	} {
		require.Equal(t, c.same, sameValue(c.a, c.b), "%#v %#v", c.a, c.b)
	}
}
