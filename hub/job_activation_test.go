package hub

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/actors/grains"
	"github.com/paprika-hub/paprika/persistence"
)

// emptyIDJobs counts the reads of a job with no id.
type emptyIDJobs struct {
	persistence.JobStore
	empty atomic.Int64
}

func (s *emptyIDJobs) Get(ctx context.Context, id string) (persistence.Job, error) {
	if id == "" {
		s.empty.Add(1)
	}
	return s.JobStore.Get(ctx, id)
}

// TestJobActivationReadsNoEmptyID: a job grain's activation reads its own
// job only (protoactor's Started, delivered before ClusterInit, used to
// fall through to a read with an empty id).
func TestJobActivationReadsNoEmptyID(t *testing.T) {
	h, err := New(testConfig(t), testLogger(t))
	require.NoError(t, err)
	jobs := &emptyIDJobs{JobStore: h.deps.Jobs}
	h.deps.Jobs = jobs
	require.NoError(t, h.Start(context.Background()))
	t.Cleanup(func() { _ = h.Stop(context.Background()) })
	startAgent(t, h.URL(), "wa", 2)
	for range 5 {
		j := submit(t, h.URL(), `{"mode":"noop"}`)
		require.Equal(t, persistence.StatusSucceeded, waitFinal(t, h.URL(), j.ID, 20*time.Second).Status)
	}
	require.Zero(t, jobs.empty.Load(), "no store read with an empty job id")
}

// TestFinishedJobGrainsPassivateSoon: a finished job's grain stops a few
// seconds after its job ends (FinalPassivate, 3 s), not after the 30 s idle
// of grains in general, so a busy hub does not hold every job of the last
// half minute in memory; the job reads the same from the store afterwards.
func TestFinishedJobGrainsPassivateSoon(t *testing.T) {
	h, err := New(testConfig(t), testLogger(t))
	require.NoError(t, err)
	require.NoError(t, h.Start(context.Background()))
	t.Cleanup(func() { _ = h.Stop(context.Background()) })
	startAgent(t, h.URL(), "wa", 2)
	var ids []string
	for range 5 {
		j := submit(t, h.URL(), `{"mode":"noop"}`)
		require.Equal(t, persistence.StatusSucceeded, waitFinal(t, h.URL(), j.ID, 20*time.Second).Status)
		ids = append(ids, j.ID)
	}
	jobGrains := func() int32 { return h.member.Cluster.GetClusterKind(grains.KindJob).Count() }
	require.Positive(t, jobGrains(), "the finished jobs' grains are up at first")
	require.Eventually(t, func() bool { return jobGrains() == 0 }, 12*time.Second, 100*time.Millisecond,
		"finished jobs' grains still up: %d", jobGrains())
	for _, id := range ids {
		require.Equal(t, persistence.StatusSucceeded, getJob(t, h.URL(), id).Status)
	}
}
