package mysql

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"time"

	"github.com/paprika-hub/paprika/persistence"
)

// rollbackTimeout bounds the ROLLBACK that cleans a connection whose
// one-trip transaction failed part way.
const rollbackTimeout = 2 * time.Second

// tryUpdateAndGetOneTrip is tryUpdateAndGet in one round trip: the
// transaction, the conditional UPDATE, its matched-row count, the read
// back and the COMMIT go to the server as one multi-statement query
// (client-side interpolation makes that possible), instead of four
// exchanges. The guarantees are those of the four: the UPDATE's row lock
// holds until the COMMIT, so the job read back is the one this call wrote;
// a lost condition reads the job as it is in the same trip. A failure part
// way leaves the connection rolled back or thrown away, never with an open
// transaction back in the pool.
func (s *JobStore) tryUpdateAndGetOneTrip(ctx context.Context, op, id string, check func(*persistence.Job) error, query string, args ...any) (j persistence.Job, err error) {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return persistence.Job{}, s.fail(ctx, err, "%s job %s: connect", op, id)
	}
	defer func() {
		if err != nil && !errors.Is(err, persistence.ErrConflict) && !errors.Is(err, persistence.ErrNotFound) {
			discardIfOpen(conn)
		}
		_ = conn.Close()
	}()
	stmt := "START TRANSACTION; " + query + "; SELECT ROW_COUNT(); SELECT " + jobColumns + " FROM jobs WHERE id = ?; COMMIT"
	rows, err := conn.QueryContext(ctx, stmt, append(args[:len(args):len(args)], id)...)
	if err != nil {
		return persistence.Job{}, s.fail(ctx, err, "%s job %s", op, id)
	}
	defer rows.Close()
	var matched int64
	if !rows.Next() {
		return persistence.Job{}, s.fail(ctx, rowsErr(rows), "%s job %s: row count", op, id)
	}
	if err := rows.Scan(&matched); err != nil {
		return persistence.Job{}, s.fail(ctx, err, "%s job %s: row count", op, id)
	}
	if !rows.NextResultSet() {
		return persistence.Job{}, s.fail(ctx, rowsErr(rows), "%s job %s: read back", op, id)
	}
	found := rows.Next()
	if found {
		if j, err = scanJob(rows); err != nil {
			return persistence.Job{}, s.fail(ctx, err, "%s job %s: read back", op, id)
		}
	} else if err := rows.Err(); err != nil {
		return persistence.Job{}, s.fail(ctx, err, "%s job %s: read back", op, id)
	}
	// The COMMIT's answer: the last result set.
	for rows.NextResultSet() {
	}
	if err := rows.Err(); err != nil {
		// As in tryUpdateAndGet: the transition may or may not have
		// happened; the caller reads the job again before deciding.
		return persistence.Job{}, s.fail(ctx, err, "%s job %s: commit", op, id)
	}
	switch {
	case matched > 0 && found:
		return j, nil
	case !found:
		return persistence.Job{}, fmt.Errorf("%s job %s: %w", op, id, persistence.ErrNotFound)
	}
	if err := check(&j); err != nil {
		return persistence.Job{}, err
	}
	return persistence.Job{}, fmt.Errorf("%s job %s: changed concurrently: %w", op, id, persistence.ErrConflict)
}

func rowsErr(rows *sql.Rows) error {
	if err := rows.Err(); err != nil {
		return err
	}
	return errors.New("the server answered fewer result sets than statements")
}

// discardIfOpen rolls back whatever transaction the failed trip may have
// left open on conn; when even that fails the connection is marked bad,
// so the pool closes it instead of handing it out again.
func discardIfOpen(conn *sql.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), rollbackTimeout)
	defer cancel()
	if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
		_ = conn.Raw(func(any) error { return driver.ErrBadConn })
	}
}
