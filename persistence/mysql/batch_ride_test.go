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

	require.Zero(t, b.inFlight)
}
