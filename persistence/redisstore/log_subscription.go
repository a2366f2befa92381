package redisstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/paprika-hub/paprika/persistence"
)

var _ persistence.LogSubscription = (*Subscription)(nil)

const (
	// confirmTimeout bounds the wait for Redis to confirm a subscription
	// when the caller's context has no earlier deadline.
	confirmTimeout = 10 * time.Second
	// pingInterval is how long a subscription may stay silent before it
	// sends a PING; an interval without any reply to it ends the
	// subscription, so a half-open connection does not leave a follower
	// waiting forever.
	pingInterval = 15 * time.Second
)

// Subscription is one follower's feed of a job's log: a dedicated Pub/Sub
// connection and the goroutine that reads it into C. It ends (C closes) on
// Close, when its context ends, or when it can no longer promise every
// batch; Err says which.
type Subscription struct {
	// fixed after construction
	ps    *redis.PubSub
	jobID string
	ch    chan persistence.LogEvent
	done  chan struct{} // closed when the reader has returned
	hook  func()        // tests: runs before each receive
	every time.Duration // health-check interval
	log   *slog.Logger

	lastRecv atomic.Int64 // Unix ns of the last thing read; the reader writes
	pingSent atomic.Int64 // Unix ns of the unanswered ping, or 0; the timer writes

	mu     sync.Mutex // guards the fields below
	ended  bool
	reason error
	health *time.Timer
	stopCx func() bool // cancels the context watch
}

// subscribe subscribes to jobID's channel, waits for Redis's confirmation
// and starts the reader.
func subscribe(ctx context.Context, s *LogStore, jobID string) (*Subscription, error) {
	op := "subscribe to log of job " + jobID
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	// go-redis's Subscribe ignores its errors; the first receive reports
	// them (and dials again if the subscribe could not).
	ps := s.client.Subscribe(ctx, s.keys.logChan(jobID))
	stop := context.AfterFunc(ctx, func() { _ = ps.Close() })
	msg, err := ps.ReceiveTimeout(ctx, confirmTimeout)
	if !stop() {
		err = ctx.Err() // the context ended and closed ps meanwhile
	}
	if err == nil {
		if m, ok := msg.(*redis.Subscription); !ok || m.Kind != "subscribe" {
			err = fmt.Errorf("unexpected reply %v instead of the subscription", msg)
		}
	}
	if err != nil {
		_ = ps.Close()
		return nil, wrapErr(ctx, op, err)
	}

	sub := &Subscription{
		ps:    ps,
		jobID: jobID,
		ch:    make(chan persistence.LogEvent, s.cfg.subBuffer),
		done:  make(chan struct{}),
		hook:  s.receiveHook,
		every: s.pingEvery,
		log:   s.cfg.log,
	}
	sub.lastRecv.Store(time.Now().UnixNano())
	sub.mu.Lock()
	sub.health = time.AfterFunc(sub.every, sub.checkHealth)
	// Under mu: an ended context runs end at once, which takes mu.
	sub.stopCx = context.AfterFunc(ctx, func() { sub.end(ctx.Err()) })
	sub.mu.Unlock()
	// Receive runs without the caller's deadline: the socket must not time
	// out under the reader (go-redis would reconnect); the context ends the
	// subscription through end, which closes the connection.
	go sub.run(context.WithoutCancel(ctx))
	return sub, nil
}

// C yields the job's batches in order; it is closed when the subscription
// ends.
func (sub *Subscription) C() <-chan persistence.LogEvent { return sub.ch }

// Close ends the subscription, closes its connection and waits for its
// reader to return (C is closed when Close returns). Safe to call twice.
func (sub *Subscription) Close() error {
	sub.end(nil)
	<-sub.done
	return nil
}

// Err is why the subscription ended: nil while it runs or after Close,
// the context's error, ErrSlowConsumer, or an error wrapping
// ErrSubscriptionLost. Whatever it is, resume with Read from the number
// of lines already taken.
func (sub *Subscription) Err() error {
	sub.mu.Lock()
	defer sub.mu.Unlock()
	return sub.reason
}

// end records why the subscription ends (the first reason wins) and closes
// the connection, which makes the reader return and close C.
func (sub *Subscription) end(reason error) {
	sub.mu.Lock()
	if sub.ended {
		sub.mu.Unlock()
		return
	}
	sub.ended, sub.reason = true, reason
	sub.health.Stop()
	sub.stopCx()
	sub.mu.Unlock()
	if reason != nil {
		sub.log.Debug("log subscription ended", slog.String("job_id", sub.jobID), slog.Any("err", reason))
	}
	_ = sub.ps.Close()
}

// run is the reader: the only goroutine that receives on the connection
// and the only one that sends on or closes C. It never blocks on C: a full
// buffer ends the subscription instead, so a stalled follower costs one
// closed connection, never a stalled reader whose unread messages Redis
// would buffer.
func (sub *Subscription) run(ctx context.Context) {
	defer close(sub.done)
	defer close(sub.ch)
	for {
		if sub.hook != nil {
			sub.hook()
		}
		msg, err := sub.ps.Receive(ctx)
		if err != nil {
			sub.end(fmt.Errorf("%w: %w", ErrSubscriptionLost, err))
			return
		}
		sub.lastRecv.Store(time.Now().UnixNano())
		switch m := msg.(type) {
		case *redis.Message:
			ev, err := decodeEvent(sub.jobID, m.Payload)
			if err != nil {
				sub.end(fmt.Errorf("%w: %w", ErrSubscriptionLost, err))
				return
			}
			select {
			case sub.ch <- ev:
			default:
				sub.end(ErrSlowConsumer)
				return
			}
		case *redis.Pong:
			// The health check's answer; lastRecv is refreshed.
		case *redis.Subscription:
			// go-redis reconnected and subscribed again on its own: what
			// was published in between is lost, so this feed must end.
			sub.end(fmt.Errorf("%w: connection replaced (%s)", ErrSubscriptionLost, m.Kind))
			return
		default:
			sub.end(fmt.Errorf("%w: unexpected %T", ErrSubscriptionLost, msg))
			return
		}
	}
}

// checkHealth runs on the health timer: it pings a connection silent for
// an interval, and ends the subscription when nothing at all (not even the
// pong) came back by the next tick.
func (sub *Subscription) checkHealth() {
	last := sub.lastRecv.Load()
	if ping := sub.pingSent.Load(); ping != 0 && last < ping {
		sub.end(fmt.Errorf("%w: no reply to a ping within %s", ErrSubscriptionLost, sub.every))
		return
	}
	sub.pingSent.Store(0)
	if time.Since(time.Unix(0, last)) >= sub.every {
		sub.pingSent.Store(time.Now().UnixNano())
		if err := sub.ps.Ping(context.Background()); err != nil && !errors.Is(err, redis.ErrClosed) {
			sub.end(fmt.Errorf("%w: ping: %w", ErrSubscriptionLost, err))
			return
		}
	}
	sub.mu.Lock()
	defer sub.mu.Unlock()
	if !sub.ended {
		sub.health.Reset(sub.every)
	}
}
