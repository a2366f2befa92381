// Package backoff is the one retry-delay policy and the one
// context-aware sleep of the module, so that every retry loop (agent
// reconnects and uploads, the client's retries and polls, the load
// generator) computes its pauses the same way and never outlives its
// context.
package backoff

import (
	"cmp"
	"context"
	"math"
	"math/rand/v2"
	"time"
)

// Policy describes the delays of a retry loop: Base before the first retry,
// multiplied by Factor per further attempt, capped at Max, with an optional
// random share. The zero value (or a negative Base) waits not at all. A
// Policy holds no state, so one may be shared by concurrent loops, each
// counting its own attempts.
type Policy struct {
	// Base is the delay of attempt 0.
	Base time.Duration
	// Max caps every delay; zero or less means no cap.
	Max time.Duration
	// Factor is the growth per attempt; zero means 2 (doubling), and a
	// value below 1 counts as 1 (a constant delay).
	Factor float64
	// Jitter is the share of each delay drawn at random: a delay d becomes
	// a uniform pick in [d-Jitter*d, d], so loops that failed together do
	// not retry together. 0 means none, 0.5 "the upper half"; it is clamped
	// to [0, 1].
	Jitter float64
}

// Delay is the pause before retry number attempt+1 (attempt counts from 0):
// min(Base*Factor^attempt, Max), then jittered. It never overflows.
func (p Policy) Delay(attempt int) time.Duration {
	limit := p.Max
	if limit <= 0 {
		limit = math.MaxInt64
	}
	d := max(p.Base, 0)
	// Grow step by step rather than with math.Pow: the product of durations
	// is then the same integer sequence the old doubling loops produced,
	// and the loop ends as soon as the cap is hit whatever attempt is.
	if f := cmp.Or(p.Factor, 2); f > 1 {
		for i := 0; i < attempt && d > 0 && d < limit; i++ {
			next := float64(d) * f
			if next >= float64(limit) {
				d = limit
				break
			}
			d = time.Duration(next)
		}
	}
	return jitter(min(d, limit), p.Jitter)
}

// jitter draws d's random share (see Policy.Jitter).
func jitter(d time.Duration, share float64) time.Duration {
	spread := d // share >= 1: spared the float, which cannot hold MaxInt64
	if share < 1 {
		spread = time.Duration(float64(d) * max(share, 0))
	}
	if spread <= 0 {
		return d // also keeps rand.N from a zero bound
	}
	return d - spread + rand.N(min(spread, math.MaxInt64-1)+1)
}

// Sleep waits d or until ctx ends, whichever comes first, and returns
// ctx.Err() in the latter case (also when ctx has already ended, even for
// d <= 0). Its timer is stopped on return, so an early end leaves nothing
// running.
func Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil || d <= 0 {
		return err
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
