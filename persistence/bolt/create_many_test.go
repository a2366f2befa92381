package bolt_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/persistence"
	"github.com/paprika-hub/paprika/persistence/bolt"
	"github.com/paprika-hub/paprika/persistence/storetest"
)

// batching is a job store whose Create goes through CreateMany with one
// job, so the conformance suite holds CreateMany to Create's answers.
type batching struct{ *bolt.JobStore }

func (b batching) Create(ctx context.Context, j persistence.Job) (persistence.Job, bool, error) {
	r := b.CreateMany(ctx, []persistence.Job{j})[0]
	return r.Job, r.Created, r.Err
}

func TestJobStoreCreateMany(t *testing.T) {
	t.Parallel()
	storetest.RunJobStore(t, func(t *testing.T) persistence.JobStore {
		s, _ := open(t)
		return batching{s}
	})
	storetest.RunCreateMany(t, func(t *testing.T) storetest.BatchCreator {
		s, _ := open(t, bolt.WithCreateWait(2*time.Millisecond))
		return s
	})
}

// TestCreateManyIsOneCommit: a batch's jobs are written by one commit.
func TestCreateManyIsOneCommit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := open(t)
	_, _, err := s.Create(ctx, persistence.Job{Mode: "noop", IdempotencyKey: "k-old"})
	require.NoError(t, err)
	before := bolt.Commits(s)
	out := s.CreateMany(ctx, storetest.CreateManyBatch(40))
	require.Equal(t, int64(1), bolt.Commits(s)-before, "one commit for the batch")
	require.True(t, out[0].Created)
}

// TestCreateManyDoesNotBeatAnAnnouncedCreate: an announced create
// (CreateAnnounced) is certain of its key, so a batch racing it for the
// key never takes it first — the job it announced is the key's — and two
// batches taking the same keys in opposite orders do not wait on each
// other.
func TestCreateManyDoesNotBeatAnAnnouncedCreate(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, _ := open(t, bolt.WithCreateWait(2*time.Millisecond))
	var wg sync.WaitGroup
	for round := range 50 {
		// Fresh keys each round: a create of a stored key announces nothing.
		keys := []string{"a", "b", "c", "d", "e", "f"}
		for i := range keys {
			keys[i] += fmt.Sprint(round)
		}
		for w := range 4 {
			wg.Go(func() {
				for i, r := range s.CreateMany(ctx, storetest.KeyedBatch(keys, (round+w)%2 == 1)) {
					if r.Err != nil {
						t.Errorf("batch item %d: %v", i, r.Err)
					}
				}
			})
			wg.Go(func() {
				k := keys[(round+w)%len(keys)]
				var announced string
				j, _, err := s.CreateAnnounced(ctx, persistence.Job{Mode: "noop", IdempotencyKey: k},
					func(j persistence.Job) { announced = j.ID })
				if err != nil {
					t.Errorf("create %s: %v", k, err)
					return
				}
				if announced != "" && announced != j.ID {
					t.Errorf("key %s: announced %s, which a batch beat to the key (%s)", k, announced, j.ID)
				}
			})
		}
	}
	wg.Wait()
	require.NoError(t, ctx.Err(), "nothing waited for ever")
}
