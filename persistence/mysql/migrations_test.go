package mysql_test

import (
	"context"
	"database/sql"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/persistence"
	"github.com/paprika-hub/paprika/persistence/mysql"
	"github.com/paprika-hub/paprika/persistence/storetest"
)

// recorder is a slog.Handler that keeps the versions of the "migration
// applied" records, from every store that logs to it.
type recorder struct {
	mu       sync.Mutex
	versions []int64
}

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *recorder) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *recorder) WithGroup(string) slog.Handler            { return r }

func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	if rec.Message != "mysql migration applied" {
		return nil
	}
	rec.Attrs(func(a slog.Attr) bool {
		if a.Key == "version" {
			r.mu.Lock()
			r.versions = append(r.versions, a.Value.Int64())
			r.mu.Unlock()
		}
		return true
	})
	return nil
}

func (r *recorder) applied() []int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]int64(nil), r.versions...)
}

// schemaVersions reads schema_migrations, in version order.
func schemaVersions(t *testing.T, db *sql.DB) []int64 {
	t.Helper()
	return queryColumn[int64](t, db, "SELECT version FROM schema_migrations ORDER BY version")
}

func allVersions() []int64 { return mysql.MigrationVersions() }

// TestMigrateConcurrent: four hubs starting at once on one fresh database
// all open it, and each migration is applied exactly once.
func TestMigrateConcurrent(t *testing.T) {
	t.Parallel()
	db := newTestDB(t)
	rec := &recorder{}

	const hubs = 4
	stores, errs := storetest.AtOnce(hubs, func(int) (*mysql.JobStore, error) {
		return mysql.Open(t.Context(), db.dsn, mysql.WithLogger(slog.New(rec)))
	})
	for i := range hubs {
		require.NoError(t, errs[i], "hub %d", i)
		defer func() { require.NoError(t, stores[i].Close()) }()
	}

	require.Equal(t, allVersions(), rec.applied(), "each migration applied by exactly one hub")
	require.Equal(t, allVersions(), schemaVersions(t, db.admin))

	// Every hub works on the shared schema: one creates, the others see it.
	j, _, err := stores[0].Create(t.Context(), persistence.Job{Mode: "noop"})
	require.NoError(t, err)
	for _, s := range stores[1:] {
		_, err := s.Get(t.Context(), j.ID)
		require.NoError(t, err)
	}
}

// TestMigrateIdempotent: reopening a migrated database applies nothing and
// keeps the jobs.
func TestMigrateIdempotent(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := newTestDB(t)
	rec := &recorder{}

	s, err := mysql.Open(ctx, db.dsn, mysql.WithLogger(slog.New(rec)))
	require.NoError(t, err)
	j, _, err := s.Create(ctx, persistence.Job{Mode: "noop", IdempotencyKey: "k"})
	require.NoError(t, err)
	require.NoError(t, s.Close())
	require.Equal(t, allVersions(), rec.applied())

	s, err = mysql.Open(ctx, db.dsn, mysql.WithLogger(slog.New(rec)))
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	require.Equal(t, allVersions(), rec.applied(), "nothing applied twice")
	require.Equal(t, allVersions(), schemaVersions(t, db.admin))
	again, created, err := s.Create(ctx, persistence.Job{Mode: "noop", IdempotencyKey: "k"})
	require.NoError(t, err)
	require.False(t, created)
	require.Equal(t, j, again)
}

// TestMigrateLockHeld: while another session holds the migration lock (a
// hub stuck mid-migration), Open gives up after its lock timeout with a
// clear error instead of migrating alongside it.
func TestMigrateLockHeld(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := newTestDB(t)

	conn, err := db.admin.Conn(ctx)
	require.NoError(t, err)
	defer conn.Close()
	lock := mysql.MigrateLockName(db.name)
	var got int
	require.NoError(t, conn.QueryRowContext(ctx, "SELECT GET_LOCK(?, 0)", lock).Scan(&got))
	require.Equal(t, 1, got)

	began := time.Now()
	_, err = mysql.Open(ctx, db.dsn, mysql.WithMigrateLockTimeout(time.Second))
	require.ErrorContains(t, err, "still held by another hub")
	require.NotErrorIs(t, err, persistence.ErrUnavailable)
	require.Less(t, time.Since(began), 10*time.Second)

	_, err = conn.ExecContext(ctx, "DO RELEASE_LOCK(?)", lock)
	require.NoError(t, err)
	s, err := mysql.Open(ctx, db.dsn)
	require.NoError(t, err)
	require.NoError(t, s.Close())
}

func TestMigrateLockName(t *testing.T) {
	t.Parallel()
	require.Equal(t, "paprika_migrate.paprika", mysql.MigrateLockName("paprika"))
	long := mysql.MigrateLockName("d234567890123456789012345678901234567890123456789012345678901234")
	require.Len(t, long, len("paprika_migrate.")+40)
	require.NotEqual(t, long, mysql.MigrateLockName("e234567890123456789012345678901234567890123456789012345678901234"))
}

// TestMigratePriorityKeepsOldRows: a database a hub left at migration 1
// (no priority column) with a queued job in it gains the column; the old
// job reads as the default priority, and the statement is safe to run
// again (a hub dying before recording it).
func TestMigratePriorityKeepsOldRows(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, db := openOldDatabase(t, 1, persistence.StatusQueued)
	j, err := s.Get(ctx, "old-1")
	require.NoError(t, err)
	require.Equal(t, persistence.DefaultPriority, j.Priority)
	_, err = db.admin.ExecContext(ctx, mysql.AddJobPriority)
	require.NoError(t, err, "run again")
	nine, _, err := s.Create(ctx, persistence.Job{Mode: "noop", Priority: 9})
	require.NoError(t, err)
	got, err := s.Get(ctx, nine.ID)
	require.NoError(t, err)
	require.Equal(t, 9, got.Priority)
}

// TestMigrateTenantKeepsOldRows: a database at migration 2 (no tenant
// column) with a job in it gains the column and its index; the old job
// belongs to the default tenant, a filter on it finds the job, and both
// statements are safe to run again.
func TestMigrateTenantKeepsOldRows(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, db := openOldDatabase(t, 2, persistence.StatusQueued)
	j, err := s.Get(ctx, "old-1")
	require.NoError(t, err)
	require.Empty(t, j.Tenant)
	for _, stmt := range []string{mysql.AddJobTenant, mysql.AddJobTenantIndex} {
		_, err = db.admin.ExecContext(ctx, stmt)
		require.NoError(t, err, "run again: %s", stmt)
	}
	acme, _, err := s.Create(ctx, persistence.Job{Mode: "noop", Tenant: "acme"})
	require.NoError(t, err)
	for tenant, want := range map[string]string{"": "old-1", "acme": acme.ID} {
		page, _, err := s.List(ctx, persistence.ListQuery{HasTenant: true, Tenant: tenant})
		require.NoError(t, err)
		require.Len(t, page, 1)
		require.Equal(t, want, page[0].ID)
	}
}

// openOldDatabase makes a database a hub left at migration upTo (1 or 2)
// with one job old-1 of status in it, then opens the store on it, which
// migrates it to the latest version.
func openOldDatabase(t *testing.T, upTo int, status persistence.Status) (*mysql.JobStore, testDB) {
	t.Helper()
	db := newTestDB(t)
	stmts := []string{mysql.CreateMigrationsTable, mysql.CreateJobsTableV1}
	applied := "(1, 'create jobs', UTC_TIMESTAMP(6))"
	if upTo >= 2 {
		stmts = append(stmts, mysql.AddJobPriority)
		applied += ", (2, 'job priority', UTC_TIMESTAMP(6))"
	}
	stmts = append(stmts, "INSERT INTO schema_migrations (version, name, applied_at) VALUES "+applied,
		"INSERT INTO jobs (id, mode, status, `error`, created_at, updated_at) VALUES ('old-1', 'noop', '"+string(status)+"', '', UTC_TIMESTAMP(6), UTC_TIMESTAMP(6))")
	for _, stmt := range stmts {
		_, err := db.admin.ExecContext(t.Context(), stmt)
		require.NoError(t, err, stmt)
	}
	s, err := mysql.Open(t.Context(), db.dsn)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	require.Equal(t, allVersions(), schemaVersions(t, db.admin))
	return s, db
}
