package bolt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	bbolt "go.etcd.io/bbolt"
	bberrors "go.etcd.io/bbolt/errors"

	"github.com/paprika-hub/paprika/persistence"
)

var _ persistence.JobStore = (*JobStore)(nil)

// DefaultPath is where the embedded hub keeps its jobs.
const DefaultPath = "./data/jobs.db"

// DefaultLockTimeout is how long Open waits for the file lock that another
// process (a second hub on the same data directory) may hold.
const DefaultLockTimeout = time.Second

// JobStore is a persistence.JobStore in a bbolt file. It is safe for
// concurrent use; writes are serialized by bbolt.
type JobStore struct {
	db    *bbolt.DB
	path  string
	group *groupCommitter // every job write goes through it (group commit)
	// finishWait and createWait are the lazy waits of a final state (and
	// a lane) and of an announced create (WithFinishWait, WithCreateWait).
	finishWait, createWait time.Duration
	// creating holds the ids and idempotency keys of the creates under way.
	creating creating
}

// Option configures Open.
type Option func(*options)

// options is what Open takes: bbolt's own and the group commit's.
type options struct {
	bbolt.Options
	groupWait  time.Duration
	finishWait time.Duration
	createWait time.Duration
}

// WithGroupWait lets a commit wait up to d for more writes to share it
// when writes come faster than one per d (group_commit.go); 0 (the
// default) never waits.
func WithGroupWait(d time.Duration) Option {
	return func(o *options) { o.groupWait = d }
}

// WithFinishWait lets a job's final state (Finish) and a running
// attempt's lane (SetLane) wait up to d for a commit another write
// starts, instead of starting one (group_commit.go's lazy writes); 0 (the
// default) never waits.
func WithFinishWait(d time.Duration) Option {
	return func(o *options) { o.finishWait = d }
}

// WithCreateWait lets a new job that CreateAnnounced announced wait up
// to d for a commit another write starts — its own claim, when a lane is
// free — instead of starting one (group_commit.go's lazy writes); 0 (the
// default) never waits.
func WithCreateWait(d time.Duration) Option {
	return func(o *options) { o.createWait = d }
}

// WithLockTimeout sets how long Open waits for the file lock (default
// DefaultLockTimeout).
func WithLockTimeout(d time.Duration) Option {
	return func(o *options) { o.Timeout = d }
}

// Open opens (creating it and its directory if needed) the job store file
// at path.
func Open(path string, opts ...Option) (*JobStore, error) {
	// The freelist is rebuilt from the pages at open instead of written
	// with every commit: two to three fewer page writes per transition,
	// durability unchanged.
	opts = append([]Option{func(o *options) { o.NoFreelistSync = true; o.FreelistType = bbolt.FreelistMapType }}, opts...)
	db, o, err := openDB(path, "job store", opts, bucketJobs, bucketByStatus, bucketIdempotency)
	if err != nil {
		return nil, err
	}
	if err := dropByCreated(db); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("open job store %s: %w", path, err)
	}
	return &JobStore{db: db, path: path, group: newGroupCommitter(db, o.groupWait),
		finishWait: o.finishWait, createWait: o.createWait}, nil
}

// openDB opens (creating it and its directory if needed) the bbolt file at
// path with buckets in it; what names the store in errors. It returns
// the options it was opened with.
func openDB(path, what string, opts []Option, buckets ...[]byte) (*bbolt.DB, options, error) {
	o := options{Options: bbolt.Options{Timeout: DefaultLockTimeout}}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return nil, o, fmt.Errorf("open %s %s: %w", what, path, err)
		}
	}
	for _, opt := range opts {
		opt(&o)
	}
	db, err := bbolt.Open(path, 0o600, &o.Options)
	if errors.Is(err, bberrors.ErrTimeout) {
		return nil, o, fmt.Errorf("open %s %s: file is locked (another hub on the same data directory?): %w", what, path, err)
	}
	if err != nil {
		return nil, o, fmt.Errorf("open %s %s: %w", what, path, err)
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		for _, name := range buckets {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return fmt.Errorf("bucket %s: %w", name, err)
			}
		}
		return nil
	})
	if err != nil {
		_ = db.Close()
		return nil, o, fmt.Errorf("open %s %s: %w", what, path, err)
	}
	return db, o, nil
}

// Create stores a new queued job (see persistence.PrepareNew), or returns the
// job already stored under j.IdempotencyKey with created=false. A duplicate
// id is persistence.ErrConflict.
func (s *JobStore) Create(ctx context.Context, j persistence.Job) (persistence.Job, bool, error) {
	return s.CreateAnnounced(ctx, j, nil)
}

// CreateAnnounced is Create for a caller that acts on a new job before it
// is durable: when the job is certain to be created — neither its id nor
// its idempotency key is stored, nor in a create under way, which waits
// for it — announce gets the job as it will be stored, once the committer
// took its write, before the commit. A claim made from there joins the
// create's commit or a later one, never an earlier. The write then is
// held (once announced it is written even if ctx ends: the caller's
// error says it may have been) and, for a queued job with a create wait,
// lazy: it waits for the commit its claim starts. Nothing is answered
// before the commit, as for Create; a job not announced (a duplicate, a
// delayed job) is a plain Create. announce must not block.
func (s *JobStore) CreateAnnounced(ctx context.Context, j persistence.Job, announce func(persistence.Job)) (persistence.Job, bool, error) {
	if err := ctx.Err(); err != nil {
		return persistence.Job{}, false, fmt.Errorf("create job: %w", err)
	}
	j, err := persistence.PrepareNew(j, time.Now())
	if err != nil {
		return persistence.Job{}, false, err
	}
	release, err := s.creating.reserve(ctx, j.ID, j.IdempotencyKey)
	if err != nil {
		return persistence.Job{}, false, s.wrap(fmt.Errorf("%w: %w", persistence.ErrUnavailable, err), "create job %s", j.ID)
	}
	opts := writeOpts{through: release}
	if announce != nil && s.unknown(j.ID, j.IdempotencyKey) {
		opts.held = true
		opts.taken = func() { announce(j) }
		if j.Status == persistence.StatusQueued && !persistence.CommitWaitOff(ctx) {
			opts.wait = s.createWait
		}
	}
	data := encodeJob(&j)
	var (
		// out points at the job to answer: j, which the closure keeps on
		// the heap anyway, or the stored one an idempotency key names — no
		// second copy of the record escapes with it.
		out     *persistence.Job
		created bool
		dup     error // the duplicate id's verdict: written nothing
	)
	err = s.group.update(ctx, func(w *writeTx) error {
		var err error
		out, created, dup, err = createIn(w, &j, data)
		return err
	}, opts)
	if err == nil {
		err = dup
	}
	if err != nil {
		return persistence.Job{}, false, s.wrap(err, "create job %s", j.ID)
	}
	return *out, created, nil
}

// createIn writes the new job j (data its record) in w, unless its
// idempotency key names a stored job — then out is that one — or its id
// is taken (dup, written nothing). err is a failed write, which fails the
// transaction.
func createIn(w *writeTx, j *persistence.Job, data []byte) (out *persistence.Job, created bool, dup, err error) {
	jobs := w.bucket(bucketJobs)
	idem := w.index(bucketIdempotency)
	if j.IdempotencyKey != "" {
		if id := w.get(idem, []byte(j.IdempotencyKey)); id != nil {
			existing, err := decodeStored(w.get(jobs, id), id)
			if err != nil {
				return nil, false, nil, fmt.Errorf("idempotency key %q: %w", j.IdempotencyKey, err)
			}
			return &existing, false, nil, nil
		}
	}
	id := []byte(j.ID)
	if w.get(jobs, id) != nil {
		return j, false, fmt.Errorf("id exists: %w", persistence.ErrConflict), nil
	}
	if err := jobs.Put(id, data); err != nil {
		return nil, false, nil, err
	}
	if err := w.index(bucketByStatus).Put(statusKey(j), []byte{}); err != nil {
		return nil, false, nil, err
	}
	if j.IdempotencyKey != "" {
		if err := idem.Put([]byte(j.IdempotencyKey), id); err != nil {
			return nil, false, nil, err
		}
	}
	return j, true, nil, nil
}

// CreateMany creates jobs in one write, in their order: one commit (or
// a share of one) for all of them instead of one each, and a job later
// in the slice is created after, and listed after, one before it. Each
// job is answered as Create would answer it alone — a job whose
// idempotency key is stored, or used by a job earlier in the slice, is
// that job with Created false — and a job the store refuses (not a valid
// new job) is refused alone. A failed or unanswered write fails every
// job of the call with the same error (some may have been written, as
// with one create that times out). Nothing is announced: the caller
// wakes the created jobs after the answer.
func (s *JobStore) CreateMany(ctx context.Context, jobs []persistence.Job) []persistence.Created {
	if err := ctx.Err(); err != nil {
		return persistence.FailEach(len(jobs), fmt.Errorf("create job: %w", err))
	}
	out := make([]persistence.Created, len(jobs))
	type item struct {
		i    int
		j    persistence.Job
		data []byte
	}
	items := make([]item, 0, len(jobs))
	names := make([][2]string, 0, len(jobs))
	for i, j := range jobs {
		j, err := persistence.PrepareNew(j, time.Now())
		if err != nil {
			out[i].Err = err
			continue
		}
		items = append(items, item{i: i, j: j, data: encodeJob(&j)})
		names = append(names, [2]string{j.ID, j.IdempotencyKey})
	}
	if len(items) == 0 {
		return out
	}
	release, err := s.creating.reserveAll(ctx, names)
	if err != nil {
		for _, it := range items {
			out[it.i].Err = s.wrap(fmt.Errorf("%w: %w", persistence.ErrUnavailable, err), "create job %s", it.j.ID)
		}
		return out
	}
	err = s.group.update(ctx, func(w *writeTx) error {
		for _, it := range items {
			stored, created, dup, err := createIn(w, &it.j, it.data)
			if err != nil {
				return err
			}
			r := &out[it.i]
			r.Job, r.Created, r.Err = persistence.Job{}, created, dup
			if dup == nil {
				r.Job = *stored
			}
		}
		return nil
	}, writeOpts{through: release})
	for _, it := range items {
		r := &out[it.i]
		switch {
		case err != nil:
			*r = persistence.Created{Err: s.wrap(err, "create job %s", it.j.ID)}
		case r.Err != nil:
			r.Err = s.wrap(r.Err, "create job %s", it.j.ID)
		}
	}
	return out
}

// Get returns the job with id, or persistence.ErrNotFound.
func (s *JobStore) Get(ctx context.Context, id string) (persistence.Job, error) {
	if err := ctx.Err(); err != nil {
		return persistence.Job{}, fmt.Errorf("get job %s: %w", id, err)
	}
	var j persistence.Job
	err := s.db.View(func(tx *bbolt.Tx) error {
		var err error
		j, err = loadJob(tx.Bucket(bucketJobs), []byte(id))
		return err
	})
	if err != nil {
		return persistence.Job{}, s.wrap(err, "get job %s", id)
	}
	return j, nil
}

// List returns one page of jobs in (created_at, id) order, newest first
// unless q.OldestFirst, and the cursor of the next page ("" when none).
// With q.Status it walks only that status's index; the tenant and
// priority filters are checked on each job it walks.
func (s *JobStore) List(ctx context.Context, q persistence.ListQuery) ([]persistence.Job, string, error) {
	if err := ctx.Err(); err != nil {
		return nil, "", fmt.Errorf("list jobs: %w", err)
	}
	limit, err := persistence.ListLimit(q)
	if err != nil {
		return nil, "", err
	}
	var after []byte
	if q.Cursor != "" {
		if after, err = decodeCursor(q.Cursor); err != nil {
			return nil, "", err
		}
	}
	var (
		page []persistence.Job
		next string
	)
	err = s.db.View(func(tx *bbolt.Tx) error {
		statuses := persistence.Statuses
		if q.Status != "" {
			statuses = []persistence.Status{q.Status}
		}
		m := newMerge(tx.Bucket(bucketByStatus), statuses, after, q.OldestFirst)
		jobs := tx.Bucket(bucketJobs)
		var last []byte // order key of the page's last job
		for k, ord := m.next(); k != nil; k, ord = m.next() {
			j, err := loadJob(jobs, ord[tsLen:])
			if err != nil {
				return fmt.Errorf("index entry %x: %w", k, err)
			}
			if !q.MatchTenantPriority(j) || !q.MatchesFilters(&j) {
				continue
			}
			if len(page) == limit {
				// A further job exists, so there is a next page.
				next = encodeCursor(last)
				return nil
			}
			page = append(page, j)
			last = bytes.Clone(ord)
		}
		return nil
	})
	if err != nil {
		return nil, "", s.wrap(err, "list jobs")
	}
	return page, next, nil
}

// merge walks the by_status ranges of some statuses as one sequence in
// listing order (order key, then id), so listing every job needs no index
// of its own: by_status already has each job once, and a job's creation
// writes one index entry instead of two.
type merge struct {
	runs      []mergeRun
	ascending bool
}

type mergeRun struct {
	prefix []byte
	step   func() ([]byte, []byte)
	k      []byte // current key; nil when the run is used up
}

func newMerge(index *bbolt.Bucket, statuses []persistence.Status, after []byte, ascending bool) *merge {
	m := &merge{runs: make([]mergeRun, 0, len(statuses)), ascending: ascending}
	for _, st := range statuses {
		c := index.Cursor()
		r := mergeRun{prefix: statusPrefix(st), step: c.Prev}
		if ascending {
			r.step = c.Next
		}
		if k := seek(c, r.prefix, after, ascending); hasPrefix(k, r.prefix) {
			r.k = k
		}
		m.runs = append(m.runs, r)
	}
	return m
}

// next returns the next index key and its order key (ts ‖ id), or nil
// at the end.
func (m *merge) next() (key, ord []byte) {
	best := -1
	for i := range m.runs {
		r := &m.runs[i]
		if r.k == nil {
			continue
		}
		if best < 0 {
			best = i
			continue
		}
		c := bytes.Compare(r.k[len(r.prefix):], m.runs[best].k[len(m.runs[best].prefix):])
		if (m.ascending && c < 0) || (!m.ascending && c > 0) {
			best = i
		}
	}
	if best < 0 {
		return nil, nil
	}
	r := &m.runs[best]
	key, ord = r.k, r.k[len(r.prefix):]
	if r.k = stepKey(r.step); !hasPrefix(r.k, r.prefix) {
		r.k = nil
	}
	return key, ord
}

// dropByCreated removes the listing index older files have (every job by
// creation alone): List merges the status ranges instead.
func dropByCreated(db *bbolt.DB) error {
	var has bool
	if err := db.View(func(tx *bbolt.Tx) error { has = tx.Bucket(bucketByCreatedOld) != nil; return nil }); err != nil || !has {
		return err
	}
	return db.Update(func(tx *bbolt.Tx) error { return tx.DeleteBucket(bucketByCreatedOld) })
}

func stepKey(step func() ([]byte, []byte)) []byte {
	k, _ := step()
	return k
}

// seek positions c on the first key to list: within prefix, strictly after
// the order key after (nil: from the start) in the listing direction.
func seek(c *bbolt.Cursor, prefix, after []byte, ascending bool) []byte {
	switch {
	case ascending && after == nil:
		k, _ := c.Seek(prefix) // Seek(nil) is First
		return k
	case ascending:
		target := append(bytes.Clone(prefix), after...)
		k, _ := c.Seek(target)
		if bytes.Equal(k, target) {
			k, _ = c.Next()
		}
		return k
	}
	// Descending: find the first key at or past the bound, then step back.
	var bound []byte
	if after != nil {
		bound = append(bytes.Clone(prefix), after...)
	} else if prefix != nil {
		bound = bytes.Clone(prefix)
		bound[len(bound)-1]++ // status‖0 → status‖1: past every key of status
	}
	if bound == nil {
		k, _ := c.Last()
		return k
	}
	if k, _ := c.Seek(bound); k == nil {
		k, _ = c.Last()
		return k
	}
	k, _ := c.Prev()
	return k
}

// Claim is the conditional claim (persistence.ApplyClaim).
func (s *JobStore) Claim(ctx context.Context, id, workerID string, at time.Time) (persistence.Job, error) {
	return s.update(ctx, id, "claim", func(j *persistence.Job) error { return persistence.ApplyClaim(j, workerID, at) })
}

// Unclaim rolls a claim back (persistence.ApplyUnclaim).
func (s *JobStore) Unclaim(ctx context.Context, id, workerID string, attempt int) error {
	_, err := s.update(ctx, id, "unclaim", func(j *persistence.Job) error { return persistence.ApplyUnclaim(j, workerID, attempt) })
	return err
}

// SetLane records a running attempt's lane (persistence.ApplySetLane).
func (s *JobStore) SetLane(ctx context.Context, id string, attempt int, lane string) error {
	_, err := s.updateLazy(ctx, id, "set lane of", func(j *persistence.Job) error { return persistence.ApplySetLane(j, attempt, lane) })
	return err
}

// Requeue puts a running attempt back in the queue (persistence.ApplyRequeue).
func (s *JobStore) Requeue(ctx context.Context, id string, attempt int) error {
	_, err := s.update(ctx, id, "requeue", func(j *persistence.Job) error { return persistence.ApplyRequeue(j, attempt) })
	return err
}

// Finish ends a non-final job (persistence.ApplyFinish).
func (s *JobStore) Finish(ctx context.Context, id string, attempt int, f persistence.Finish) (persistence.Job, error) {
	return s.updateLazy(ctx, id, "finish", func(j *persistence.Job) error { return persistence.ApplyFinish(j, attempt, f) })
}

// Close closes the file; later calls fail with persistence.ErrUnavailable.
// Commits is how many write transactions the store committed: its
// group committer's groups, each one commit for every write that queued
// during the one before.
func (s *JobStore) Commits() int64 { return s.group.commits.Load() }

// It waits for running transactions and is safe to call twice.
func (s *JobStore) Close() error {
	s.group.stop()
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("close job store %s: %w", s.path, err)
	}
	return nil
}

// update loads job id, applies fn and, when fn accepts, writes the job and
// moves its status index entry: read, check and write in one transaction.
func (s *JobStore) update(ctx context.Context, id, op string, fn func(*persistence.Job) error) (persistence.Job, error) {
	return s.transition(ctx, id, op, fn, writeOpts{})
}

// updateLazy is update for a write that may ride a commit other writes
// start (WithFinishWait).
func (s *JobStore) updateLazy(ctx context.Context, id, op string, fn func(*persistence.Job) error) (persistence.Job, error) {
	return s.transition(ctx, id, op, fn, writeOpts{wait: s.finishWait})
}

func (s *JobStore) transition(ctx context.Context, id, op string, fn func(*persistence.Job) error, opts writeOpts) (persistence.Job, error) {
	if err := ctx.Err(); err != nil {
		return persistence.Job{}, fmt.Errorf("%s job %s: %w", op, id, err)
	}
	var (
		// out points at the job as written: the decoded record, which is on
		// the heap already (fn takes its address), not a second copy.
		out   *persistence.Job
		fnErr error // the transition's own verdict, already in context
	)
	key := []byte(id)
	err := s.group.update(ctx, func(w *writeTx) error {
		out, fnErr = nil, nil
		jobs := w.bucket(bucketJobs)
		j, err := decodeStored(w.get(jobs, key), key)
		if err != nil {
			fnErr = s.wrap(err, "%s job %s", op, id) // a verdict too: no write
			return nil
		}
		oldKey := statusKey(&j)
		if fnErr = fn(&j); fnErr != nil {
			return nil // refused: nothing written, the group goes on
		}
		if newKey := statusKey(&j); !bytes.Equal(oldKey, newKey) {
			byStatus := w.index(bucketByStatus)
			if err := w.del(byStatus, oldKey); err != nil {
				return err
			}
			if err := byStatus.Put(newKey, []byte{}); err != nil {
				return err
			}
		}
		if err := jobs.Put(key, encodeJob(&j)); err != nil {
			return err
		}
		out = &j
		return nil
	}, opts)
	switch {
	case errors.Is(err, errNotAnswered):
		// fnErr and out may still be written by the committer: unread.
		return persistence.Job{}, s.wrap(err, "%s job %s", op, id)
	case fnErr != nil:
		return persistence.Job{}, fnErr
	case err != nil:
		return persistence.Job{}, s.wrap(err, "%s job %s", op, id)
	}
	return *out, nil
}

// wrap puts err in context, and marks a closed database as
// persistence.ErrUnavailable.
func (s *JobStore) wrap(err error, format string, args ...any) error {
	what := fmt.Sprintf(format, args...)
	if errors.Is(err, bberrors.ErrDatabaseNotOpen) {
		return fmt.Errorf("%s: job store %s: %w: %w", what, s.path, persistence.ErrUnavailable, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// loadJob decodes job id from the jobs bucket; persistence.ErrNotFound
// when absent.
func loadJob(jobs *bbolt.Bucket, id []byte) (persistence.Job, error) {
	return decodeStored(jobs.Get(id), id)
}

// decodeStored decodes job id's stored record data; persistence.ErrNotFound
// when data is nil (absent).
func decodeStored(data, id []byte) (persistence.Job, error) {
	if data == nil {
		return persistence.Job{}, persistence.ErrNotFound
	}
	j, err := decodeJob(data)
	if err != nil {
		return persistence.Job{}, fmt.Errorf("decode job %s: %w", id, err)
	}
	return j, nil
}

// Promote queues a scheduled job (persistence.ApplyPromote).
func (s *JobStore) Promote(ctx context.Context, id string) (persistence.Job, error) {
	return s.update(ctx, id, "promote", persistence.ApplyPromote)
}

// Reschedule ends a running attempt that is tried again later
// (persistence.ApplyReschedule).
func (s *JobStore) Reschedule(ctx context.Context, id string, attempt int, r persistence.Reschedule) (persistence.Job, error) {
	return s.update(ctx, id, "reschedule", func(j *persistence.Job) error { return persistence.ApplyReschedule(j, attempt, r) })
}

// Revive queues a failed job again (persistence.ApplyRevive).
func (s *JobStore) Revive(ctx context.Context, id string, at time.Time) (persistence.Job, error) {
	return s.update(ctx, id, "revive", func(j *persistence.Job) error { return persistence.ApplyRevive(j, at) })
}
