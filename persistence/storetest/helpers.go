package storetest

import (
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/persistence"
)

// subtest is one case of a conformance suite, run on a store of type S.
type subtest[S any] struct {
	name string
	run  func(t *testing.T, s S)
}

// runSuite runs each case as a parallel subtest of t on a store of its own,
// so that no case sees another's data.
func runSuite[S any](t *testing.T, newStore func(t *testing.T) S, tests []subtest[S]) {
	t.Helper()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t, newStore(t))
		})
	}
}

// AtOnce runs f(0) … f(n-1) in n goroutines released together, so that the
// calls race, and returns what each returned, by i.
func AtOnce[T any](n int, f func(i int) (T, error)) ([]T, []error) {
	vals := make([]T, n)
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			vals[i], errs[i] = f(i)
		})
	}
	close(start)
	wg.Wait()
	return vals, errs
}

// waitTimeout bounds every polling wait of the suite; waits normally end
// within a few hundred milliseconds.
const waitTimeout = 10 * time.Second

// WaitFor polls cond until it is true, failing t after waitTimeout (10 s).
// It is the suite's only way to wait for time to pass (nats checkFor), and
// the stores' own tests use it too.
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", waitTimeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// requireTime checks that got is want, in UTC, to the millisecond.
func requireTime(t *testing.T, want, got time.Time, field string) {
	t.Helper()
	if want.IsZero() {
		require.True(t, got.IsZero(), "%s: want zero, got %s", field, got)
		return
	}
	require.Equal(t, time.UTC, got.Location(), "%s: not UTC", field)
	require.WithinDuration(t, want, got, time.Millisecond, field)
}

// requireJSON checks two JSON documents are equal; empty and null match.
func requireJSON(t *testing.T, want, got json.RawMessage, field string) {
	t.Helper()
	empty := func(m json.RawMessage) bool { return len(m) == 0 || string(m) == "null" }
	if empty(want) {
		require.True(t, empty(got), "%s: want empty, got %s", field, got)
		return
	}
	require.JSONEq(t, string(want), string(got), field)
}

// requireJob checks got equals want field by field, tolerating what stores
// may legitimately change: nil versus empty slices and maps, JSON spacing,
// time zone and sub-millisecond precision.
func requireJob(t *testing.T, want, got persistence.Job) {
	t.Helper()
	require.Equal(t, want.ID, got.ID, "id")
	require.Equal(t, want.Mode, got.Mode, "mode")
	require.Equal(t, want.Status, got.Status, "status")
	require.Equal(t, want.Reason, got.Reason, "reason")
	require.Equal(t, want.Error, got.Error, "error")
	require.Equal(t, want.WorkerID, got.WorkerID, "worker_id")
	require.Equal(t, want.Lane, got.Lane, "lane")
	require.Equal(t, want.Attempts, got.Attempts, "attempts")
	require.Equal(t, want.MaxAttempts, got.MaxAttempts, "max_attempts")
	require.Equal(t, want.TimeoutS, got.TimeoutS, "timeout_s")
	require.Equal(t, want.IdempotencyKey, got.IdempotencyKey, "idempotency_key")
	requireJSON(t, want.Params, got.Params, "params")
	requireJSON(t, want.Result, got.Result, "result")
	requireTime(t, want.CreatedAt, got.CreatedAt, "created_at")
	requireTime(t, want.StartedAt, got.StartedAt, "started_at")
	requireTime(t, want.FinishedAt, got.FinishedAt, "finished_at")
	if len(want.Assets) == 0 {
		require.Empty(t, got.Assets, "assets")
	} else {
		require.Equal(t, want.Assets, got.Assets, "assets")
	}
	if len(want.Labels) == 0 {
		require.Empty(t, got.Labels, "labels")
	} else {
		require.Equal(t, want.Labels, got.Labels, "labels")
	}
}

// CreatePaced creates n no-op jobs in s, one every every, each in its own
// goroutine (a steady load of lone writes, not a burst), and returns once
// all are stored.
func CreatePaced(t *testing.T, s persistence.JobStore, n int, every time.Duration) {
	t.Helper()
	var wg sync.WaitGroup
	tick := time.NewTicker(every)
	defer tick.Stop()
	for range n {
		<-tick.C
		wg.Go(func() {
			_, _, err := s.Create(t.Context(), persistence.Job{Mode: "noop", TimeoutS: 60, MaxAttempts: 1})
			assert.NoError(t, err)
		})
	}
	wg.Wait()
}
