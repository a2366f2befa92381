package mysql

import (
	"strings"
	"time"

	"github.com/paprika-hub/paprika/persistence"
)

// Internals the external tests need.
var (
	MigrateLockName = migrateLockName
	MigrationCount  = len(migrations)
)

// MigrationVersions lists the migrations' versions in order (they need not
// be contiguous: helpers take numbers in parallel).
func MigrationVersions() []int64 {
	out := make([]int64, len(migrations))
	for i, m := range migrations {
		out[i] = int64(m.version)
	}
	return out
}

// The schema of migration 1, and the migrations table, for a database as a
// hub before priorities left it.
const (
	CreateJobsTableV1     = createJobsTable
	CreateMigrationsTable = createMigrationsTable
	AddJobPriority        = addJobPriority
	AddJobTenant          = addJobTenant
	AddJobTenantIndex     = addJobTenantIndex
)

// TruncatedMark ends an error message cut to fit its column.
const TruncatedMark = truncatedMark

// Trips counts the batched round trips of s so far: transitions, reads,
// creates.
func Trips(s *JobStore) (txs, gets, creates int64) {
	return s.txs.trips.Load(), s.gets.trips.Load(), s.creates.trips.Load()
}

// TxRoundTrips counts the round trips of s's batched transactions so far.
func TxRoundTrips(s *JobStore) int64 { return s.txRoundTrips.Load() }

// PendingTxs is how many transitions wait for a trip in s now.
func PendingTxs(s *JobStore) int {
	s.txs.mu.Lock()
	defer s.txs.mu.Unlock()
	return len(s.txs.pending)
}

// MergedRows counts the transitions s wrote by a merged UPDATE so far.
func MergedRows(s *JobStore) int64 { return s.mergedRows.Load() }

// NeverSlow keeps every trip of s's transitions alone on the wire however
// long it takes (see slowTrip). Call it before s is used.
func NeverSlow(s *JobStore) { s.txs.slow = time.Hour }

// TxsInFlight is how many trips of s's transitions are on the wire now.
func TxsInFlight(s *JobStore) int {
	s.txs.mu.Lock()
	defer s.txs.mu.Unlock()
	return s.txs.inFlight()
}

// MergedUpdate is the one UPDATE a trip sends for query's transitions on
// ids (args[i] is ids[i]'s arguments, as the store passes them), with
// tokens 1, 3, 5…
func MergedUpdate(query string, ids []string, args [][]any) (string, []any) {
	run := make([]*txCall, len(ids))
	tokens := make([]uint64, len(ids))
	for i, id := range ids {
		run[i] = &txCall{req: txReq{id: id, query: query, args: args[i]}}
		tokens[i] = uint64(2*i + 1)
	}
	var q strings.Builder
	out := writeMerged(&q, nil, mergeable[query], run, tokens)
	return q.String(), out
}

// FinishFromSQL is the conditional UPDATE of an end computed from the
// caller's copy; FinishFromArgs its arguments.
const FinishFromSQL = finishFromSQL

// FinishFromArgs are FinishFromSQL's arguments for ending from (running
// at attempt 1) as succeeded at at.
func FinishFromArgs(from *persistence.Job, at time.Time) []any {
	return append([]any{"succeeded", "", "", from.Lane, at, nil, nil, nil}, fromArgs(from.ID, 1, from)...)
}
