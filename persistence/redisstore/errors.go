package redisstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/paprika-hub/paprika/persistence"
)

// Reasons a log subscription ended, as its Err reports them.
var (
	// ErrSlowConsumer: the follower fell more than its buffer behind; the
	// subscription was dropped rather than block the Pub/Sub reader.
	ErrSlowConsumer = errors.New("log follower fell behind")
	// ErrSubscriptionLost: the Pub/Sub connection broke or was closed by
	// Redis (client-output-buffer-limit pubsub, restart, network), or a
	// health-check PING went unanswered.
	ErrSubscriptionLost = errors.New("log subscription lost")
)

// wrapErr adds op to err and classifies it: a context that ended wraps the
// context's error; a failure to reach Redis wraps
// persistence.ErrUnavailable; a Redis error reply (WRONGTYPE, NOSCRIPT, …)
// is only wrapped. redis.Nil must be handled by the caller.
func wrapErr(ctx context.Context, op string, err error) error {
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil && !errors.Is(err, ctx.Err()):
		return fmt.Errorf("%s: %w: %w", op, ctx.Err(), err)
	case ctx.Err() != nil:
		return fmt.Errorf("%s: %w", op, err)
	case unavailable(err):
		return fmt.Errorf("%s: %w: %w", op, persistence.ErrUnavailable, err)
	default:
		return fmt.Errorf("%s: %w", op, err)
	}
}

// unavailable reports whether err means Redis could not serve the command
// (so a later retry may succeed) rather than that it refused it.
func unavailable(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		// A deadline of go-redis's own (pool wait, dial) without the
		// caller's context having ended.
		return true
	}
	var reply redis.Error
	if !errors.As(err, &reply) {
		// Dial, I/O, timeouts, pool exhaustion, a closed client.
		return true
	}
	return redis.IsLoadingError(err) || redis.IsMasterDownError(err) || redis.IsReadOnlyError(err) ||
		redis.IsClusterDownError(err) || redis.IsTryAgainError(err) || redis.IsMaxClientsError(err) ||
		redis.IsOOMError(err)
}
