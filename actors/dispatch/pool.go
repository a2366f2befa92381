// Package dispatch runs the hub's actor turns on goroutines that are kept
// between turns.
//
// protoactor's default dispatcher starts a new goroutine each time a
// mailbox has messages. A new goroutine starts on a small stack, and a
// grain's turn (the middleware chain, the store call, an encoding) grows
// it two or three times, copying it each time: stack growth was 5 % of an
// embedded hub's CPU flat out and 10 % of a hub's in a cluster of three. A
// goroutine of the pool keeps the stack it grew for the next turn.
package dispatch

import (
	"sync"
	"sync/atomic"
)

// Pool is an actor.Dispatcher whose turns run on kept goroutines. It never
// makes a turn wait: with no idle goroutine a new one is started, as the
// default dispatcher always does, so a turn that blocks (protoactor's own
// stopping waits on futures) costs a goroutine, never a deadlock. At most
// maxIdle goroutines wait for work; the rest end after their turn.
type Pool struct {
	work       chan func()
	quit       chan struct{}
	throughput int
	maxIdle    int32
	idle       atomic.Int32
	closeOnce  sync.Once
}

// New returns a pool that runs throughput messages per turn (what the
// mailbox processes before it yields) and keeps up to maxIdle goroutines.
func New(throughput, maxIdle int) *Pool {
	return &Pool{
		work:       make(chan func()),
		quit:       make(chan struct{}),
		throughput: throughput,
		maxIdle:    int32(max(maxIdle, 0)),
	}
}

// Schedule runs fn on an idle goroutine of the pool, or on a new one.
func (p *Pool) Schedule(fn func()) {
	select {
	case p.work <- fn: // an idle goroutine took it
	default:
		go p.run(fn)
	}
}

// Throughput is the messages a mailbox processes per turn.
func (p *Pool) Throughput() int { return p.throughput }

// Close ends the idle goroutines; a turn scheduled afterwards still runs,
// on a goroutine of its own that ends with it.
func (p *Pool) Close() { p.closeOnce.Do(func() { close(p.quit) }) }

// Idle is how many goroutines wait for work now.
func (p *Pool) Idle() int { return int(p.idle.Load()) }

func (p *Pool) run(fn func()) {
	for {
		fn()
		if p.idle.Add(1) > p.maxIdle {
			p.idle.Add(-1)
			return
		}
		select {
		case fn = <-p.work:
		case <-p.quit:
			fn = nil
		}
		p.idle.Add(-1)
		if fn == nil {
			return
		}
	}
}
