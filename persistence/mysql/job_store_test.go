package mysql_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // the loc= of TestOpenForcesDSNParams on a machine without zoneinfo

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/persistence"
	"github.com/paprika-hub/paprika/persistence/mysql"
	"github.com/paprika-hub/paprika/persistence/storetest"
)

// TestJobStore runs the conformance suite, its 8×1,000 claim race
// included, each subtest on its own database.
func TestJobStore(t *testing.T) {
	t.Parallel()
	storetest.RunJobStore(t, func(t *testing.T) persistence.JobStore {
		s, _ := openStore(t)
		return s
	})
}

// TestJobStoreGroupWait: the conformance suite with trips that wait for
// company (WithGroupWait).
func TestJobStoreGroupWait(t *testing.T) {
	t.Parallel()
	storetest.RunJobStore(t, func(t *testing.T) persistence.JobStore {
		s, _ := openStore(t, mysql.WithGroupWait(time.Millisecond))
		return s
	})
}

// TestSetLaneSameLane: writing the lane already stored changes no column
// but still wins (clientFoundRows), instead of looking like a lost fence.
func TestSetLaneSameLane(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, _ := openStore(t)
	j, _, err := s.Create(ctx, persistence.Job{Mode: "noop"})
	require.NoError(t, err)
	_, err = s.Claim(ctx, j.ID, "w1", time.Now())
	require.NoError(t, err)
	require.NoError(t, s.SetLane(ctx, j.ID, 1, "lane-1"))
	require.NoError(t, s.SetLane(ctx, j.ID, 1, "lane-1"))
}

// TestClosedIsUnavailable: every call after Close is ErrUnavailable.
func TestClosedIsUnavailable(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := newTestDB(t)
	s, err := mysql.Open(ctx, db.dsn)
	require.NoError(t, err)
	j, _, err := s.Create(ctx, persistence.Job{Mode: "noop"})
	require.NoError(t, err)
	require.NoError(t, s.Close())

	_, err = s.Get(ctx, j.ID)
	require.ErrorIs(t, err, persistence.ErrUnavailable)
	_, _, err = s.Create(ctx, persistence.Job{Mode: "noop"})
	require.ErrorIs(t, err, persistence.ErrUnavailable)
	_, err = s.Claim(ctx, j.ID, "w1", time.Now())
	require.ErrorIs(t, err, persistence.ErrUnavailable)
	_, _, err = s.List(ctx, persistence.ListQuery{})
	require.ErrorIs(t, err, persistence.ErrUnavailable)
	require.ErrorIs(t, s.Ping(ctx), persistence.ErrUnavailable)
	require.NoError(t, s.Close())
}

// TestOpenForcesDSNParams: a DSN asking for unparsed times in another zone
// still stores and returns UTC time.Time values.
func TestOpenForcesDSNParams(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := newTestDB(t)
	sep := "?"
	if strings.Contains(db.dsn, "?") {
		sep = "&"
	}
	s, err := mysql.Open(ctx, db.dsn+sep+"parseTime=false&loc=Asia%2FKolkata&clientFoundRows=false")
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()

	at := time.Date(2026, 1, 2, 3, 4, 5, 678_901_234, time.FixedZone("X", -7*3600))
	j, _, err := s.Create(ctx, persistence.Job{Mode: "noop", CreatedAt: at})
	require.NoError(t, err)
	got, err := s.Get(ctx, j.ID)
	require.NoError(t, err)
	require.Equal(t, time.UTC, got.CreatedAt.Location())
	require.True(t, at.Truncate(time.Microsecond).Equal(got.CreatedAt), "got %s", got.CreatedAt)
	require.Equal(t, j, got, "the job Create returns is the job stored")

	var raw string
	require.NoError(t, db.admin.QueryRowContext(ctx,
		"SELECT DATE_FORMAT(created_at, '%Y-%m-%d %H:%i:%s.%f') FROM jobs WHERE id = ?", j.ID).Scan(&raw))
	require.Equal(t, "2026-01-02 10:04:05.678901", raw, "stored in UTC")

	// clientFoundRows is forced too.
	_, err = s.Claim(ctx, j.ID, "w1", time.Now())
	require.NoError(t, err)
	require.NoError(t, s.SetLane(ctx, j.ID, 1, "lane-1"))
	require.NoError(t, s.SetLane(ctx, j.ID, 1, "lane-1"))
}

// TestSchema: the jobs table has exactly the columns a job needs (and the
// op_token the batched transitions stamp) and the
// indexes the queries use.
func TestSchema(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	_, db := openStore(t)

	cols := queryColumn[string](t, db.admin, `SELECT column_name FROM information_schema.columns
		WHERE table_schema = DATABASE() AND table_name = 'jobs' ORDER BY ordinal_position`)
	require.Equal(t, []string{"id", "mode", "params", "status", "reason", "error", "worker_id", "lane",
		"attempts", "max_attempts", "timeout_s", "created_at", "started_at", "finished_at", "result",
		"assets", "labels", "idempotency_key", "updated_at", "priority", "run_at", "retry_backoff", "attempts_log", "tenant", "op_token"}, cols)

	rows, err := db.admin.QueryContext(ctx, `SELECT index_name, non_unique,
		GROUP_CONCAT(column_name ORDER BY seq_in_index SEPARATOR ',')
		FROM information_schema.statistics WHERE table_schema = DATABASE() AND table_name = 'jobs'
		GROUP BY index_name, non_unique ORDER BY index_name`)
	require.NoError(t, err)
	indexes := make(map[string]string)
	for rows.Next() {
		var name, columns string
		var nonUnique int
		require.NoError(t, rows.Scan(&name, &nonUnique, &columns))
		if nonUnique == 0 {
			columns = "unique " + columns
		}
		indexes[name] = columns
	}
	require.NoError(t, rows.Err())
	require.NoError(t, rows.Close())
	require.Equal(t, map[string]string{
		"PRIMARY":              "unique id",
		"jobs_idempotency_key": "unique idempotency_key",
		"jobs_status_created":  "status,created_at,id",
		"jobs_created":         "created_at,id",
		"jobs_tenant_created":  "tenant,created_at,id",
	}, indexes)
}

// TestColumnLimits: values too long for their columns are plain errors,
// never a conflict nor a cut value; an overlong error message is clipped
// rather than failing the Finish (the job would stay running).
func TestColumnLimits(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, _ := openStore(t)

	_, _, err := s.Create(ctx, persistence.Job{ID: strings.Repeat("x", 65), Mode: "noop"})
	require.ErrorContains(t, err, "id is 65 bytes")
	require.NotErrorIs(t, err, persistence.ErrConflict)
	_, _, err = s.Create(ctx, persistence.Job{Mode: "noop", IdempotencyKey: strings.Repeat("k", 201)})
	require.ErrorContains(t, err, "idempotency_key is 201 bytes")

	j, _, err := s.Create(ctx, persistence.Job{ID: strings.Repeat("x", 64), Mode: "noop"})
	require.NoError(t, err)
	_, err = s.Claim(ctx, j.ID, strings.Repeat("w", 129), time.Now())
	require.ErrorContains(t, err, "worker id is 129 bytes")
	_, err = s.Claim(ctx, j.ID, "w1", time.Now())
	require.NoError(t, err)
	require.ErrorContains(t, s.SetLane(ctx, j.ID, 1, strings.Repeat("l", 2049)), "lane is 2049 bytes")

	long := strings.Repeat("é", 40_000) // 80,000 bytes
	done, err := s.Finish(ctx, j.ID, 1, persistence.Finish{
		Status: persistence.StatusFailed, Reason: persistence.ReasonJobError, Error: long,
		Result: json.RawMessage(`{"partial": true}`),
	})
	require.NoError(t, err)
	require.LessOrEqual(t, len(done.Error), 65535)
	require.True(t, strings.HasSuffix(done.Error, mysql.TruncatedMark))
	require.True(t, strings.HasPrefix(long, strings.TrimSuffix(done.Error, mysql.TruncatedMark)))
	got, err := s.Get(ctx, j.ID)
	require.NoError(t, err)
	require.Equal(t, done, got)
}

// TestIdentifiersAreBinary: ids and idempotency keys differing only in
// case or trailing spaces are different (a text collation would fold them
// into one job).
func TestIdentifiersAreBinary(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, _ := openStore(t)
	for _, id := range []string{"job-a", "JOB-A", "job-a "} {
		_, created, err := s.Create(ctx, persistence.Job{ID: id, Mode: "noop", IdempotencyKey: "key " + id})
		require.NoError(t, err, id)
		require.True(t, created, id)
	}
	got, err := s.Get(ctx, "job-a ")
	require.NoError(t, err)
	require.Equal(t, "job-a ", got.ID)
}
