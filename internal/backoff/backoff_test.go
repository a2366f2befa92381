package backoff

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"
)

func TestDelayGrowsAndCaps(t *testing.T) {
	t.Parallel()
	p := Policy{Base: 100 * time.Millisecond, Max: time.Second}
	want := []time.Duration{100, 200, 400, 800, 1000, 1000}
	for i, w := range want {
		if got := p.Delay(i); got != w*time.Millisecond {
			t.Errorf("Delay(%d) = %s, want %s", i, got, w*time.Millisecond)
		}
	}
	if got := p.Delay(1 << 30); got != time.Second {
		t.Errorf("a huge attempt = %s, want the cap", got)
	}
}

func TestDelayFactor(t *testing.T) {
	t.Parallel()
	// 1.5 reproduces d += d/2 exactly, odd nanoseconds included.
	p := Policy{Base: 101, Max: time.Hour, Factor: 1.5}
	d := time.Duration(101)
	for i := range 20 {
		if got := p.Delay(i); got != d {
			t.Fatalf("Delay(%d) = %d, want %d", i, got, d)
		}
		d += d / 2
	}
	if got := (Policy{Base: time.Second, Factor: 0.5}).Delay(5); got != time.Second {
		t.Errorf("a factor below 1 = %s, want the constant base", got)
	}
}

func TestDelayEdges(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		p    Policy
		n    int
		want time.Duration // -1: any delay that is not negative
	}{
		{"zero policy", Policy{}, 3, 0},
		{"negative base", Policy{Base: -time.Second, Max: time.Second}, 2, 0},
		{"base above max", Policy{Base: time.Minute, Max: time.Second}, 0, time.Second},
		{"no cap does not overflow", Policy{Base: time.Second}, 200, math.MaxInt64},
		{"full jitter of the largest delay", Policy{Base: math.MaxInt64, Jitter: 1}, 0, -1},
		{"jitter of 1ns is none", Policy{Base: 1, Jitter: 0.5}, 0, 1},
	}
	for _, c := range cases {
		got := c.p.Delay(c.n)
		if c.want >= 0 && got != c.want || got < 0 {
			t.Errorf("%s: Delay(%d) = %d, want %d", c.name, c.n, got, c.want)
		}
	}
}

func TestDelayJitter(t *testing.T) {
	t.Parallel()
	p := Policy{Base: 200 * time.Millisecond, Max: 5 * time.Second, Jitter: 0.5}
	for i, w := range []time.Duration{200, 400, 800, 1600, 3200, 5000, 5000} {
		w *= time.Millisecond
		lo, hi, seen := w, time.Duration(0), map[time.Duration]bool{}
		for range 200 {
			d := p.Delay(i)
			if d < w/2 || d > w {
				t.Fatalf("Delay(%d) = %s, outside [%s, %s]", i, d, w/2, w)
			}
			lo, hi, seen[d] = min(lo, d), max(hi, d), true
		}
		// 200 uniform draws over [w/2, w] spread over most of it.
		if len(seen) < 100 || hi-lo < w/4 {
			t.Errorf("Delay(%d): %d distinct values in [%s, %s]: not jittered", i, len(seen), lo, hi)
		}
	}
	for _, share := range []float64{-1, 0} {
		if got := (Policy{Base: time.Second, Jitter: share}).Delay(0); got != time.Second {
			t.Errorf("jitter %v: %s, want none", share, got)
		}
	}
	for range 100 {
		if got := (Policy{Base: time.Second, Jitter: 7}).Delay(0); got < 0 || got > time.Second {
			t.Fatalf("jitter above 1 counts as 1: got %s", got)
		}
	}
}

func TestSleepWaits(t *testing.T) {
	t.Parallel()
	start := time.Now()
	if err := Sleep(context.Background(), 20*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 20*time.Millisecond {
		t.Errorf("returned after %s", took)
	}
	if err := Sleep(context.Background(), 0); err != nil {
		t.Errorf("d = 0: %v", err)
	}
	if err := Sleep(context.Background(), -time.Second); err != nil {
		t.Errorf("d < 0: %v", err)
	}
}

func TestSleepEndsWithContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		time.Sleep(10 * time.Millisecond)
		cancel()
	}()
	start := time.Now()
	if err := Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("cancel took %s to end the sleep", took)
	}

	// An ended context wins even over a delay that needs no waiting.
	for _, d := range []time.Duration{0, time.Nanosecond, time.Hour} {
		if err := Sleep(ctx, d); !errors.Is(err, context.Canceled) {
			t.Errorf("ended ctx, d = %s: err = %v", d, err)
		}
	}
	dctx, dcancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer dcancel()
	if err := Sleep(dctx, time.Hour); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("deadline: err = %v", err)
	}
}
