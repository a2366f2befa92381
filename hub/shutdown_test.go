package hub

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// syncBuffer is a log sink the hub's goroutines may write concurrently.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestShutdownReleasesOwnersBeforeRedisCloses: a stopping hub releases its
// workers' owner keys while Redis is still open (it used to log "release
// worker owner … redis: client is closed" and leave the keys to expire).
func TestShutdownReleasesOwnersBeforeRedisCloses(t *testing.T) {
	cfg := realConfig(t)
	var logs syncBuffer
	h, err := New(cfg, slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	require.NoError(t, err)
	require.NoError(t, h.Start(context.Background()))
	t.Cleanup(func() { _ = h.Stop(context.Background()) })
	startAgent(t, h.URL(), "w-stop", 1)
	ctx := context.Background()
	require.Eventually(t, func() bool {
		w, err := h.stores.Workers.Get(ctx, "w-stop")
		return err == nil && w.Connected && w.Hub == h.ID()
	}, 10*time.Second, 20*time.Millisecond)

	opt, err := redis.ParseURL(cfg.Redis.URL)
	require.NoError(t, err)
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	ownerKey := cfg.Redis.Prefix + "worker:w-stop:owner"
	require.Equal(t, h.ID(), rdb.Get(ctx, ownerKey).Val())

	require.NoError(t, h.Stop(ctx))
	require.NotContains(t, logs.String(), "release worker owner")
	require.False(t, strings.Contains(logs.String(), "client is closed"), "no store call after the stores closed")
	require.Zero(t, rdb.Exists(ctx, ownerKey).Val(), "the owner key is released, not left to expire")
}
