package hub

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/messages"
	"github.com/paprika-hub/paprika/persistence"
)

// A worker whose grain and link die together (their hub is killed) links
// again to a fresh activation, which starts from the registry: its list
// of running jobs was written up to registryFlushDelay before the hub
// died, so it may list jobs that have ended since. The worker's hello
// says what it runs; a slot it leaves out is free at once. It was held
// until a heartbeat SlotPruneAfter later (15 s with the default
// heartbeat), and the worker took no job meanwhile
// (TestClusterHubKilledDefaultTimings). A registry job the hello lists
// keeps its slot.
func TestHelloFreesRegistrySlotsItDoesNotList(t *testing.T) {
	h := startTestHub(t, testConfig(t))
	url := h.URL()
	ctx := context.Background()
	require.NoError(t, h.deps.Workers.Put(ctx, persistence.WorkerInfo{ID: "w-moved", Status: "active",
		Running: []string{"ended-while-away", "still-running"}, MaxConcurrent: 2, ReportedMaxConcurrent: 2}, time.Minute))

	l := dialRawLinkHello(t, url, "w-moved", "", messages.Frame{Type: messages.TypeHello, WorkerID: "w-moved", LanIP: "127.0.0.1",
		Version: "test", Capabilities: &messages.Capabilities{MaxConcurrent: 2, LaneURLs: laneURLs("w-moved", 2), Drivers: []string{"simulated"}},
		Stats: &messages.Stats{}, Running: []string{"still-running"}})

	a := submit(t, url, `{"mode":"noop"}`)
	// No heartbeat is sent: only the hello can have freed the slot.
	f := l.next(3 * time.Second)
	require.Equal(t, messages.TypeAssignJob, f.Type, "the slot of a job the hello leaves out was not freed (got %+v)", f)
	require.Equal(t, a.ID, f.JobID)
	b := submit(t, url, `{"mode":"noop"}`)
	require.Equal(t, "", l.next(time.Second).Type, "the job the hello lists keeps its slot: both are taken")
	l.send(messages.Frame{Type: messages.TypeJobStarted, JobID: a.ID, Attempt: f.Attempt, Lane: "sim://w-moved/lane/0"})
	l.send(messages.Frame{Type: messages.TypeJobDone, JobID: a.ID, Attempt: f.Attempt, Result: []byte(`{}`)})
	g := l.nextBut(5*time.Second, messages.TypeJobAck) // A's ack may come first
	require.Equal(t, messages.TypeAssignJob, g.Type, "A's lane freed: B goes there (got %+v)", g)
	require.Equal(t, b.ID, g.JobID)
}

// A worker's hello lists a job a fresh activation does not hold, and the
// store is asked whether the worker holds it. Meanwhile the worker's end
// of that job arrives: the job's grain frees the slot and writes the end.
// The store's answer, read before that end, says the worker holds it: it
// must not take the slot the release let go. It did, and the worker's
// only lane sat idle with a job queued until the next heartbeat.
func TestReleaseCrossingAReportCheckHoldsNoSlot(t *testing.T) {
	var jobs *lateReads
	h := startHubWrappingJobs(t, func(s persistence.JobStore) persistence.JobStore {
		jobs = &lateReads{JobStore: s, entered: make(chan struct{}), open: make(chan struct{})}
		return jobs
	})
	url := h.URL()

	// Job A is running on w-late by the store, as a grain of a hub that
	// died had claimed it.
	a := submit(t, url, `{"mode":"noop","max_attempts":1}`)
	_, err := h.deps.Jobs.Claim(context.Background(), a.ID, "w-late", time.Now())
	require.NoError(t, err)
	jobs.id.Store(a.ID)
	open := sync.OnceFunc(func() { close(jobs.open) })
	defer open()

	l := dialRawLinkHello(t, url, "w-late", "", messages.Frame{Type: messages.TypeHello, WorkerID: "w-late", LanIP: "127.0.0.1",
		Version: "test", Capabilities: &messages.Capabilities{MaxConcurrent: 1, LaneURLs: laneURLs("w-late", 1), Drivers: []string{"simulated"}},
		Stats: &messages.Stats{}, Running: []string{a.ID}})
	select {
	case <-jobs.entered:
	case <-time.After(5 * time.Second):
		t.Fatal("the hello's job was never looked up")
	}
	l.send(messages.Frame{Type: messages.TypeJobDone, JobID: a.ID, Attempt: 1, Result: []byte(`{}`)})
	require.Equal(t, persistence.StatusSucceeded, waitFinal(t, url, a.ID, 5*time.Second).Status)
	open() // the check answers now, with what it read before A's end

	b := submit(t, url, `{"mode":"noop"}`)
	f := l.nextBut(3*time.Second, messages.TypeJobAck, messages.TypeCancelJob) // A's settling, whichever comes
	require.Equal(t, messages.TypeAssignJob, f.Type, "the lane A freed was taken again by the late check (got %+v)", f)
	require.Equal(t, b.ID, f.JobID)
}

// nextBut is next, passing over frames of the types skip names.
func (l *rawLink) nextBut(d time.Duration, skip ...string) messages.Frame {
	end := time.Now().Add(d)
	for {
		f := l.next(time.Until(end))
		if !slices.Contains(skip, f.Type) {
			return f
		}
	}
}

// lateReads answers the first Get of one job with what it read, but only
// once open is closed: a read made before what happens meanwhile.
type lateReads struct {
	persistence.JobStore
	id            atomic.Value // string: the job whose first read is late
	entered, open chan struct{}
	once          sync.Once
}

func (s *lateReads) Get(ctx context.Context, id string) (persistence.Job, error) {
	j, err := s.JobStore.Get(ctx, id)
	if want, _ := s.id.Load().(string); id != want {
		return j, err
	}
	first := false
	s.once.Do(func() { first = true })
	if !first {
		return j, err
	}
	close(s.entered)
	select {
	case <-s.open:
	case <-ctx.Done():
	}
	return j, err
}
