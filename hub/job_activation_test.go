package hub

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

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
