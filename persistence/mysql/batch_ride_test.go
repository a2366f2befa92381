package mysql

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// rideRecorder is a batcher's run that records its batches and answers
// each call with its own request.
type rideRecorder struct {
	mu      sync.Mutex
	batches [][]string
}

func (r *rideRecorder) run(_ context.Context, calls []*call[string, string]) {
	var b []string
	for _, c := range calls {
		b = append(b, c.req)
		c.res = c.req
	}
	r.mu.Lock()
	r.batches = append(r.batches, b)
	r.mu.Unlock()
}

func (r *rideRecorder) got() [][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][]string(nil), r.batches...)
}

// TestRideGoesWithTheNextTrip: a riding call leads no trip while another
// call comes to lead one: it goes in that trip, answered with it. Alone,
// it leads its own once its wait passed; a caller that leaves first is
// never sent.
func TestRideGoesWithTheNextTrip(t *testing.T) {
	rec := &rideRecorder{}
	b := newBatcher(rec.run, 0)
	ctx := t.Context()

	type answer struct {
		res string
		err error
	}
	rode := make(chan answer, 1)
	go func() {
		res, err := b.ride(ctx, "finish", 1, time.Hour) // would hang the test if it waited it out
		rode <- answer{res, err}
	}()
	require.Eventually(t, func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return len(b.pending) == 1
	}, 10*time.Second, time.Millisecond, "the riding call waits, leading nothing")
	require.Empty(t, rec.got())
	res, err := b.do(ctx, "claim", 1)
	require.NoError(t, err)
	require.Equal(t, "claim", res)
	require.Equal(t, answer{res: "finish"}, <-rode)
	require.Equal(t, [][]string{{"finish", "claim"}}, rec.got(), "one trip carried both")

	res, err = b.ride(ctx, "lane", 1, time.Millisecond)
	require.NoError(t, err)
	require.Equal(t, "lane", res)
	require.Equal(t, [][]string{{"finish", "claim"}, {"lane"}}, rec.got(), "alone, it led its own trip")

	gone, cancel := context.WithCancel(ctx)
	cancel()
	_, err = b.ride(gone, "late", 1, time.Hour)
	require.ErrorIs(t, err, context.Canceled)
	_, err = b.do(ctx, "next", 1)
	require.NoError(t, err)
	require.Equal(t, [][]string{{"finish", "claim"}, {"lane"}, {"next"}}, rec.got(), "the call that left was not sent")

	require.Zero(t, b.inFlight())
}

// TestSecondTripOnlyWhenTheFirstIsSlow: while a trip is on the wire, the
// calls that come wait for it; once it has been there b.slow, a second
// trip takes them without waiting for it.
func TestSecondTripOnlyWhenTheFirstIsSlow(t *testing.T) {
	rec := &rideRecorder{}
	hold := make(chan struct{})
	var (
		mu                    sync.Mutex
		stuckLeft, secondLeft time.Time
	)
	b := newBatcher(func(ctx context.Context, calls []*call[string, string]) {
		mu.Lock()
		stuck := calls[0].req == "stuck"
		if stuck {
			stuckLeft = time.Now()
		} else if secondLeft.IsZero() {
			secondLeft = time.Now()
		}
		mu.Unlock()
		if stuck {
			<-hold
		}
		rec.run(ctx, calls)
	}, 0)
	ctx := t.Context()
	answers := make(chan string, 3)
	ask := func(req string) {
		go func() {
			res, err := b.do(ctx, req, 1)
			require.NoError(t, err)
			answers <- res
		}()
	}
	ask("stuck")
	require.Eventually(t, func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.inFlight() == 1
	}, 10*time.Second, time.Millisecond)
	ask("b")
	ask("c")
	// Both are answered while the stuck trip is still on the wire.
	require.ElementsMatch(t, []string{"b", "c"}, []string{<-answers, <-answers})
	mu.Lock()
	require.GreaterOrEqual(t, secondLeft.Sub(stuckLeft), slowTrip, "no second trip before the first was slow")
	mu.Unlock()
	require.NotContains(t, rec.got(), []string{"stuck"}, "the stuck trip is still on the wire")
	close(hold)
	require.Equal(t, "stuck", <-answers)
	require.Eventually(t, func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.inFlight() == 0
	}, 10*time.Second, time.Millisecond)
}

// TestOneTripAtATime: calls that come while a quick trip is on the wire
// wait and go together in the next, never in a second trip of their own.
func TestOneTripAtATime(t *testing.T) {
	rec := &rideRecorder{}
	gate := make(chan struct{})
	b := newBatcher(func(ctx context.Context, calls []*call[string, string]) {
		if calls[0].req == "a" {
			<-gate
		}
		rec.run(ctx, calls)
	}, 0)
	b.slow = time.Hour // this trip is never slow, however long the test takes
	ctx := t.Context()
	var wg sync.WaitGroup
	do := func(req string) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := b.do(ctx, req, 1)
			require.NoError(t, err)
		}()
	}
	do("a")
	require.Eventually(t, func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.inFlight() == 1 && len(b.pending) == 0
	}, 10*time.Second, time.Millisecond)
	for _, r := range []string{"b", "c", "d"} {
		do(r)
	}
	require.Eventually(t, func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return len(b.pending) == 3
	}, 10*time.Second, time.Millisecond)
	b.mu.Lock()
	require.Equal(t, 1, b.inFlight(), "no second trip while the first is quick")
	b.mu.Unlock()
	close(gate)
	wg.Wait()
	got := rec.got()
	require.Len(t, got, 2)
	require.ElementsMatch(t, []string{"b", "c", "d"}, got[1])
}
