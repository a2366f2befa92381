// Package deadline hands out timeout contexts for the store calls of
// actor turns without a context and a runtime timer per call: calls made
// within a short window with the same timeout share one context, whose
// deadline is the latest any of them needs. A job's life made three or
// more such calls, each a context.WithTimeout — its cancelCtx, its Done
// channel and a runtime timer armed and stopped — though none of them is
// ever cancelled early and the timeout is only a bound on a store that
// stopped answering.
package deadline

import (
	"context"
	"sync"
	"time"
)

// Slack bounds how much later than asked a context from Within may end:
// a sixteenth of the timeout, at least 1 ms and at most 250 ms.
func Slack(d time.Duration) time.Duration {
	return min(max(d/16, time.Millisecond), 250*time.Millisecond)
}

// maxWindows bounds the timeouts kept: Within is for a handful of fixed
// timeouts, and computed ones must not grow the table without end.
const maxWindows = 64

// window is the context shared by the calls made from `from` to
// from+Slack(d): it ends at from+d+Slack(d), no sooner than d after any
// of them and at most Slack(d) later.
type window struct {
	ctx  context.Context
	from time.Time
	// cancel is never called early: its holders run until the deadline.
	// It is kept only to own the context's timer, which ends itself then.
	cancel context.CancelFunc
}

var (
	mu      sync.Mutex
	windows = map[time.Duration]*window{}
)

// Within returns a context that ends with context.DeadlineExceeded no
// sooner than d from now and at most Slack(d) later. It is never
// cancelled otherwise, so a caller has nothing to release; what a callee
// derives from it it cancels itself, as from any context. d ≤ 0 gives an
// ended context.
func Within(d time.Duration) context.Context {
	now := time.Now()
	if d <= 0 {
		ctx, cancel := context.WithDeadline(context.Background(), now)
		cancel() // already past its deadline: ctx.Err() stays DeadlineExceeded
		return ctx
	}
	slack := Slack(d)
	mu.Lock()
	defer mu.Unlock()
	w := windows[d]
	if w == nil || now.Before(w.from) || now.Sub(w.from) >= slack {
		if w == nil && len(windows) >= maxWindows {
			clear(windows) // contexts already handed out stay valid
		}
		ctx, cancel := context.WithDeadline(context.Background(), now.Add(d+slack))
		w = &window{ctx: ctx, from: now, cancel: cancel}
		windows[d] = w
	}
	return w.ctx
}
