// Package mysql is the JobStore on MariaDB or MySQL (database/sql with
// github.com/go-sql-driver/mysql): the store a clustered deployment names
// with a DSN in config.yaml, where every hub shares one jobs table and the
// conditional UPDATE is the claim of record (DESIGN.md, "Recovery layers").
//
// # Transitions
//
// Each transition is one conditional UPDATE whose WHERE clause is the
// transition's condition, so two hubs (or a hub and a stale worker) racing
// on one job cannot both win: InnoDB re-evaluates the WHERE clause on the
// latest committed row after waiting for the row lock. The claim is
//
//	UPDATE jobs SET status='running', worker_id=?, attempts=attempts+1, ...
//	WHERE id=? AND status='queued' AND worker_id IS NULL
//
// and the others fence on status and attempt the same way. When an UPDATE
// matches no row the store reads the job once to tell a missing job
// (persistence.ErrNotFound) from a lost condition (persistence.ErrConflict)
// and runs the shared state machine (persistence.Apply*) on it, so the
// error says the same thing as the embedded stores'. Claim and
// Finish, which return the job, run the UPDATE and the read back in one
// transaction: the row lock taken by the UPDATE keeps any other writer out
// until the job is read. Nothing is ever half-written.
//
// # Batching
//
// With client-side interpolation (the default, see below) the store sends
// many jobs' calls per round trip, as River's batch completer does
// (batch.go): a call that finds fewer than two trips of its kind in flight
// goes at once; calls arriving meanwhile wait for one and go together in
// the next.
// Transitions of a batch share one transaction (batch_tx.go): START
// TRANSACTION, each conditional UPDATE stamping its own op_token (the
// read tells which matched, see tripOne), one read of every job of the
// batch and COMMIT, all one multi-statement trip; the transitions computed from their row (Finish, Requeue and the
// retry ones, which write the attempts log) read the rows FOR UPDATE in
// that trip and write them back with the COMMIT in a second. Reads of a
// batch are one SELECT … WHERE id IN, creates one multi-row INSERT. Each
// caller still gets its own answer — its own condition, fence and error —
// and only after the COMMIT that made it durable; a trip that fails fails
// every call in it, after which a caller reads the job again as for any
// lost answer, and a statement the server refuses for one call's sake
// sends each call of the batch again alone. A caller whose context ends
// before its call left the queue is taken out, and nothing it asked
// happens. On a busy hub this is about 1.3 round trips and 7 statements
// per job instead of 9 and 13.
//
// The connection is opened with clientFoundRows, so RowsAffected counts
// matched rows: a SetLane that writes the lane already stored still wins.
//
// # Schema
//
// Open applies the versioned migrations of migrations.go under a
// server-wide named lock (GET_LOCK) held on one dedicated connection, and
// records each in schema_migrations, so hubs starting together apply each
// migration exactly once. Identifiers (id, worker_id, idempotency_key) are
// VARBINARY: compared byte by byte like Go strings, without the case folding
// or trailing-space padding of text collations. Times are DATETIME(6) in
// UTC, truncated to the microsecond before they are written, so a job read
// back equals the job that was returned.
//
// # Errors
//
// A connection that cannot be made or is lost (refused, reset, timed out,
// server shutting down, read-only during a failover, too many connections)
// is wrapped as persistence.ErrUnavailable, which the API answers with 503
// and Retry-After; so is every call after Close.
//
// The DSN is the driver's (user:pass@tcp(host:3306)/db?param=value). Open
// forces parseTime=true, loc=UTC, clientFoundRows=true and
// rejectReadOnly=true, and sets a 5 s dial timeout when the DSN sets none.
// interpolateParams=true (and with it multiStatements) is set unless the
// DSN names interpolateParams, charset or collation; without it every call
// goes alone, as prepared statements.
package mysql
