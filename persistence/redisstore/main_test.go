package redisstore

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
)

// go-redis starts no goroutine of its own for a plain client once it is
// closed, so goleak ignores nothing: every test closes its client in
// Cleanup, and a subscription's reader must be gone by then.
func TestMain(m *testing.M) {
	// go-redis logs each failed dial; TestUnavailable and TestConnect fail
	// dials on purpose.
	redis.SetLogger(quietLogger{})
	goleak.VerifyTestMain(m)
}

type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}
