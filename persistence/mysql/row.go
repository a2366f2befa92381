package mysql

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/paprika-hub/paprika/persistence"
)

// jobColumns names every column a job is read from, in scanJob's order.
// Queries name their columns: a later migration that adds one changes
// nothing here.
const jobColumns = "id, mode, params, status, reason, `error`, worker_id, lane, attempts, max_attempts, " +
	"timeout_s, created_at, started_at, finished_at, result, assets, labels, idempotency_key, priority, tenant, " +
	"run_at, retry_backoff, attempts_log"

// Column limits, checked before a write so a caller gets a clear error
// instead of the server's (or, without strict mode, a silently cut value).
// Lengths are in bytes, which never undercounts characters.
const (
	maxIDLen       = 64
	maxWorkerIDLen = 128
	maxKeyLen      = 200
	maxModeLen     = 64
	maxReasonLen   = 64
	maxLaneLen     = 2048
	maxErrorLen    = 65535 // TEXT
)

// truncatedMark ends an error message cut to fit its column.
const truncatedMark = " …[truncated]"

// rowScanner is *sql.Row or *sql.Rows.
type rowScanner interface {
	Scan(dest ...any) error
}

// scanJob reads one row of jobColumns.
func scanJob(sc rowScanner) (persistence.Job, error) { return newJobScanner(nil).scan(sc) }

// jobScanner reads rows of jobColumns, followed by one more column when
// made with one, into fields of its own: a query's rows share them.
// Scan's destinations escape to the heap, so reading a row into locals
// cost an allocation per field and one for the list of them, per row.
type jobScanner struct {
	j                              persistence.Job
	status                         string
	params, result, assets, labels []byte
	workerID, key                  sql.NullString
	started, finished              sql.NullTime
	retry                          retryColumns
	destArr                        [24]any
	dest                           []any
}

// newJobScanner makes a scanner whose rows end with the column more
// points at (nil: jobColumns alone).
func newJobScanner(more any) *jobScanner {
	s := &jobScanner{}
	s.destArr = [24]any{&s.j.ID, &s.j.Mode, &s.params, &s.status, &s.j.Reason, &s.j.Error, &s.workerID, &s.j.Lane,
		&s.j.Attempts, &s.j.MaxAttempts, &s.j.TimeoutS, &s.j.CreatedAt, &s.started, &s.finished,
		&s.result, &s.assets, &s.labels, &s.key, &s.j.Priority, &s.j.Tenant, &s.retry.runAt, &s.retry.backoff,
		&s.retry.log, more}
	s.dest = s.destArr[:]
	if more == nil {
		s.dest = s.dest[:len(s.dest)-1]
	}
	return s
}

// scan reads the next row: the job (a value of its own: no field of it is
// shared with the scanner's next row) and, when the scanner has one, the
// more column.
func (s *jobScanner) scan(sc rowScanner) (persistence.Job, error) {
	// Every destination is written by each row; the fields of s.j that
	// are not destinations are never written, so they stay zero.
	if err := sc.Scan(s.dest...); err != nil {
		return persistence.Job{}, err
	}
	j := s.j
	if err := s.retry.decode(&j); err != nil {
		return persistence.Job{}, err
	}
	j.Status = persistence.Status(s.status)
	j.WorkerID = s.workerID.String
	j.IdempotencyKey = s.key.String
	j.CreatedAt = persistence.UTC(j.CreatedAt)
	if s.started.Valid {
		j.StartedAt = persistence.UTC(s.started.Time)
	}
	if s.finished.Valid {
		j.FinishedAt = persistence.UTC(s.finished.Time)
	}
	// Scan gave each []byte a copy of its own (not sql.RawBytes).
	if s.params != nil {
		j.Params = json.RawMessage(s.params)
	}
	if s.result != nil {
		j.Result = json.RawMessage(s.result)
	}
	if s.assets != nil {
		if err := json.Unmarshal(s.assets, &j.Assets); err != nil {
			return persistence.Job{}, fmt.Errorf("job %s: decode assets: %w", j.ID, err)
		}
	}
	if s.labels != nil {
		if err := json.Unmarshal(s.labels, &j.Labels); err != nil {
			return persistence.Job{}, fmt.Errorf("job %s: decode labels: %w", j.ID, err)
		}
	}
	return j, nil
}

// checkNew checks a prepared job (persistence.PrepareNew) against the column
// limits.
func checkNew(j *persistence.Job) error {
	for _, c := range []struct {
		field, value string
		max          int
	}{
		{"id", j.ID, maxIDLen},
		{"idempotency_key", j.IdempotencyKey, maxKeyLen},
		{"mode", j.Mode, maxModeLen},
		{"reason", j.Reason, maxReasonLen},
		{"lane", j.Lane, maxLaneLen},
	} {
		if len(c.value) > c.max {
			return fmt.Errorf("create job %.64s: %s is %d bytes, at most %d", j.ID, c.field, len(c.value), c.max)
		}
	}
	for _, t := range []time.Time{j.CreatedAt, j.StartedAt, j.FinishedAt} {
		// The cursor carries created_at as Unix nanoseconds, and DATETIME
		// holds years 1000..9999; both hold 1678..2262.
		if !t.IsZero() && (t.Year() < 1678 || t.Year() > 2261) {
			return fmt.Errorf("create job %s: time %s outside 1678..2261", j.ID, t)
		}
	}
	return nil
}

// micro is t as stored: UTC, truncated to the microsecond of DATETIME(6).
// Truncating before the write makes the job a call returns equal the job a
// later read returns (the server would round or truncate by its sql_mode).
func micro(t time.Time) time.Time {
	return persistence.UTC(t).Truncate(time.Microsecond)
}

// clipError cuts an error message to its TEXT column at a rune boundary. A
// Finish must not fail because a worker sent a long message: the job would
// stay running until its deadline.
func clipError(s string) string {
	if len(s) <= maxErrorLen {
		return s
	}
	cut := maxErrorLen - len(truncatedMark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + truncatedMark
}

// nullString stores "" as NULL (worker_id and idempotency_key: NULL is
// "none", and NULLs never collide in a unique index).
func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// nullTime stores the zero time ("not yet") as NULL.
func nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}

// nullJSON stores an empty document as NULL.
func nullJSON(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return string(b)
}

// encodeJSON stores an empty slice or map as NULL, anything else as JSON.
func encodeJSON(v any, empty bool) (any, error) {
	if empty {
		return nil, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return string(b), nil
}
