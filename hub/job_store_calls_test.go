package hub

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/persistence"
)

// countingJobs counts the job store calls of one hub by kind; gets are the
// job grain's reads, otherGets the rest.
type countingJobs struct {
	persistence.JobStore
	gets, otherGets, creates, claims, lanes, finishes, others atomic.Int64
}

func (s *countingJobs) Get(ctx context.Context, id string) (persistence.Job, error) {
	if byJobGrain() {
		s.gets.Add(1)
	} else {
		s.otherGets.Add(1)
	}
	return s.JobStore.Get(ctx, id)
}

func (s *countingJobs) Create(ctx context.Context, j persistence.Job) (persistence.Job, bool, error) {
	s.creates.Add(1)
	return s.JobStore.Create(ctx, j)
}

func (s *countingJobs) Claim(ctx context.Context, id, workerID string, at time.Time) (persistence.Job, error) {
	s.claims.Add(1)
	return s.JobStore.Claim(ctx, id, workerID, at)
}

func (s *countingJobs) SetLane(ctx context.Context, id string, attempt int, lane string) error {
	s.lanes.Add(1)
	return s.JobStore.SetLane(ctx, id, attempt, lane)
}

func (s *countingJobs) Finish(ctx context.Context, id string, attempt int, f persistence.Finish) (persistence.Job, error) {
	s.finishes.Add(1)
	return s.JobStore.Finish(ctx, id, attempt, f)
}

func (s *countingJobs) Unclaim(ctx context.Context, id, workerID string, attempt int) error {
	s.others.Add(1)
	return s.JobStore.Unclaim(ctx, id, workerID, attempt)
}

func (s *countingJobs) Requeue(ctx context.Context, id string, attempt int) error {
	s.others.Add(1)
	return s.JobStore.Requeue(ctx, id, attempt)
}

func startCounting(t *testing.T) (*Hub, *countingJobs) {
	t.Helper()
	h, err := New(testConfig(t), testLogger(t))
	require.NoError(t, err)
	jobs := &countingJobs{JobStore: h.deps.Jobs}
	h.deps.Jobs = jobs
	require.NoError(t, h.Start(context.Background()))
	t.Cleanup(func() { _ = h.Stop(context.Background()) })
	return h, jobs
}

// TestJobLifeStoreCalls: a submitted short job's whole life is three store
// writes — create, claim, finish (the lane goes with the finish) — and no
// read by its job grain: the grain its submit wakes takes the record Create
// stored.
func TestJobLifeStoreCalls(t *testing.T) {
	h, jobs := startCounting(t)
	startAgent(t, h.URL(), "wc", 4)
	const n = 20
	ids := make([]string, n)
	for i := range ids {
		ids[i] = submit(t, h.URL(), `{"mode":"noop"}`).ID
	}
	// Waiting on the store's finishes, not on GET /jobs/{id}: a poll is a
	// read of its own.
	require.Eventually(t, func() bool { return jobs.finishes.Load() >= n }, 20*time.Second, 5*time.Millisecond)
	reads := jobs.gets.Load()
	writes := map[string]int64{"create": jobs.creates.Load(), "claim": jobs.claims.Load(), "set_lane": jobs.lanes.Load(),
		"finish": jobs.finishes.Load(), "other": jobs.others.Load()}
	var total int64
	for _, w := range writes {
		total += w
	}
	t.Logf("per job: %.1f writes %v, job grain reads %.1f, other reads %.1f", float64(total)/n, writes,
		float64(reads)/n, float64(jobs.otherGets.Load())/n)
	require.Zero(t, reads, "job grain store reads in %d job lives", n)
	require.Equal(t, map[string]int64{"create": n, "claim": n, "set_lane": 0, "finish": n, "other": 0}, writes)
	for _, id := range ids {
		j := getJob(t, h.URL(), id)
		require.Equal(t, persistence.StatusSucceeded, j.Status)
		require.NotEmpty(t, j.Lane, "the lane was written with the finish")
		require.Len(t, j.AttemptsLog, 1)
		require.Equal(t, j.Lane, j.AttemptsLog[0].Lane)
	}
}

// TestJobLaneSavedWhileRunning: a job that runs longer than the lane's
// wait has its lane stored on its own while it runs (GET /jobs/{id} shows
// it), once; its finish keeps it.
func TestJobLaneSavedWhileRunning(t *testing.T) {
	h, jobs := startCounting(t)
	startAgent(t, h.URL(), "wl", 1)
	j := submit(t, h.URL(), `{"mode":"noop","params":{"sleep_ms":2500}}`)
	require.Eventually(t, func() bool {
		got := getJob(t, h.URL(), j.ID)
		return got.Status == persistence.StatusRunning && got.Lane != ""
	}, 10*time.Second, 20*time.Millisecond)
	require.EqualValues(t, 1, jobs.lanes.Load())
	done := waitFinal(t, h.URL(), j.ID, 20*time.Second)
	require.Equal(t, persistence.StatusSucceeded, done.Status)
	require.NotEmpty(t, done.Lane)
	require.EqualValues(t, 1, jobs.lanes.Load(), "the lane is written once")
}

// byJobGrain reports whether the job grain made the call (and not, say,
// the log pipe's holder check, which has reads of its own).
func byJobGrain() bool {
	pc := make([]uintptr, 32)
	frames := runtime.CallersFrames(pc[:runtime.Callers(2, pc)])
	for {
		f, more := frames.Next()
		if strings.Contains(f.Function, "grains.(*jobGrain)") {
			return true
		}
		if !more {
			return false
		}
	}
}

// gatedJobs holds the Finish of one job until open is closed (or the
// caller's context ends); entered is closed when that Finish began.
type gatedJobs struct {
	persistence.JobStore
	id            atomic.Value // string: the job whose Finish waits
	entered, open chan struct{}
	enter         sync.Once
}

func (s *gatedJobs) Finish(ctx context.Context, id string, attempt int, f persistence.Finish) (persistence.Job, error) {
	if want, _ := s.id.Load().(string); id == want {
		s.enter.Do(func() { close(s.entered) })
		select {
		case <-s.open:
		case <-ctx.Done():
			return persistence.Job{}, ctx.Err()
		}
	}
	return s.JobStore.Finish(ctx, id, attempt, f)
}

// startGatedHub starts a hub whose job store holds the Finish of the job
// the test names in gatedJobs.id.
func startGatedHub(t *testing.T) (*Hub, *gatedJobs) {
	t.Helper()
	var jobs *gatedJobs
	h := startHubWrappingJobs(t, func(s persistence.JobStore) persistence.JobStore {
		jobs = &gatedJobs{JobStore: s, entered: make(chan struct{}), open: make(chan struct{})}
		return jobs
	})
	return h, jobs
}

// startHubWrappingJobs starts a test hub whose job store is wrap's
// wrapper of the one it built.
func startHubWrappingJobs(t *testing.T, wrap func(persistence.JobStore) persistence.JobStore) *Hub {
	t.Helper()
	h, err := New(testConfig(t), testLogger(t))
	require.NoError(t, err)
	h.deps.Jobs = wrap(h.deps.Jobs)
	require.NoError(t, h.Start(context.Background()))
	t.Cleanup(func() { _ = h.Stop(context.Background()) })
	return h
}

// waitEntered waits until the gated Finish began.
func (s *gatedJobs) waitEntered(t *testing.T) {
	t.Helper()
	select {
	case <-s.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the gated job's finish never reached the store")
	}
}

// TestFreedLaneNotHeldForTheEndsWrite: a worker's report that its job
// ended frees the slot at once; the lane's next job runs while that end is
// still being written (it is acknowledged, and stored as final, only once
// written). One worker with one lane: job A's finish is held in the store,
// and job B, submitted meanwhile, runs to its end on that lane before A's
// end is written. Without it, B waits in the queue for A's write.
func TestFreedLaneNotHeldForTheEndsWrite(t *testing.T) {
	h, jobs := startGatedHub(t)
	startAgent(t, h.URL(), "wg", 1)

	a := submit(t, h.URL(), `{"mode":"noop","params":{"sleep_ms":200}}`)
	jobs.id.Store(a.ID)
	jobs.waitEntered(t)
	open := sync.OnceFunc(func() { close(jobs.open) })
	defer open() // a failed assertion must not leave A's finish held
	b := submit(t, h.URL(), `{"mode":"noop"}`)
	// Well inside the grain's store timeout (10 s): A's write is still held.
	require.Eventually(t, func() bool { return getJob(t, h.URL(), b.ID).Status == persistence.StatusSucceeded },
		5*time.Second, 20*time.Millisecond, "job B did not run on the lane job A freed while A's end was being written")
	require.Equal(t, persistence.StatusRunning, getJob(t, h.URL(), a.ID).Status, "A's end is not stored before its write")
	open()
	require.Equal(t, persistence.StatusSucceeded, waitFinal(t, h.URL(), a.ID, 20*time.Second).Status)
}
