package grains

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/persistence"
)

// TestRetryWaitDefault: without a schedule of its own a job waits n⁴
// seconds after attempt n (River's default), ±10 %, capped.
func TestRetryWaitDefault(t *testing.T) {
	for n, want := range map[int]time.Duration{1: time.Second, 2: 16 * time.Second, 3: 81 * time.Second, 5: 625 * time.Second} {
		require.Equal(t, want, RetryWait(nil, time.Hour, n, 0), "attempt %d", n)
		require.Equal(t, want*9/10, RetryWait(nil, time.Hour, n, -1), "attempt %d, least jitter", n)
		require.Equal(t, want*11/10, RetryWait(nil, time.Hour, n, 1), "attempt %d, most jitter", n)
	}
	require.Equal(t, time.Hour, RetryWait(nil, time.Hour, 9, 0), "9⁴ s is over the cap")
	require.Equal(t, time.Hour, RetryWait(nil, 0, 100, 0), "an unset cap is 1 h")
	require.Equal(t, 10*time.Minute, RetryWait(nil, 10*time.Minute, 7, 0))
	require.Equal(t, time.Second, RetryWait(nil, time.Hour, 0, 0), "attempt 0 counts as 1")
}

// TestRetryWaitOwnSchedule: base_s scales n⁴, max_s caps it, and the
// jitter spreads waits over exactly ±10 % (u outside [-1,1] is clamped).
func TestRetryWaitOwnSchedule(t *testing.T) {
	b := &persistence.RetryBackoff{BaseS: 0.05, MaxS: 2}
	require.Equal(t, 50*time.Millisecond, RetryWait(b, time.Hour, 1, 0))
	require.Equal(t, 800*time.Millisecond, RetryWait(b, time.Hour, 2, 0))
	require.Equal(t, 2*time.Second, RetryWait(b, time.Hour, 3, 0), "4.05 s capped at max_s")
	require.Equal(t, 2200*time.Millisecond, RetryWait(b, time.Hour, 3, 5), "jitter is clamped")

	rng := rand.New(rand.NewPCG(1, 2))
	lo, hi := time.Duration(1<<62), time.Duration(0)
	for range 10000 {
		w := RetryWait(b, time.Hour, 2, rng.Float64()*2-1)
		lo, hi = min(lo, w), max(hi, w)
	}
	require.GreaterOrEqual(t, lo, 720*time.Millisecond)
	require.LessOrEqual(t, hi, 880*time.Millisecond)
	require.Less(t, lo, 730*time.Millisecond, "the jitter reaches its low end")
	require.Greater(t, hi, 870*time.Millisecond, "the jitter reaches its high end")
}

// TestRetryBackoffCheck: the bounds POST /jobs enforces.
func TestRetryBackoffCheck(t *testing.T) {
	var none *persistence.RetryBackoff
	require.NoError(t, none.Check())
	require.NoError(t, (&persistence.RetryBackoff{BaseS: 0.001, MaxS: 0.001}).Check())
	require.NoError(t, (&persistence.RetryBackoff{BaseS: 1, MaxS: persistence.MaxRetryWaitS}).Check())
	for _, b := range []persistence.RetryBackoff{{BaseS: 0, MaxS: 1}, {BaseS: -1, MaxS: 1}, {BaseS: 2, MaxS: 1},
		{BaseS: 1, MaxS: persistence.MaxRetryWaitS + 1}, {BaseS: persistence.MaxRetryWaitS + 1, MaxS: persistence.MaxRetryWaitS + 2}} {
		require.Error(t, b.Check(), "%+v", b)
	}
}
