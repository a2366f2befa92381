package memory

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/paprika-hub/paprika/persistence"
)

var _ persistence.JobStore = (*JobStore)(nil)

// JobStore is an in-memory persistence.JobStore for tests. Every method
// holds one mutex, so each conditional transition is atomic. After Close,
// methods return persistence.ErrUnavailable.
type JobStore struct {
	mu     sync.Mutex
	closed bool
	jobs   map[string]persistence.Job
	idem   map[string]string // idempotency key → job id
	order  []jobKey          // every job, ascending (created_at, id)
}

// NewJobStore returns an empty JobStore.
func NewJobStore() *JobStore {
	return &JobStore{
		jobs: make(map[string]persistence.Job),
		idem: make(map[string]string),
	}
}

// Create stores a new queued job (see persistence.PrepareNew), or returns the job
// already stored under j.IdempotencyKey with created=false. A duplicate id
// is persistence.ErrConflict.
func (s *JobStore) Create(ctx context.Context, j persistence.Job) (persistence.Job, bool, error) {
	j, err := persistence.PrepareNew(j, time.Now())
	if err != nil {
		return persistence.Job{}, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(ctx); err != nil {
		return persistence.Job{}, false, fmt.Errorf("create job: %w", err)
	}
	if j.IdempotencyKey != "" {
		if id, ok := s.idem[j.IdempotencyKey]; ok {
			return persistence.CloneJob(s.jobs[id]), false, nil
		}
	}
	if _, ok := s.jobs[j.ID]; ok {
		return persistence.Job{}, false, fmt.Errorf("create job %s: id exists: %w", j.ID, persistence.ErrConflict)
	}
	s.jobs[j.ID] = j
	if j.IdempotencyKey != "" {
		s.idem[j.IdempotencyKey] = j.ID
	}
	k := jobKey{created: j.CreatedAt.UnixNano(), id: j.ID}
	i, _ := slices.BinarySearchFunc(s.order, k, jobKey.compare)
	s.order = slices.Insert(s.order, i, k)
	return persistence.CloneJob(j), true, nil
}

// Get returns the job with id, or persistence.ErrNotFound.
func (s *JobStore) Get(ctx context.Context, id string) (persistence.Job, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(ctx); err != nil {
		return persistence.Job{}, fmt.Errorf("get job %s: %w", id, err)
	}
	j, ok := s.jobs[id]
	if !ok {
		return persistence.Job{}, fmt.Errorf("get job %s: %w", id, persistence.ErrNotFound)
	}
	return persistence.CloneJob(j), nil
}

// List returns one page of jobs in (created_at, id) order, newest first
// unless q.OldestFirst, and the cursor of the next page ("" when none).
func (s *JobStore) List(ctx context.Context, q persistence.ListQuery) ([]persistence.Job, string, error) {
	limit, err := persistence.ListLimit(q)
	if err != nil {
		return nil, "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(ctx); err != nil {
		return nil, "", fmt.Errorf("list jobs: %w", err)
	}

	// i walks s.order from the first position past the cursor.
	i, step := 0, 1
	if !q.OldestFirst {
		i, step = len(s.order)-1, -1
	}
	if q.Cursor != "" {
		after, err := decodeCursor(q.Cursor)
		if err != nil {
			return nil, "", err
		}
		pos, found := slices.BinarySearchFunc(s.order, after, jobKey.compare)
		switch {
		case q.OldestFirst && found:
			i = pos + 1
		case q.OldestFirst:
			i = pos
		default:
			i = pos - 1 // pos is the first key >= after
		}
	}

	var (
		page []persistence.Job
		last jobKey
	)
	for ; i >= 0 && i < len(s.order); i += step {
		j := s.jobs[s.order[i].id]
		if q.Status != "" && j.Status != q.Status || !q.MatchTenantPriority(j) {
			continue
		}
		if !q.MatchesFilters(&j) {
			continue
		}
		if len(page) == limit {
			// A further match exists, so there is a next page; it starts
			// after this page's last job.
			return page, encodeCursor(last), nil
		}
		page = append(page, persistence.CloneJob(j))
		last = s.order[i]
	}
	return page, "", nil
}

// Claim is the conditional claim (persistence.ApplyClaim).
func (s *JobStore) Claim(ctx context.Context, id, workerID string, at time.Time) (persistence.Job, error) {
	return s.update(ctx, id, func(j *persistence.Job) error { return persistence.ApplyClaim(j, workerID, at) })
}

// Unclaim rolls a claim back (persistence.ApplyUnclaim).
func (s *JobStore) Unclaim(ctx context.Context, id, workerID string, attempt int) error {
	_, err := s.update(ctx, id, func(j *persistence.Job) error { return persistence.ApplyUnclaim(j, workerID, attempt) })
	return err
}

// SetLane records a running attempt's lane (persistence.ApplySetLane).
func (s *JobStore) SetLane(ctx context.Context, id string, attempt int, lane string) error {
	_, err := s.update(ctx, id, func(j *persistence.Job) error { return persistence.ApplySetLane(j, attempt, lane) })
	return err
}

// Requeue puts a running attempt back in the queue (persistence.ApplyRequeue).
func (s *JobStore) Requeue(ctx context.Context, id string, attempt int) error {
	_, err := s.update(ctx, id, func(j *persistence.Job) error { return persistence.ApplyRequeue(j, attempt) })
	return err
}

// Finish ends a non-final job (persistence.ApplyFinish).
func (s *JobStore) Finish(ctx context.Context, id string, attempt int, f persistence.Finish) (persistence.Job, error) {
	return s.update(ctx, id, func(j *persistence.Job) error { return persistence.ApplyFinish(j, attempt, f) })
}

// Close makes every later call fail with persistence.ErrUnavailable. It is
// safe to call twice.
func (s *JobStore) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return nil
}

// update applies fn to a copy of job id and stores the copy when fn
// succeeds, all under the mutex.
func (s *JobStore) update(ctx context.Context, id string, fn func(*persistence.Job) error) (persistence.Job, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(ctx); err != nil {
		return persistence.Job{}, fmt.Errorf("update job %s: %w", id, err)
	}
	old, ok := s.jobs[id]
	if !ok {
		return persistence.Job{}, fmt.Errorf("update job %s: %w", id, persistence.ErrNotFound)
	}
	j := persistence.CloneJob(old)
	if err := fn(&j); err != nil {
		return persistence.Job{}, err
	}
	s.jobs[id] = j
	return persistence.CloneJob(j), nil
}

// usable reports why the store cannot serve a call now; s.mu is held.
func (s *JobStore) usable(ctx context.Context) error {
	if s.closed {
		return fmt.Errorf("memory job store closed: %w", persistence.ErrUnavailable)
	}
	return ctx.Err()
}

// Promote queues a scheduled job (persistence.ApplyPromote).
func (s *JobStore) Promote(ctx context.Context, id string) (persistence.Job, error) {
	return s.update(ctx, id, persistence.ApplyPromote)
}

// Reschedule ends a running attempt that is tried again later
// (persistence.ApplyReschedule).
func (s *JobStore) Reschedule(ctx context.Context, id string, attempt int, r persistence.Reschedule) (persistence.Job, error) {
	return s.update(ctx, id, func(j *persistence.Job) error { return persistence.ApplyReschedule(j, attempt, r) })
}

// Revive queues a failed job again (persistence.ApplyRevive).
func (s *JobStore) Revive(ctx context.Context, id string, at time.Time) (persistence.Job, error) {
	return s.update(ctx, id, func(j *persistence.Job) error { return persistence.ApplyRevive(j, at) })
}
