package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/persistence"
)

// BatchCreator is a job store that creates several jobs in one call
// (bolt.JobStore.CreateMany, mysql.JobStore.CreateMany).
type BatchCreator interface {
	persistence.JobStore
	CreateMany(ctx context.Context, jobs []persistence.Job) []persistence.Created
}

// RunCreateMany is the contract of CreateMany, each subtest on a store of
// its own: every job answered as Create would answer it, in the call's
// order, and created in that order.
func RunCreateMany(t *testing.T, newStore func(t *testing.T) BatchCreator) {
	t.Helper()
	for _, c := range []struct {
		name string
		fn   func(*testing.T, BatchCreator)
	}{
		{"OrderAndAnswers", testCreateManyOrderAndAnswers},
		{"KeysRaceCreates", testCreateManyKeysRace},
		{"EndedContext", testCreateManyEndedContext},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.fn(t, newStore(t))
		})
	}
}

// CreateManyBatch is the batch of testCreateManyOrderAndAnswers: n jobs
// labelled i by their index, of which 5 names the stored key "k-old", 7
// and 9 share "k-new", 11 and 13 are not valid new jobs. A store's own
// test may send it too, to count its commits or round trips.
func CreateManyBatch(n int) []persistence.Job {
	jobs := make([]persistence.Job, n)
	for i := range jobs {
		jobs[i] = persistence.Job{Mode: "noop", MaxAttempts: 1, TimeoutS: 60, Labels: map[string]string{"i": fmt.Sprint(i)}}
	}
	jobs[5].IdempotencyKey = "k-old"
	jobs[7].IdempotencyKey = "k-new"
	jobs[9].IdempotencyKey = "k-new"
	jobs[11].Priority = persistence.MaxPriority + 1
	jobs[13].WorkerID = "w-not-new"
	return jobs
}

func testCreateManyOrderAndAnswers(t *testing.T, s BatchCreator) {
	ctx := context.Background()
	old, created, err := s.Create(ctx, persistence.Job{Mode: "noop", MaxAttempts: 1, TimeoutS: 60, IdempotencyKey: "k-old"})
	require.NoError(t, err)
	require.True(t, created)

	const n = 40
	out := s.CreateMany(ctx, CreateManyBatch(n))
	require.Len(t, out, n)
	var made []string
	for i, r := range out {
		switch i {
		case 5:
			require.NoError(t, r.Err)
			require.False(t, r.Created, "a stored key")
			require.Equal(t, old.ID, r.Job.ID)
		case 9:
			require.NoError(t, r.Err)
			require.False(t, r.Created, "a key taken earlier in the batch")
			require.Equal(t, out[7].Job.ID, r.Job.ID)
		case 11, 13:
			require.Error(t, r.Err, "item %d is refused alone", i)
			require.False(t, r.Created)
		default:
			require.NoError(t, r.Err, "item %d", i)
			require.True(t, r.Created, "item %d", i)
			require.Equal(t, fmt.Sprint(i), r.Job.Labels["i"])
			got, err := s.Get(ctx, r.Job.ID)
			require.NoError(t, err)
			require.Equal(t, persistence.StatusQueued, got.Status)
			require.Equal(t, fmt.Sprint(i), got.Labels["i"])
			made = append(made, r.Job.ID)
		}
	}
	listed, _, err := s.List(ctx, persistence.ListQuery{Status: persistence.StatusQueued, OldestFirst: true, Limit: 1000})
	require.NoError(t, err)
	var order []string
	for _, j := range listed {
		if j.ID != old.ID {
			order = append(order, j.ID)
		}
	}
	require.Equal(t, made, order, "created in the batch's order")
}

// testCreateManyKeysRace: batches, forwards and backwards, and single
// creates that share idempotency keys, all at once, create one job per
// key, answered to every one of them, and none waits for ever.
func testCreateManyKeysRace(t *testing.T, s BatchCreator) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	keys := []string{"a", "b", "c", "d", "e", "f"}
	var (
		mu  sync.Mutex
		ids = map[string]map[string]bool{}
		wg  sync.WaitGroup
	)
	note := func(key, id string) {
		mu.Lock()
		defer mu.Unlock()
		if ids[key] == nil {
			ids[key] = map[string]bool{}
		}
		ids[key][id] = true
	}
	for round := range 10 {
		for w := range 4 {
			wg.Go(func() {
				batch := KeyedBatch(keys, (round+w)%2 == 1)
				for i, r := range s.CreateMany(ctx, batch) {
					if r.Err != nil {
						t.Errorf("batch item %d: %v", i, r.Err)
						return
					}
					note(batch[i].IdempotencyKey, r.Job.ID)
				}
			})
			wg.Go(func() {
				k := keys[(round+w)%len(keys)]
				j, _, err := s.Create(ctx, persistence.Job{Mode: "noop", MaxAttempts: 1, TimeoutS: 60, IdempotencyKey: k})
				if err != nil {
					t.Errorf("create %s: %v", k, err)
					return
				}
				note(k, j.ID)
			})
		}
	}
	wg.Wait()
	require.NoError(t, ctx.Err(), "nothing waited for ever")
	for _, k := range keys {
		require.Len(t, ids[k], 1, "key %s: one job answered to all", k)
	}
	all, _, err := s.List(ctx, persistence.ListQuery{Limit: 1000})
	require.NoError(t, err)
	require.Len(t, all, len(keys), "one job per key")
}

// KeyedBatch is a batch of no-op jobs, one per key of keys, in their
// order or backwards.
func KeyedBatch(keys []string, backwards bool) []persistence.Job {
	batch := make([]persistence.Job, len(keys))
	for i, k := range keys {
		if backwards {
			k = keys[len(keys)-1-i]
		}
		batch[i] = persistence.Job{Mode: "noop", MaxAttempts: 1, TimeoutS: 60, IdempotencyKey: k}
	}
	return batch
}

// testCreateManyEndedContext: a call whose context ended first writes
// nothing and fails every job with the context's error.
func testCreateManyEndedContext(t *testing.T, s BatchCreator) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, r := range s.CreateMany(ctx, []persistence.Job{{Mode: "noop"}, {Mode: "noop"}}) {
		require.True(t, errors.Is(r.Err, context.Canceled), "%v", r.Err)
		require.False(t, r.Created)
	}
	all, _, err := s.List(context.Background(), persistence.ListQuery{Limit: 10})
	require.NoError(t, err)
	require.Empty(t, all)
}
