package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/paprika-hub/paprika/persistence"
)

var _ persistence.JobStore = (*JobStore)(nil)

// JobStore is a persistence.JobStore in a MariaDB or MySQL database. It is
// safe for concurrent use, and any number of hubs may share one database.
type JobStore struct {
	db    *sql.DB
	where string // host and database, for error messages (never the password)
	// oneTrip: claim and finish go as one multi-statement round trip
	// (one_trip.go); only with client-side interpolation.
	oneTrip bool
	// The batchers of batch.go (only with oneTrip): transitions, reads
	// and creates of many jobs per round trip.
	txs     *batcher[txReq, persistence.Job]
	gets    *batcher[string, persistence.Job]
	creates *batcher[createReq, createResult]
	// txRoundTrips counts the round trips of the batched transactions:
	// one per batch, two when some transition of it was computed from
	// its row (tryTx).
	txRoundTrips atomic.Int64
	// mergedRows counts the transitions written by a merged UPDATE
	// (merge.go), for tests.
	mergedRows atomic.Int64
	// finishWait is how long an end or a lane waits for a trip another
	// call leads (WithFinishWait).
	finishWait time.Duration

	closed atomic.Bool
}

// Open connects to the database dsn names, checks that it answers and
// applies the missing schema migrations. The DSN is the driver's
// (user:pass@tcp(host:3306)/db); Open forces the parameters the store
// relies on (see the package doc). An unreachable server is
// persistence.ErrUnavailable.
func Open(ctx context.Context, dsn string, opts ...Option) (*JobStore, error) {
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	if err := o.validate(); err != nil {
		return nil, fmt.Errorf("open mysql job store: %w", err)
	}
	cfg, err := gomysql.ParseDSN(withInterpolation(dsn))
	if err != nil {
		cfg, err = gomysql.ParseDSN(dsn) // the DSN's charset refuses interpolation: keep prepare+execute
	}
	if err != nil {
		// The driver's messages never repeat the DSN, so no password leaks.
		return nil, fmt.Errorf("open mysql job store: %w", err)
	}
	if cfg.DBName == "" {
		return nil, errors.New("open mysql job store: the DSN names no database (user:pass@tcp(host:3306)/DBNAME)")
	}
	cfg.ParseTime = true // DATETIME → time.Time
	cfg.Loc = time.UTC   // read and write DATETIME as UTC
	// RowsAffected counts matched rows, not changed ones: a transition
	// that writes values already stored (SetLane with the same lane) won.
	cfg.ClientFoundRows = true
	// A server that became read-only (a failover demoted it) drops the
	// connection, so the pool reconnects to the new primary.
	cfg.RejectReadOnly = true
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultDialTimeout
	}
	cfg.Logger = driverLogger{o.log}
	// Multi-statement queries only where parameters are interpolated (and
	// escaped) by the driver; the store's statements are constants.
	cfg.MultiStatements = cfg.MultiStatements || cfg.InterpolateParams

	connector, err := gomysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("open mysql job store: %w", err)
	}
	db := sql.OpenDB(connector)
	db.SetMaxOpenConns(o.maxOpenConns)
	db.SetMaxIdleConns(o.maxOpenConns)
	db.SetConnMaxLifetime(o.connMaxLifetime)
	db.SetConnMaxIdleTime(DefaultConnMaxIdleTime)

	s := &JobStore{db: db, where: cfg.Addr + "/" + cfg.DBName, oneTrip: cfg.InterpolateParams}
	s.txs, s.gets, s.creates = newBatcher(s.runTx, o.groupWait), newBatcher(s.runGets, o.groupWait), newBatcher(s.runCreates, o.groupWait)
	s.finishWait = o.finishWait
	if err := db.PingContext(ctx); err != nil {
		_ = db.Close()
		return nil, s.fail(ctx, err, "open mysql job store")
	}
	if _, err := migrate(ctx, db, cfg.DBName, o.migrateLockTimeout, o.log); err != nil {
		_ = db.Close()
		return nil, s.fail(ctx, err, "open mysql job store: migrate")
	}
	return s, nil
}

// Create stores a new queued job (see persistence.PrepareNew), or returns the
// job already stored under j.IdempotencyKey with created=false. A duplicate
// id is persistence.ErrConflict.
//
// The unique index on idempotency_key decides between concurrent creates
// with one key: the first INSERT wins, the others fail on the duplicate key
// and read the winner's job.
func (s *JobStore) Create(ctx context.Context, j persistence.Job) (persistence.Job, bool, error) {
	if err := s.usable(); err != nil {
		return persistence.Job{}, false, fmt.Errorf("create job: %w", err)
	}
	req, err := newCreate(j)
	if err != nil {
		return persistence.Job{}, false, err
	}
	if s.oneTrip {
		r, err := s.creates.do(ctx, req, createSize(req.args))
		return s.created(ctx, req.j.ID, r, err)
	}
	return s.insertOne(ctx, req.j, req.args)
}

// created is Create's answer from a batched create's.
func (s *JobStore) created(ctx context.Context, id string, r createResult, err error) (persistence.Job, bool, error) {
	if err != nil && err == ctx.Err() { // left before its trip: nothing was written
		return persistence.Job{}, false, s.fail(ctx, err, "create job %s", id)
	}
	if err != nil {
		return persistence.Job{}, false, err
	}
	return r.j, r.created, nil
}

// newCreate checks j as a new job and makes its INSERT's row.
func newCreate(j persistence.Job) (createReq, error) {
	j, err := persistence.PrepareNew(j, time.Now())
	if err != nil {
		return createReq{}, err
	}
	if err := checkNew(&j); err != nil {
		return createReq{}, err
	}
	j.CreatedAt, j.StartedAt, j.FinishedAt = micro(j.CreatedAt), micro(j.StartedAt), micro(j.FinishedAt)
	j.RunAt = micro(j.RunAt)
	j.Error = clipError(j.Error)
	assets, err := encodeJSON(j.Assets, len(j.Assets) == 0)
	if err != nil {
		return createReq{}, fmt.Errorf("create job %s: encode assets: %w", j.ID, err)
	}
	labels, err := encodeJSON(j.Labels, len(j.Labels) == 0)
	if err != nil {
		return createReq{}, fmt.Errorf("create job %s: encode labels: %w", j.ID, err)
	}

	retry, err := encodeRetry(&j)
	if err != nil {
		return createReq{}, fmt.Errorf("create job %s: %w", j.ID, err)
	}
	args := append(make([]any, 0, 20+len(retry)), j.ID, j.Mode, nullJSON(j.Params), string(j.Status), j.Reason, j.Error,
		nullString(j.WorkerID), j.Lane, j.Attempts, j.MaxAttempts, j.TimeoutS, j.CreatedAt, nullTime(j.StartedAt),
		nullTime(j.FinishedAt), nullJSON(j.Result), assets, labels, nullString(j.IdempotencyKey), j.Priority, j.Tenant)
	return createReq{j: j, args: append(args, retry...)}, nil
}

// CreateMany creates jobs as Create does each, answered in their order,
// with their rows sent together: as many to a multi-row INSERT as its
// bounds allow (1,000 jobs in a few round trips instead of 1,000), in
// their order, so a job later in the slice is created after, and listed
// after, one before it. A job whose idempotency key is stored, or used
// by one earlier in the slice, is that job, not created; a job the store
// refuses is refused alone. Without one-trip statements
// (interpolateParams=false) the jobs are created one after another.
func (s *JobStore) CreateMany(ctx context.Context, jobs []persistence.Job) []persistence.Created {
	if err := s.usable(); err != nil {
		return persistence.FailEach(len(jobs), fmt.Errorf("create job: %w", err))
	}
	if !s.oneTrip {
		return persistence.CreateEach(jobs, func(j persistence.Job) (persistence.Job, bool, error) { return s.Create(ctx, j) })
	}
	out := make([]persistence.Created, len(jobs))
	reqs := make([]createReq, 0, len(jobs))
	sizes := make([]int, 0, len(jobs))
	at := make([]int, 0, len(jobs)) // reqs[n] is jobs[at[n]]
	for i, j := range jobs {
		req, err := newCreate(j)
		if err != nil {
			out[i].Err = err
			continue
		}
		reqs = append(reqs, req)
		sizes = append(sizes, createSize(req.args))
		at = append(at, i)
	}
	res, errs := s.creates.doMany(ctx, reqs, sizes)
	for n := range reqs {
		r := &out[at[n]]
		r.Job, r.Created, r.Err = s.created(ctx, reqs[n].j.ID, res[n], errs[n])
	}
	return out
}

// insertOne stores prepared job j with its own INSERT, and on a duplicate
// key answers the idempotent repeat or the taken id.
func (s *JobStore) insertOne(ctx context.Context, j persistence.Job, args []any) (persistence.Job, bool, error) {
	var err error
	for try := 1; ; try++ {
		_, err = s.db.ExecContext(ctx, insertJobSQL, args...)
		// InnoDB may pick concurrent inserts of one unique key as deadlock
		// victims; the statement was rolled back whole and can run again.
		if err == nil || !retryable(err) || try == maxTxTries || ctx.Err() != nil {
			break
		}
	}
	switch {
	case err == nil:
		return j, true, nil
	case serverErrorNumber(err) != erDupEntry:
		return persistence.Job{}, false, s.fail(ctx, err, "create job %s", j.ID)
	}

	// A duplicate: the idempotency key answers first (as in the embedded
	// stores), else the id was taken.
	if j.IdempotencyKey != "" {
		row := s.db.QueryRowContext(ctx, "SELECT "+jobColumns+" FROM jobs WHERE idempotency_key = ?", j.IdempotencyKey)
		existing, err := scanJob(row)
		switch {
		case err == nil:
			return existing, false, nil
		case !errors.Is(err, sql.ErrNoRows):
			return persistence.Job{}, false, s.fail(ctx, err, "create job %s: read job of idempotency key %q", j.ID, j.IdempotencyKey)
		}
	}
	return persistence.Job{}, false, fmt.Errorf("create job %s: id exists: %w", j.ID, persistence.ErrConflict)
}

// Get returns the job with id, or persistence.ErrNotFound.
func (s *JobStore) Get(ctx context.Context, id string) (persistence.Job, error) {
	if err := s.usable(); err != nil {
		return persistence.Job{}, fmt.Errorf("get job %s: %w", id, err)
	}
	var (
		j   persistence.Job
		err error
	)
	if s.oneTrip {
		j, err = s.gets.do(ctx, id, len(id))
	} else {
		j, err = getJob(ctx, s.db, id)
	}
	if err != nil {
		return persistence.Job{}, s.fail(ctx, err, "get job %s", id)
	}
	return j, nil
}

// List returns one page of jobs in (created_at, id) order, newest first
// unless q.OldestFirst, and the cursor of the next page ("" when none). It
// is one keyset query on jobs_created, or on jobs_status_created with
// q.Status, reading one row more than the page to know whether another
// page follows.
func (s *JobStore) List(ctx context.Context, q persistence.ListQuery) ([]persistence.Job, string, error) {
	if err := s.usable(); err != nil {
		return nil, "", fmt.Errorf("list jobs: %w", err)
	}
	limit, err := persistence.ListLimit(q)
	if err != nil {
		return nil, "", err
	}
	var (
		where []string
		args  []any
	)
	if q.Status != "" {
		where = append(where, "status = ?")
		args = append(args, string(q.Status))
	}
	if q.HasTenant {
		where = append(where, "tenant = ?")
		args = append(args, q.Tenant)
	}
	if q.Priority != nil {
		where = append(where, "priority = ?")
		args = append(args, *q.Priority)
	}
	fw, fargs, err := filterWhere(q)
	if err != nil {
		return nil, "", err
	}
	where, args = append(where, fw...), append(args, fargs...)
	if q.Cursor != "" {
		at, id, err := decodeCursor(q.Cursor)
		if err != nil {
			return nil, "", err
		}
		// Expanded rather than a row comparison (created_at, id) < (?, ?),
		// which not every MariaDB/MySQL version turns into an index range.
		cmp := "<"
		if q.OldestFirst {
			cmp = ">"
		}
		where = append(where, fmt.Sprintf("(created_at %[1]s ? OR (created_at = ? AND id %[1]s ?))", cmp))
		args = append(args, at, at, id)
	}
	query := "SELECT " + jobColumns + " FROM jobs"
	if len(where) > 0 {
		query += " WHERE " + strings.Join(where, " AND ")
	}
	if q.OldestFirst {
		query += " ORDER BY created_at, id"
	} else {
		query += " ORDER BY created_at DESC, id DESC"
	}
	query += " LIMIT ?"
	args = append(args, limit+1)

	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, "", s.fail(ctx, err, "list jobs")
	}
	defer rows.Close()
	page := make([]persistence.Job, 0, min(limit, 64))
	next := ""
	scan := newJobScanner(nil)
	for rows.Next() {
		if len(page) == limit {
			// A further job exists, so there is a next page; it starts
			// after this page's last job.
			last := page[len(page)-1]
			next = encodeCursor(last.CreatedAt, last.ID)
			break
		}
		j, err := scan.scan(rows)
		if err != nil {
			return nil, "", s.fail(ctx, err, "list jobs")
		}
		page = append(page, j)
	}
	if err := rows.Err(); err != nil {
		return nil, "", s.fail(ctx, err, "list jobs")
	}
	return page, next, nil
}

// Ping checks that the database answers; persistence.ErrUnavailable when it
// does not (for the hub's health endpoint).
func (s *JobStore) Ping(ctx context.Context) error {
	if err := s.usable(); err != nil {
		return fmt.Errorf("ping: %w", err)
	}
	if err := s.db.PingContext(ctx); err != nil {
		return s.fail(ctx, err, "ping")
	}
	return nil
}

// Close closes the connection pool; later calls fail with
// persistence.ErrUnavailable. It waits for the statements already running
// on the server and is safe to call twice.
func (s *JobStore) Close() error {
	if !s.closed.CompareAndSwap(false, true) {
		return nil
	}
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("close mysql job store %s: %w", s.where, err)
	}
	return nil
}

// usable fails every call after Close.
func (s *JobStore) usable() error {
	if s.closed.Load() {
		return fmt.Errorf("mysql %s: %w: %w", s.where, persistence.ErrUnavailable, errClosed)
	}
	return nil
}

// insertJobSQL stores a new job.
const insertJobSQL = "INSERT INTO jobs (" + jobColumns + ", updated_at) VALUES " +
	"(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, UTC_TIMESTAMP(6))"

// querier is *sql.DB or *sql.Tx.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// getJob reads job id; persistence.ErrNotFound when there is none.
func getJob(ctx context.Context, q querier, id string) (persistence.Job, error) {
	j, err := scanJob(q.QueryRowContext(ctx, "SELECT "+jobColumns+" FROM jobs WHERE id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return persistence.Job{}, persistence.ErrNotFound
	}
	return j, err
}

// driverLogger sends the driver's own messages (a connection it found
// broken, a packet it could not read) to the store's logger.
type driverLogger struct{ log *slog.Logger }

// Print implements gomysql.Logger.
func (l driverLogger) Print(v ...any) {
	l.log.Warn("mysql driver", "detail", strings.TrimSpace(fmt.Sprint(v...)))
}

// withInterpolation turns on the driver's client-side parameter
// interpolation unless the DSN says otherwise: every statement is then one
// round trip (COM_QUERY) instead of prepare + execute + close, a third of
// the protocol commands per job. Values are escaped by the driver, which is
// safe for the driver's default utf8mb4; a DSN that names its own charset
// or collation is left as it is (backslash escaping is not safe in every
// multibyte charset), and the driver refuses it for an unsafe collation
// (the DSN is then used as it is).
func withInterpolation(dsn string) string {
	if strings.Contains(dsn, "interpolateParams=") || strings.Contains(dsn, "charset=") || strings.Contains(dsn, "collation=") {
		return dsn
	}
	if strings.Contains(dsn, "?") {
		return dsn + "&interpolateParams=true"
	}
	return dsn + "?interpolateParams=true"
}
