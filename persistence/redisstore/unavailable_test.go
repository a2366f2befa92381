package redisstore

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/persistence"
	"github.com/paprika-hub/paprika/persistence/storetest"
)

// unreachableClient returns a client of an address nobody listens on.
func unreachableClient(t *testing.T) *redis.Client {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialerRetries: 1, DialTimeout: time.Second})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Every operation against an unreachable Redis fails with an error
// wrapping persistence.ErrUnavailable.
func TestUnavailable(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	c := unreachableClient(t)
	logs, workers, hubs := NewLogStore(c), NewWorkerRegistry(c), NewHubRegistry(c)
	ops := map[string]func() error{
		"Write": func() error {
			return logs.Write(ctx, []persistence.LogBatch{{JobID: "j", Lines: []string{"a"}}})
		},
		"Read":      func() error { _, _, err := logs.Read(ctx, "j", 0, 0); return err },
		"Len":       func() error { _, err := logs.Len(ctx, "j"); return err },
		"Subscribe": func() error { _, err := logs.Subscribe(ctx, "j"); return err },
		"Put": func() error {
			return workers.Put(ctx, persistence.WorkerInfo{ID: "w"}, time.Minute)
		},
		"WorkerList":   func() error { _, err := workers.List(ctx); return err },
		"Get":          func() error { _, err := workers.Get(ctx, "w"); return err },
		"ClaimID":      func() error { _, err := workers.ClaimID(ctx, "w", "10.0.0.1"); return err },
		"ReleaseOwner": func() error { return workers.ReleaseOwner(ctx, "w", "hub") },
		"Beat":         func() error { return hubs.Beat(ctx, persistence.HubInfo{ID: "h"}, time.Minute) },
		"HubList":      func() error { _, err := hubs.List(ctx); return err },
		"Remove":       func() error { return hubs.Remove(ctx, "h") },
	}
	for name, op := range ops {
		err := op()
		require.ErrorIs(t, err, persistence.ErrUnavailable, name)
	}
}

// A context that ended is reported as such, not as an unavailable store.
func TestContextEnded(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	s := NewLogStore(tb.client, WithPrefix(tb.prefix))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err := s.Write(ctx, []persistence.LogBatch{{JobID: "j", Lines: []string{"a"}}})
	require.ErrorIs(t, err, context.Canceled)
	require.NotErrorIs(t, err, persistence.ErrUnavailable)
	_, err = s.Subscribe(ctx, "j")
	require.ErrorIs(t, err, context.Canceled)

	// A subscription whose context ends says so.
	ctx, cancel = context.WithCancel(t.Context())
	sub, err := s.Subscribe(ctx, "j")
	require.NoError(t, err)
	cancel()
	_, done, err := storetest.Drain(t.Context(), sub, nil)
	require.NoError(t, err)
	require.False(t, done)
	require.ErrorIs(t, sub.(*Subscription).Err(), context.Canceled)
	require.NoError(t, sub.Close())

	// One that is closed has no error.
	sub, err = s.Subscribe(t.Context(), "j")
	require.NoError(t, err)
	require.NoError(t, sub.Close())
	require.NoError(t, sub.(*Subscription).Err())
	_, ok := <-sub.C()
	require.False(t, ok, "C is closed when Close returns")
}

func TestConnect(t *testing.T) {
	t.Parallel()
	tb := setup(t) // skips without a test Redis
	c, err := Connect(t.Context(), "redis://"+tb.client.Options().Addr+"/0")
	require.NoError(t, err)
	require.NoError(t, c.Close())

	_, err = Connect(t.Context(), "redis://user:secret@[bad")
	require.Error(t, err)
	require.NotContains(t, err.Error(), "secret")

	addr := unreachableClient(t).Options().Addr
	_, err = Connect(t.Context(), "redis://"+addr)
	require.ErrorIs(t, err, persistence.ErrUnavailable)
}
