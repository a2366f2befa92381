package storetest

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/persistence"
)

// testJobClaimRace has 8 claimers go through the same 1,000 queued jobs in
// the same order, so they collide on every job; each job must be won by
// exactly one of them, and every loss must be ErrConflict.
func testJobClaimRace(t *testing.T, s persistence.JobStore) {
	const (
		jobs     = 1000
		claimers = 8
	)
	ctx := t.Context()
	idList := make([]string, jobs)
	base := time.Now().Add(-time.Hour)
	for i := range jobs {
		j := newJob(i)
		j.CreatedAt = base.Add(time.Duration(i) * time.Millisecond)
		idList[i] = mustCreate(t, s, j).ID
	}

	var (
		wins   [jobs]atomic.Int32
		winner [jobs]atomic.Int32 // claimer index + 1
		errs   = make(chan error, claimers)
		start  = make(chan struct{})
		wg     sync.WaitGroup
	)
	for c := range claimers {
		wg.Go(func() {
			<-start
			worker := fmt.Sprintf("w%d", c)
			for i, id := range idList {
				_, err := s.Claim(ctx, id, worker, time.Now())
				switch {
				case err == nil:
					wins[i].Add(1)
					winner[i].Store(int32(c + 1))
				case !errors.Is(err, persistence.ErrConflict):
					errs <- fmt.Errorf("claimer %d, job %d: %w", c, i, err)
					return
				}
			}
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}

	total := 0
	for i := range jobs {
		require.EqualValues(t, 1, wins[i].Load(), "job %d claimed %d times", i, wins[i].Load())
		total += int(wins[i].Load())
	}
	require.Equal(t, jobs, total)

	running := listAll(t, s, persistence.ListQuery{Status: persistence.StatusRunning, Limit: 1000}, nil)
	require.Len(t, running, jobs)
	byID := make(map[string]persistence.Job, jobs)
	for _, j := range running {
		byID[j.ID] = j
	}
	for i, id := range idList {
		j := byID[id]
		require.Equal(t, 1, j.Attempts, "job %d", i)
		require.Equal(t, fmt.Sprintf("w%d", winner[i].Load()-1), j.WorkerID, "job %d", i)
	}
}
