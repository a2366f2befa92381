package memory_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/persistence"
	"github.com/paprika-hub/paprika/persistence/memory"
	"github.com/paprika-hub/paprika/persistence/storetest"
)

func TestJobStore(t *testing.T) {
	t.Parallel()
	storetest.RunJobStore(t, func(t *testing.T) persistence.JobStore {
		s := memory.NewJobStore()
		t.Cleanup(func() { require.NoError(t, s.Close()) })
		return s
	})
}

func TestJobStoreClosed(t *testing.T) {
	t.Parallel()
	s := memory.NewJobStore()
	require.NoError(t, s.Close())
	_, err := s.Get(context.Background(), "x")
	require.ErrorIs(t, err, persistence.ErrUnavailable)
	_, _, err = s.Create(context.Background(), persistence.Job{Mode: "noop"})
	require.ErrorIs(t, err, persistence.ErrUnavailable)
}
