package loadgen

import (
	"context"
	"sync"
	"time"
)

// followerGroup owns the followers' goroutines: start launches them, stop
// cancels them, waits for them and merges what they measured. The zero
// value is ready; stop is safe twice and before start.
type followerGroup struct {
	cancel    context.CancelFunc
	wg        sync.WaitGroup
	followers []*follower
	stopped   bool
	result    LatencyFigures
}

func (g *followerGroup) start(r *runner) {
	if r.o.Followers == 0 {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	g.cancel = cancel
	seed := uint64(time.Now().UnixNano())
	for i := range r.o.Followers {
		fl := newFollower(r.fleet, r.hub, seed+uint64(i), &r.window, &r.samples)
		g.followers = append(g.followers, fl)
		g.wg.Add(1)
		go func() { defer g.wg.Done(); fl.run(ctx) }()
	}
}

// stop ends the followers and returns their merged latency figures.
func (g *followerGroup) stop() LatencyFigures {
	if g.stopped {
		return g.result
	}
	g.stopped = true
	if g.cancel != nil {
		g.cancel()
	}
	g.wg.Wait()
	h := newHistogram()
	for _, fl := range g.followers {
		h.merge(fl.hist)
		g.result.Streams += fl.streams
		g.result.Errors += fl.errs
	}
	g.result.Samples = h.n
	g.result.P50 = h.quantile(0.50)
	g.result.P99 = h.quantile(0.99)
	g.result.Max = h.max
	return g.result
}
