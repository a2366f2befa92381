package deadline

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

func TestWithinEndsNoSoonerThanAskedAndAtMostSlackLater(t *testing.T) {
	const d = 800 * time.Millisecond
	for range 20 {
		before := time.Now()
		ctx := Within(d)
		after := time.Now()
		dl, ok := ctx.Deadline()
		if !ok {
			t.Fatal("no deadline")
		}
		if dl.Before(before.Add(d)) {
			t.Fatalf("deadline %v after the call, sooner than %v", dl.Sub(before), d)
		}
		if dl.After(after.Add(d + Slack(d))) {
			t.Fatalf("deadline %v after the call, more than %v + slack %v", dl.Sub(after), d, Slack(d))
		}
		time.Sleep(Slack(d) / 3)
	}
}

func TestWithinSharesAContextInAWindowOnly(t *testing.T) {
	const d = 400 * time.Millisecond // slack 25 ms
	a, b := Within(d), Within(d)
	if a != b {
		t.Fatal("two calls at once got two contexts")
	}
	time.Sleep(Slack(d) + 5*time.Millisecond)
	if c := Within(d); c == a {
		t.Fatal("a call after the window got the old window's context")
	}
	if o := Within(d + time.Millisecond); o == a {
		t.Fatal("another timeout shares a context")
	}
}

func TestWithinEndsWithDeadlineExceeded(t *testing.T) {
	ctx := Within(20 * time.Millisecond)
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the context never ended")
	}
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("err %v, want DeadlineExceeded", ctx.Err())
	}
	if err := Within(0).Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Within(0): err %v, want DeadlineExceeded", err)
	}
	if ctx := Within(20 * time.Millisecond); ctx.Err() != nil {
		t.Fatalf("a call after the last window ended got an ended context: %v", ctx.Err())
	}
}

func TestWithinBoundsItsTable(t *testing.T) {
	for i := range 3 * maxWindows {
		_ = Within(time.Hour + time.Duration(i))
	}
	mu.Lock()
	n := len(windows)
	mu.Unlock()
	if n > maxWindows {
		t.Fatalf("%d windows kept, want at most %d", n, maxWindows)
	}
}

func TestWithinConcurrent(t *testing.T) {
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 1000 {
				if Within(time.Second).Err() != nil {
					t.Error("ended context")
					return
				}
			}
		})
	}
	wg.Wait()
}

func BenchmarkWithin(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = Within(5 * time.Second)
	}
}

func BenchmarkWithTimeout(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		select { // Done makes the channel, as a store's select does
		case <-ctx.Done():
		default:
		}
		cancel()
	}
}
