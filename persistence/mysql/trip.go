package mysql

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"time"
)

// rollbackTimeout bounds the ROLLBACK that cleans a connection whose
// one-trip transaction failed part way.
const rollbackTimeout = 2 * time.Second

// rowsErr is why a multi-statement trip (batch_tx.go) answered fewer
// result sets than it had statements.
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
