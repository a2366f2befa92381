package membership

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/paprika-hub/paprika/persistence/storetest"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// testRedis connects to PAPRIKA_TEST_REDIS_URL (default local); absent
// Redis skips locally and fails under CI=true.
func testRedis(t *testing.T) (*redis.Client, string) {
	url := os.Getenv("PAPRIKA_TEST_REDIS_URL")
	if url == "" {
		url = "redis://127.0.0.1:6379/0"
	}
	opt, err := redis.ParseURL(url)
	require.NoError(t, err)
	rdb := redis.NewClient(opt)
	if err := rdb.Ping(t.Context()).Err(); err != nil {
		_ = rdb.Close()
		storetest.Unavailable(t, "redis at "+url, err)
	}
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb, fmt.Sprintf("paprika_t_%d:", time.Now().UnixNano())
}

// echoGrain answers with the name of the member it lives on.
type echoGrain struct{ addr string }

func (e *echoGrain) Receive(ctx actor.Context) {
	if _, ok := ctx.Message().(*wrapperspb.StringValue); ok {
		ctx.Respond(wrapperspb.String(ctx.ActorSystem().Address()))
	}
}

func startRedisMember(t *testing.T, rdb *redis.Client, prefix string, ttl time.Duration, configure ...func(*RedisProvider)) (*Member, *RedisProvider) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if os.Getenv("PAPRIKA_TEST_LOG") != "" {
		log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	kind := cluster.NewKind("echo", actor.PropsFromProducer(func() actor.Actor { return &echoGrain{} }))
	var rp *RedisProvider
	m, err := startWith(Options{Name: "t", Host: "127.0.0.1", Logger: log, Kinds: []*cluster.Kind{kind}, RequestTimeout: 2 * time.Second},
		func() cluster.ClusterProvider {
			rp = NewRedisProvider(rdb, prefix, 10*ttl, ttl, log)
			for _, f := range configure {
				f(rp)
			}
			return rp
		})
	require.NoError(t, err)
	t.Cleanup(func() { m.Stop(false) })
	return m, rp
}

func owners(m *Member, n int) (map[string]int, error) {
	out := map[string]int{}
	for i := 0; i < n; i++ {
		res, err := m.Cluster.Request(fmt.Sprintf("id-%d", i), "echo", wrapperspb.String("who"))
		if err != nil {
			return nil, err
		}
		out[res.(*wrapperspb.StringValue).Value]++
	}
	return out, nil
}

// TestRedisProviderReportsLostMembership: a member leaves only when a peer
// dropped it (the peer's mark), not merely because it could not beat for a
// while — Redis away, or no peer at all, drops nobody.
func TestRedisProviderReportsLostMembership(t *testing.T) {
	rdb, prefix := testRedis(t)
	lost := make(chan error, 1)
	_, rp := startRedisMember(t, rdb, prefix, 2*time.Second, func(rp *RedisProvider) {
		rp.OnLost = func(err error) { lost <- err }
	})
	rp.skew.Store(int64(3 * time.Second)) // a gap past the timeout, as after a freeze or a Redis outage
	select {
	case err := <-lost:
		t.Fatalf("lost reported with no peer having dropped it: %v", err)
	case <-time.After(1500 * time.Millisecond):
	}
	rp.mu.Lock()
	key := rp.droppedKey(rp.self.Cluster, rp.self.ID)
	rp.mu.Unlock()
	require.NoError(t, rdb.Set(t.Context(), key, "1", time.Minute).Err()) // what a peer does
	select {
	case err := <-lost:
		require.ErrorContains(t, err, "dropped")
	case <-time.After(3 * time.Second):
		t.Fatal("lost membership not reported")
	}
}
