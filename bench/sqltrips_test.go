package main

import (
	"database/sql"
	"strings"
	"testing"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/paprika-hub/paprika/persistence/storetest"
)

// TestSQLTripCounter: through the proxy, a multi-statement query is one
// round trip however many statements it holds, and each further command
// one more; the connection's handshake is not counted, and every answer
// comes back whole.
func TestSQLTripCounter(t *testing.T) {
	dsn := storetest.MySQLDatabase(t)
	cfg, err := gomysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	p, err := startSQLTripCounter(cfg.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	cfg.Addr = p.addr()
	cfg.MultiStatements, cfg.InterpolateParams = true, true
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if err := db.Ping(); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	trips := func(f func()) int64 {
		t.Helper()
		before := p.trips.Load()
		f()
		return p.trips.Load() - before
	}

	n := trips(func() {
		rows, err := db.QueryContext(ctx, "SELECT 1; SELECT ?; SELECT REPEAT('x', 100000)", 2)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var got []string
		for {
			for rows.Next() {
				var v string
				if err := rows.Scan(&v); err != nil {
					t.Fatal(err)
				}
				got = append(got, v)
			}
			if !rows.NextResultSet() {
				break
			}
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		if len(got) != 3 || got[0] != "1" || got[1] != "2" || got[2] != strings.Repeat("x", 100000) {
			t.Fatalf("answers %q…", got[:min(len(got), 2)])
		}
	})
	if n != 1 {
		t.Fatalf("three statements in one query: %d round trips, want 1", n)
	}
	n = trips(func() {
		if _, err := db.ExecContext(ctx, "CREATE TABLE t (v LONGTEXT)"); err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(ctx, "INSERT INTO t VALUES (?)", strings.Repeat("y", 1<<20)); err != nil {
			t.Fatal(err)
		}
	})
	if n != 2 {
		t.Fatalf("two statements sent alone: %d round trips, want 2", n)
	}
}
