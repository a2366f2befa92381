// Package bolt is the embedded JobStore: jobs in one bbolt file (by default
// ./data/jobs.db), so a single hub runs without MariaDB and keeps its jobs
// across restarts. The embedded ApprovalStore (auth.worker_approval) keeps
// the approved worker ids in a file of its own (./data/approvals.db,
// bucket approvals: id → approval time), so approvals survive a restart
// whichever job store the hub uses.
//
// Layout (all keys are bytes; ts is created_at as big-endian Unix
// nanoseconds with the sign bit flipped, so byte order is time order):
//
//	jobs        id                   → job record (codec.go; older files' JSON still read)
//	by_status   status ‖ 0 ‖ ts ‖ id  → empty   (every job once, listing order per status)
//	idempotency key                  → id
//
// A listing of every status merges the status ranges (one cursor each),
// so creating a job writes one index entry, not two; the by_created index
// of older files is dropped at open.
//
// Every transition reads, checks and writes inside one bbolt Update
// transaction; bbolt runs one writer at a time, so a conditional transition
// cannot interleave with another. The state machine itself is the one
// every store shares (persistence.Apply*).
package bolt
