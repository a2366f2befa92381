package mysql

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"database/sql/driver"
	"encoding/hex"
	"fmt"
	"log/slog"
	"time"
)

// migration is one versioned schema change. MySQL commits DDL implicitly,
// so a migration cannot be rolled back: each statement must be safe to run
// again (IF NOT EXISTS, or a single atomic statement), in case a hub dies
// between the change and its schema_migrations row.
type migration struct {
	version int
	name    string
	stmts   []string
}

// migrations is the schema, oldest first. Append only: a released
// migration is never edited, since hubs that ran it will not run it again.
var migrations = []migration{
	{version: 1, name: "create jobs", stmts: []string{createJobsTable}},
	{version: 2, name: "job priority", stmts: []string{addJobPriority}},
	{version: 3, name: "job retries and run_at", stmts: addJobRetries},
	{version: 4, name: "job tenant", stmts: []string{addJobTenant, addJobTenantIndex}},
	{version: 5, name: "job op token", stmts: []string{addJobOpToken}},
}

// addJobTenant adds persistence.Job.Tenant; rows from before it belong to
// the default tenant "". VARBINARY: a tenant is compared byte for byte, as
// the embedded stores do, and MaxTenantBytes fits an index key.
const addJobTenant = "ALTER TABLE jobs ADD COLUMN IF NOT EXISTS tenant VARBINARY(1024) NOT NULL DEFAULT ''"

// addJobOpToken adds the column a batched transition's UPDATE stamps with
// its own token, so the transaction's one read of the rows tells which
// UPDATEs matched without a SELECT ROW_COUNT() after each (batch_tx.go).
// It is not part of a job: no reader but that one selects it. Adding a
// column at the end with a default is instant on MariaDB (no table copy).
const addJobOpToken = "ALTER TABLE jobs ADD COLUMN IF NOT EXISTS op_token BIGINT UNSIGNED NOT NULL DEFAULT 0"

// addJobTenantIndex serves GET /jobs?tenant= (newest or oldest first, with
// the keyset cursor on created_at, id); a status filter on top walks it.
const addJobTenantIndex = "CREATE INDEX IF NOT EXISTS jobs_tenant_created ON jobs (tenant, created_at, id)"

// addJobPriority adds persistence.Job.Priority. Rows from before it get
// the default priority, as a submission without one does; IF NOT EXISTS
// (MariaDB) makes a re-run after a crash between the change and its
// schema_migrations row harmless.
const addJobPriority = "ALTER TABLE jobs ADD COLUMN IF NOT EXISTS priority TINYINT NOT NULL DEFAULT 5"

// createJobsTable holds exactly the fields of persistence.Job plus
// updated_at (for operators). Indexes:
//   - jobs_status_created serves List with a status filter and the
//     re-drive's "queued, oldest first" in both directions;
//   - jobs_created serves the unfiltered listing;
//   - jobs_idempotency_key makes concurrent creates with one key yield one
//     job (NULL, the usual case, never collides).
const createJobsTable = "CREATE TABLE IF NOT EXISTS jobs (" + `
	id              VARBINARY(64)  NOT NULL,
	mode            VARCHAR(64)    NOT NULL,
	params          LONGTEXT       NULL,
	status          VARCHAR(16)    NOT NULL,
	reason          VARCHAR(64)    NOT NULL DEFAULT '',
	` + "`error`" + `         TEXT           NOT NULL,
	worker_id       VARBINARY(128) NULL,
	lane            VARCHAR(2048)  NOT NULL DEFAULT '',
	attempts        INT            NOT NULL DEFAULT 0,
	max_attempts    INT            NOT NULL DEFAULT 0,
	timeout_s       INT            NOT NULL DEFAULT 0,
	created_at      DATETIME(6)    NOT NULL,
	started_at      DATETIME(6)    NULL,
	finished_at     DATETIME(6)    NULL,
	result          LONGTEXT       NULL,
	assets          LONGTEXT       NULL,
	labels          LONGTEXT       NULL,
	idempotency_key VARBINARY(200) NULL,
	updated_at      DATETIME(6)    NOT NULL,
	PRIMARY KEY (id),
	UNIQUE KEY jobs_idempotency_key (idempotency_key),
	KEY jobs_status_created (status, created_at, id),
	KEY jobs_created (created_at, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`

const createMigrationsTable = `CREATE TABLE IF NOT EXISTS schema_migrations (
	version    INT          NOT NULL PRIMARY KEY,
	name       VARCHAR(200) NOT NULL,
	applied_at DATETIME(6)  NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`

// migrateLockName names the server-wide lock that serializes migrations.
// It carries the database name, so deployments (and tests) sharing one
// server in separate databases do not wait for each other; GET_LOCK names
// are limited to 64 characters, so a long database name is hashed.
func migrateLockName(dbName string) string {
	name := "paprika_migrate." + dbName
	if len(name) > 64 {
		sum := sha256.Sum256([]byte(dbName))
		name = "paprika_migrate." + hex.EncodeToString(sum[:])[:40]
	}
	return name
}

// migrate applies the migrations the database lacks and returns their
// versions. It holds the migration lock on one dedicated connection for the
// whole run (GET_LOCK belongs to a session, so it must be released on the
// connection that took it), which makes hubs that start together apply
// each migration once: the others wait, then find it recorded.
func migrate(ctx context.Context, db *sql.DB, dbName string, lockTimeout time.Duration, log *slog.Logger) (applied []int, err error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	defer conn.Close()

	lock := migrateLockName(dbName)
	var got sql.NullInt64
	secs := int(lockTimeout / time.Second)
	if err := conn.QueryRowContext(ctx, "SELECT GET_LOCK(?, ?)", lock, secs).Scan(&got); err != nil {
		return nil, fmt.Errorf("take lock %s: %w", lock, err)
	}
	if !got.Valid || got.Int64 != 1 {
		return nil, fmt.Errorf("take lock %s: still held by another hub after %ds", lock, secs)
	}
	defer func() {
		// Release even when ctx is done, or the lock lives as long as the
		// pooled connection. If that fails, discard the connection: the
		// server frees a session's locks when it ends.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if _, rerr := conn.ExecContext(rctx, "DO RELEASE_LOCK(?)", lock); rerr != nil {
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
			if err == nil {
				err = fmt.Errorf("release lock %s: %w", lock, rerr)
			}
		}
	}()

	if _, err := conn.ExecContext(ctx, createMigrationsTable); err != nil {
		return nil, fmt.Errorf("create schema_migrations: %w", err)
	}
	done, err := appliedVersions(ctx, conn)
	if err != nil {
		return nil, err
	}
	for _, m := range migrations {
		if done[m.version] {
			continue
		}
		for i, stmt := range m.stmts {
			if _, err := conn.ExecContext(ctx, stmt); err != nil {
				return applied, fmt.Errorf("migration %d (%s), statement %d: %w", m.version, m.name, i+1, err)
			}
		}
		if _, err := conn.ExecContext(ctx,
			"INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, UTC_TIMESTAMP(6))",
			m.version, m.name); err != nil {
			return applied, fmt.Errorf("record migration %d (%s): %w", m.version, m.name, err)
		}
		log.Info("mysql migration applied", "db", dbName, "version", m.version, "name", m.name)
		applied = append(applied, m.version)
	}
	return applied, nil
}

func appliedVersions(ctx context.Context, conn *sql.Conn) (map[int]bool, error) {
	rows, err := conn.QueryContext(ctx, "SELECT version FROM schema_migrations")
	if err != nil {
		return nil, fmt.Errorf("read schema_migrations: %w", err)
	}
	defer rows.Close()
	done := make(map[int]bool)
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			return nil, fmt.Errorf("read schema_migrations: %w", err)
		}
		done[v] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read schema_migrations: %w", err)
	}
	return done, nil
}
