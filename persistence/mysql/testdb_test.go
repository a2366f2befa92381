package mysql_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/paprika-hub/paprika/persistence/storetest"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/persistence/mysql"
)

// defaultTestDSN is the server the tests use when PAPRIKA_TEST_MYSQL_DSN is
// unset: a local MariaDB whose root needs no password.
const defaultTestDSN = "root@tcp(127.0.0.1:3306)/"

// testDB is one test's own database.
type testDB struct {
	dsn   string  // the store's DSN, naming the database
	name  string  // the database
	admin *sql.DB // a connection to the database, for checks behind the store's back
}

// newTestDB creates a fresh database paprika_t_<random> on the test server
// and drops it when t ends, so tests never share or drop each other's data.
// An unreachable server skips the test, except under CI=true, where it
// fails it; -short skips it too (make test-short: unit tests only).
func newTestDB(t *testing.T) testDB {
	t.Helper()
	if testing.Short() {
		t.Skip("needs MariaDB; skipped with -short")
	}
	dsn := os.Getenv("PAPRIKA_TEST_MYSQL_DSN")
	if dsn == "" {
		dsn = defaultTestDSN
	}
	cfg, err := gomysql.ParseDSN(dsn)
	require.NoError(t, err, "PAPRIKA_TEST_MYSQL_DSN")
	cfg.Timeout = 2 * time.Second
	cfg.ParseTime = true
	cfg.Loc = time.UTC
	cfg.Logger = &gomysql.NopLogger{}

	server := openDB(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := server.PingContext(ctx); err != nil {
		_ = server.Close()
		storetest.Unavailable(t, fmt.Sprintf("MariaDB at %s (PAPRIKA_TEST_MYSQL_DSN)", cfg.Addr), err)
	}

	var raw [6]byte
	_, _ = rand.Read(raw[:])
	name := "paprika_t_" + hex.EncodeToString(raw[:])
	_, err = server.ExecContext(ctx, "CREATE DATABASE "+name+" CHARACTER SET utf8mb4")
	require.NoError(t, err)

	cfg.DBName = name
	admin := openDB(t, cfg)
	// Cleanups run last-registered first: this one runs after the test's
	// stores are closed.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = admin.Close()
		_, err := server.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name)
		_ = server.Close()
		require.NoError(t, err, "drop test database %s", name)
	})
	return testDB{dsn: cfg.FormatDSN(), name: name, admin: admin}
}

func openDB(t *testing.T, cfg *gomysql.Config) *sql.DB {
	t.Helper()
	connector, err := gomysql.NewConnector(cfg)
	require.NoError(t, err)
	return sql.OpenDB(connector)
}

// queryColumn runs a query of one column on db and returns its values, in
// the order of the rows.
func queryColumn[T any](t *testing.T, db *sql.DB, query string) []T {
	t.Helper()
	rows, err := db.QueryContext(t.Context(), query)
	require.NoError(t, err)
	defer rows.Close() // on a failed check; closing twice is harmless
	var out []T
	for rows.Next() {
		var v T
		require.NoError(t, rows.Scan(&v))
		out = append(out, v)
	}
	require.NoError(t, rows.Err())
	require.NoError(t, rows.Close())
	return out
}

// testMaxOpenConns keeps a test store's pool small, so the suite's
// parallel subtests stay far below the server's max_connections even on a
// machine with many cores (more parallel subtests). The claim race still
// gets one connection per claimer.
const testMaxOpenConns = 10

// openStore opens a store on a fresh database and closes it when t ends.
func openStore(t *testing.T, opts ...mysql.Option) (*mysql.JobStore, testDB) {
	t.Helper()
	db := newTestDB(t)
	opts = append([]mysql.Option{mysql.WithMaxOpenConns(testMaxOpenConns)}, opts...)
	s, err := mysql.Open(t.Context(), db.dsn, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s, db
}
