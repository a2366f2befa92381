package mysql

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/paprika-hub/paprika/persistence"
)

// Server error numbers this package branches on.
const (
	erDupEntry                 = 1062 // ER_DUP_ENTRY
	erLockDeadlock             = 1213 // ER_LOCK_DEADLOCK
	erCheckRead                = 1020 // ER_CHECKREAD: MariaDB's innodb_snapshot_isolation
	erUnknownCom               = 1047 // Galera: node not ready ("WSREP has not yet prepared node")
	erConCount                 = 1040 // ER_CON_COUNT_ERROR: too many connections
	erServerShutdown           = 1053 // ER_SERVER_SHUTDOWN
	erHostIsBlocked            = 1129 // ER_HOST_IS_BLOCKED
	erTooManyUserConnections   = 1203 // ER_TOO_MANY_USER_CONNECTIONS
	erOptionPreventsStatement  = 1290 // ER_OPTION_PREVENTS_STATEMENT: --read-only, e.g. mid-failover
	erReadOnlyMode             = 1836 // ER_READ_ONLY_MODE
	erConnectionKilled         = 1927 // ER_CONNECTION_KILLED (MariaDB)
	erClientInteractionTimeout = 4031 // MySQL 8: disconnected for inactivity
)

// unavailable reports whether err means the database cannot be reached or
// cannot serve writes now, so the caller may retry later (HTTP 503): the
// connection failed or broke, or the server refuses service while it
// starts, stops or fails over.
func unavailable(err error) bool {
	if errors.Is(err, driver.ErrBadConn) || errors.Is(err, gomysql.ErrInvalidConn) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
		return true
	}
	var netErr net.Error
	if errors.As(err, &netErr) {
		return true
	}
	switch serverErrorNumber(err) {
	case erUnknownCom, erConCount, erServerShutdown, erHostIsBlocked, erTooManyUserConnections,
		erOptionPreventsStatement, erReadOnlyMode, erConnectionKilled, erClientInteractionTimeout:
		return true
	}
	return false
}

// retryable reports whether err rolled back a whole transaction that may
// simply be run again.
func retryable(err error) bool {
	n := serverErrorNumber(err)
	return n == erLockDeadlock || n == erCheckRead
}

// serverErrorNumber is the server's error number in err, or 0.
func serverErrorNumber(err error) uint16 {
	var me *gomysql.MySQLError
	if errors.As(err, &me) {
		return me.Number
	}
	return 0
}

// fail puts err in the context of what failed. A cancelled call keeps its
// context error; a connection failure, or any failure after Close, also
// wraps persistence.ErrUnavailable.
func (s *JobStore) fail(ctx context.Context, err error, format string, args ...any) error {
	what := fmt.Sprintf(format, args...)
	if ctx.Err() == nil && (s.closed.Load() || unavailable(err)) {
		return fmt.Errorf("%s: mysql %s: %w: %w", what, s.where, persistence.ErrUnavailable, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// errClosed is the cause of every call after Close.
var errClosed = errors.New("job store closed")
