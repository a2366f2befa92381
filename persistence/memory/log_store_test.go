package memory_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/persistence"
	"github.com/paprika-hub/paprika/persistence/memory"
	"github.com/paprika-hub/paprika/persistence/storetest"
)

func TestLogStore(t *testing.T) {
	t.Parallel()
	storetest.RunLogStore(t, func(t *testing.T) persistence.LogStore {
		return memory.NewLogStore()
	})
}

// With a one-batch buffer followers are dropped again and again; the
// follow pattern must still yield every line once, in order.
func TestLogStoreFollowAcrossDrops(t *testing.T) {
	t.Parallel()
	const total = 2000
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	s := memory.NewLogStore(memory.WithSubscriberBuffer(1))

	const followers = 3
	results := make([][]string, followers)
	errs := make([]error, followers)
	var wg sync.WaitGroup
	for k := range followers {
		wg.Go(func() { results[k], errs[k] = storetest.Follow(ctx, s, "job") })
	}
	want := make([]string, total)
	for i := range want {
		want[i] = fmt.Sprintf("line %d", i)
	}
	for from := 0; from < total; from += 10 {
		b := persistence.LogBatch{JobID: "job", From: int64(from), Lines: want[from : from+10], Done: from+10 == total}
		require.NoError(t, s.Write(ctx, []persistence.LogBatch{b}))
	}
	wg.Wait()
	for k := range followers {
		require.NoError(t, errs[k])
		require.Equal(t, want, results[k])
	}
}

func TestLogStoreDropsSlowSubscriber(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := memory.NewLogStore(memory.WithSubscriberBuffer(4))
	slow, err := s.Subscribe(ctx, "job")
	require.NoError(t, err)
	fast, err := s.Subscribe(ctx, "job")
	require.NoError(t, err)
	defer fast.Close()

	// The writer never blocks, although nobody reads slow.
	written := make(chan struct{})
	go func() {
		defer close(written)
		for i := range 10 {
			b := persistence.LogBatch{JobID: "job", From: int64(i), Lines: []string{"x"}}
			if err := s.Write(ctx, []persistence.LogBatch{b}); err != nil {
				t.Error(err)
				return
			}
			<-fast.C() // fast keeps up
		}
	}()
	select {
	case <-written:
	case <-time.After(10 * time.Second):
		t.Fatal("writer blocked by a slow subscriber")
	}

	// slow got the batches that fit, then its channel closed.
	n := 0
	for range slow.C() {
		n++
	}
	require.Equal(t, 4, n)
	require.NoError(t, slow.Close())

	length, err := s.Len(ctx, "job")
	require.NoError(t, err)
	require.EqualValues(t, 10, length, "dropping a follower loses no line")
}

func TestLogStoreWriteIsIdempotentAndExpires(t *testing.T) {
	ctx := context.Background()
	s := memory.NewLogStore(memory.WithRetention(50 * time.Millisecond))
	w := func(from int64, lines ...string) {
		require.NoError(t, s.Write(ctx, []persistence.LogBatch{{JobID: "j", From: from, Lines: lines}}))
	}
	w(0, "a", "b")
	w(0, "a", "b") // a retried write
	w(1, "b", "c") // overlapping
	lines, _, err := s.Read(ctx, "j", 0, 0)
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b", "c"}, lines)
	require.Eventually(t, func() bool {
		// writes of another job drive the pruning
		require.NoError(t, s.Write(ctx, []persistence.LogBatch{{JobID: "other", Lines: []string{"x"}}}))
		n, _ := s.Len(ctx, "j")
		return n == 0
	}, 2*time.Second, 10*time.Millisecond, "a log not written for the retention is dropped")
}
