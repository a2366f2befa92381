package redisstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/paprika-hub/paprika/persistence/storetest"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// envRedisURL names the Redis the integration tests use.
const envRedisURL = "PAPRIKA_TEST_REDIS_URL"

const defaultTestRedisURL = "redis://127.0.0.1:6379/0"

// testBundle is one test's Redis client and key prefix.
type testBundle struct {
	client *redis.Client
	prefix string
}

// setup connects to the test Redis and reserves a fresh key prefix whose
// keys are deleted (SCAN + UNLINK, never FLUSHDB) when t ends. Without a
// reachable Redis the test is skipped, or fails when CI=true.
func setup(t testing.TB, tweak ...func(*redis.Options)) testBundle {
	t.Helper()
	url := os.Getenv(envRedisURL)
	if url == "" {
		url = defaultTestRedisURL
	}
	opt, err := redis.ParseURL(url)
	require.NoError(t, err, envRedisURL)
	for _, f := range tweak {
		f(opt)
	}
	client := redis.NewClient(opt)
	t.Cleanup(func() { _ = client.Close() })

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := client.Ping(ctx).Err(); err != nil {
		storetest.Unavailable(t, fmt.Sprintf("redis at %s (%s)", url, envRedisURL), err)
	}

	prefix := "paprika_t_" + randomHex(8) + ":"
	t.Cleanup(func() { deletePrefix(t, client, prefix) })
	return testBundle{client: client, prefix: prefix}
}

// deletePrefix deletes every key starting with prefix.
func deletePrefix(t testing.TB, client *redis.Client, prefix string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	iter := client.Scan(ctx, 0, globEscape(prefix)+"*", 1000).Iterator()
	var batch []string
	flush := func() {
		if len(batch) > 0 {
			if err := client.Unlink(ctx, batch...).Err(); err != nil {
				t.Errorf("delete test keys under %s: %v", prefix, err)
			}
			batch = batch[:0]
		}
	}
	for iter.Next(ctx) {
		if batch = append(batch, iter.Val()); len(batch) == 500 {
			flush()
		}
	}
	flush()
	if err := iter.Err(); err != nil {
		t.Errorf("scan test keys under %s: %v", prefix, err)
	}
}

// globEscape quotes the glob characters of s for SCAN MATCH.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
