package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/persistence"
	"github.com/paprika-hub/paprika/persistence/storetest"
)

// cmdCounter is a go-redis hook counting what one client sends.
type cmdCounter struct {
	mu        sync.Mutex
	pipelines int            // Exec calls carrying a command: one round trip each
	handshake int            // a new connection's HELLO and CLIENT SETINFO
	single    []string       // other commands sent alone
	byName    map[string]int // commands inside pipelines, by name
}

func (c *cmdCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *cmdCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.mu.Lock()
		if n := cmd.Name(); n == "hello" || n == "client" {
			c.handshake++
		} else {
			c.single = append(c.single, n)
		}
		c.mu.Unlock()
		return next(ctx, cmd)
	}
}

func (c *cmdCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.mu.Lock()
		if len(cmds) > 0 && (cmds[0].Name() == "client" || cmds[0].Name() == "hello") {
			c.handshake++
			c.mu.Unlock()
			return next(ctx, cmds)
		}
		c.pipelines++
		for _, cmd := range cmds {
			c.byName[cmd.Name()]++
		}
		c.mu.Unlock()
		return next(ctx, cmds)
	}
}

// commandCalls returns the server-wide call counts of INFO commandstats.
func commandCalls(t *testing.T, client *redis.Client) map[string]int64 {
	t.Helper()
	info, err := client.Info(t.Context(), "commandstats").Result()
	require.NoError(t, err)
	out := make(map[string]int64)
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		calls, _, _ := strings.Cut(strings.TrimPrefix(rest, "calls="), ",")
		n, err := strconv.ParseInt(calls, 10, 64)
		require.NoError(t, err, line)
		out[strings.TrimPrefix(name, "cmdstat_")] = n
	}
	return out
}

func jobLines(job string, from, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s line %d", job, from+i)
	}
	return out
}

// Not parallel: INFO commandstats counts every client of the server, so the
// deltas are taken while no other test of this package runs. The hook on
// the writer's own client gives the exact figures (one script call per
// batch, one round trip per Write).
func TestWriteCommandCounts(t *testing.T) {
	const (
		jobs         = 100
		linesPerJob  = 500
		batchLines   = 50
		jobsPerWrite = 25 // a Write carries the batches of 25 jobs
		rounds       = linesPerJob / batchLines
		writes       = rounds * jobs / jobsPerWrite
		maxBatches   = jobs * linesPerJob / batchLines
	)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	tb := setup(t)
	writer := NewLogStore(tb.client, WithPrefix(tb.prefix))
	// Load the append script first (a one-off SCRIPT LOAD per server).
	require.NoError(t, writer.Write(ctx, []persistence.LogBatch{{JobID: "warm-up", Lines: []string{"x"}}}))
	counter := &cmdCounter{byName: make(map[string]int)}
	tb.client.AddHook(counter)

	// Followers and INFO use their own client, so the hook sees only Write.
	readClient := redis.NewClient(tb.client.Options())
	t.Cleanup(func() { _ = readClient.Close() })
	reader := NewLogStore(readClient, WithPrefix(tb.prefix))

	job := func(j int) string { return fmt.Sprintf("job-%03d", j) }
	// Followers join before the first write, midway, and after the end.
	joinAt := map[int][]int{0: {0, 7}, rounds / 2: {41}, rounds: {99, 7}}
	type result struct {
		job   int
		lines []string
		err   error
	}
	results := make(chan result, 8)
	var wg sync.WaitGroup
	follow := func(round int) {
		for _, j := range joinAt[round] {
			wg.Go(func() {
				got, err := storetest.Follow(ctx, reader, job(j))
				results <- result{j, got, err}
			})
		}
	}

	before := commandCalls(t, readClient)
	for round := range rounds {
		follow(round)
		from := round * batchLines
		for w := range jobs / jobsPerWrite {
			batches := make([]persistence.LogBatch, 0, jobsPerWrite)
			for j := w * jobsPerWrite; j < (w+1)*jobsPerWrite; j++ {
				batches = append(batches, persistence.LogBatch{
					JobID: job(j), From: int64(from), Lines: jobLines(job(j), from, batchLines),
					Done: from+batchLines == linesPerJob,
				})
			}
			require.NoError(t, writer.Write(ctx, batches))
		}
	}
	after := commandCalls(t, readClient)
	follow(rounds)
	wg.Wait()
	close(results)

	rpush, publish := after["rpush"]-before["rpush"], after["publish"]-before["publish"]
	t.Logf("server: rpush %d, publish %d; writer client: %d round trips for %d writes, %v, single commands %v",
		rpush, publish, counter.pipelines, writes, counter.byName, counter.single)
	// The server's counts cover every client: other packages' tests share
	// this Redis and may push at the same time, so they bound ours from
	// above only loosely; the hook on the writer's own client is exact.
	// (hub's TestRedisCommandsPerLogLine counts with MONITOR, filtered to
	// its own keys.)
	require.GreaterOrEqual(t, rpush, int64(maxBatches), "the server saw every rpush")
	require.GreaterOrEqual(t, publish, int64(maxBatches), "the server saw every publish")
	require.Equal(t, maxBatches, counter.byName["evalsha"], "one append-script call per batch")
	require.Equal(t, writes, counter.pipelines, "one round trip per Write")
	require.Zero(t, counter.single, "Write sends nothing outside its pipeline")

	n := 0
	for r := range results {
		require.NoError(t, r.err, "follower of %s", job(r.job))
		require.Equal(t, jobLines(job(r.job), 0, linesPerJob), r.lines, "follower of %s", job(r.job))
		n++
	}
	require.Equal(t, 5, n)
}

// Redis drops a subscriber over client-output-buffer-limit pubsub: the
// channel closes with ErrSubscriptionLost, the writer never notices, and a
// follower resuming by index gets every line exactly once.
//
// Not parallel: CONFIG SET changes the limit for the whole server, so it
// is restored in Cleanup and held as briefly as possible.
func TestSubscriberDroppedByRedis(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	tb := setup(t)
	limit, err := tb.client.ConfigGet(ctx, "client-output-buffer-limit").Result()
	require.NoError(t, err)
	orig := limit["client-output-buffer-limit"]
	require.Contains(t, orig, "pubsub")
	t.Cleanup(func() {
		rctx, rcancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer rcancel()
		require.NoError(t, tb.client.ConfigSet(rctx, "client-output-buffer-limit", orig).Err(), "restore %q", orig)
	})
	// Hard limit 256 kB: over it, Redis closes the subscriber at once.
	require.NoError(t, tb.client.ConfigSet(ctx, "client-output-buffer-limit", "pubsub 262144 131072 60").Err())

	s := NewLogStore(tb.client, WithPrefix(tb.prefix), WithSubscriberBuffer(1<<16))
	gate := make(chan struct{})
	var openGate sync.Once
	s.receiveHook = func() { <-gate } // the first subscription's reader stalls
	sub, err := s.Subscribe(ctx, "flood")
	require.NoError(t, err)
	s.receiveHook = nil
	defer sub.Close()
	defer openGate.Do(func() { close(gate) })

	const batchLines = 100
	pad := strings.Repeat("x", 1000)
	line := func(i int) string { return fmt.Sprintf("%07d %s", i, pad) }
	var want []string
	write := func(done bool) {
		b := persistence.LogBatch{JobID: "flood", From: int64(len(want)), Done: done}
		for range batchLines {
			b.Lines = append(b.Lines, line(len(want)))
			want = append(want, b.Lines[len(b.Lines)-1])
		}
		require.NoError(t, s.Write(ctx, []persistence.LogBatch{b}))
	}
	subscribers := func() int64 {
		n, err := tb.client.PubSubNumSub(ctx, tb.prefix+"logch:flood").Result()
		require.NoError(t, err)
		return n[tb.prefix+"logch:flood"]
	}
	require.EqualValues(t, 1, subscribers())
	for subscribers() > 0 {
		write(false)
		require.Less(t, len(want), 100_000, "Redis never dropped the stalled subscriber (100 MB sent)")
	}
	t.Logf("Redis dropped the subscriber after %d lines (%d kB)", len(want), len(want)*len(pad)/1000)
	write(false) // more lines while nobody follows

	// The stalled reader wakes up, delivers what reached its socket, and
	// ends; the follower then resumes from the stored list.
	openGate.Do(func() { close(gate) })
	got, done, err := storetest.Drain(ctx, sub, nil)
	require.NoError(t, err)
	require.False(t, done)
	require.ErrorIs(t, sub.(*Subscription).Err(), ErrSubscriptionLost)
	t.Logf("the dropped subscription delivered %d lines: %v", len(got), sub.(*Subscription).Err())
	require.Equal(t, want[:len(got)], got)

	var wg sync.WaitGroup
	wg.Go(func() {
		for range 20 {
			write(false)
		}
		write(true)
	})
	got, err = storetest.Resume(ctx, s, "flood", got)
	wg.Wait()
	require.NoError(t, err)
	require.Equal(t, len(want), len(got))
	require.Equal(t, want, got)
}

// A follower that stops reading is dropped by the store itself once it is
// its buffer behind; the writer never waits for it.
func TestSlowConsumerDropped(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	tb := setup(t)
	s := NewLogStore(tb.client, WithPrefix(tb.prefix), WithSubscriberBuffer(4))
	slow, err := s.Subscribe(ctx, "job")
	require.NoError(t, err)
	defer slow.Close()

	var want []string
	for i := range 10 {
		b := persistence.LogBatch{JobID: "job", From: int64(i * 3), Lines: jobLines("job", i*3, 3), Done: i == 9}
		require.NoError(t, s.Write(ctx, []persistence.LogBatch{b}))
		want = append(want, b.Lines...)
	}
	storetest.WaitFor(t, "the slow follower to be dropped", func() bool {
		return slow.(*Subscription).Err() != nil
	})
	require.ErrorIs(t, slow.(*Subscription).Err(), ErrSlowConsumer)
	got, done, err := storetest.Drain(ctx, slow, nil)
	require.NoError(t, err)
	require.False(t, done)
	require.Len(t, got, 4*3, "the buffered batches are still delivered")
	got, err = storetest.Resume(ctx, s, "job", got)
	require.NoError(t, err)
	require.Equal(t, want, got)
}

// Lines hold any bytes (newlines, NUL, invalid UTF-8) and read back as
// written, from the list and from the channel.
func TestLogBinaryLines(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	tb := setup(t)
	s := NewLogStore(tb.client, WithPrefix(tb.prefix))
	sub, err := s.Subscribe(ctx, "bin")
	require.NoError(t, err)
	defer sub.Close()
	lines := []string{"", "a\nb", "\x00\xff", strings.Repeat("é", 300), "\r\n"}
	require.NoError(t, s.Write(ctx, []persistence.LogBatch{{JobID: "bin", Lines: lines, Done: true}}))
	ev := <-sub.C()
	require.Equal(t, persistence.LogEvent{JobID: "bin", Lines: lines, Done: true}, ev)
	got, done, err := s.Read(ctx, "bin", 0, 0)
	require.NoError(t, err)
	require.True(t, done)
	require.Equal(t, lines, got)
}

// The keys are where the package doc says, with the retention as TTL.
func TestLogKeyLayout(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	tb := setup(t)
	s := NewLogStore(tb.client, WithPrefix(tb.prefix), WithRetention(time.Hour))
	require.NoError(t, s.Write(ctx, []persistence.LogBatch{{JobID: "j1", Lines: []string{"a", "b"}, Done: true}}))
	c := tb.client
	require.Equal(t, []string{"a", "b"}, c.LRange(ctx, tb.prefix+"log:j1", 0, -1).Val())
	require.Equal(t, "1", c.Get(ctx, tb.prefix+"log:j1:done").Val())
	for _, k := range []string{"log:j1", "log:j1:done"} {
		ttl := c.PTTL(ctx, tb.prefix+k).Val()
		require.InDelta(t, time.Hour.Seconds(), ttl.Seconds(), 60, k)
	}

	// No retention: nothing expires.
	s = NewLogStore(tb.client, WithPrefix(tb.prefix), WithRetention(0))
	require.NoError(t, s.Write(ctx, []persistence.LogBatch{{JobID: "j2", Lines: []string{"a"}, Done: true}}))
	for _, k := range []string{"log:j2", "log:j2:done"} {
		require.Equal(t, time.Duration(-1), c.PTTL(ctx, tb.prefix+k).Val(), k)
	}
}

// A Write is idempotent: retried after it landed (wholly or in part), it
// stores no line twice. A batch past the end (a gap) is appended and logged.
func TestLogWriteIsIdempotent(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	tb := setup(t)
	var warned atomic.Int32
	s := NewLogStore(tb.client, WithPrefix(tb.prefix), WithLogger(newCountingLogger(&warned)))
	require.NoError(t, s.Write(ctx, []persistence.LogBatch{{JobID: "j", From: 0, Lines: []string{"a", "b"}}}))
	require.NoError(t, s.Write(ctx, []persistence.LogBatch{{JobID: "j", From: 0, Lines: []string{"a", "b"}}}))
	require.NoError(t, s.Write(ctx, []persistence.LogBatch{{JobID: "j", From: 1, Lines: []string{"b", "c"}}}))
	lines, _, err := s.Read(ctx, "j", 0, 0)
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b", "c"}, lines)
	require.Zero(t, warned.Load())
	require.NoError(t, s.Write(ctx, []persistence.LogBatch{{JobID: "j", From: 5, Lines: []string{"f"}}}))
	require.EqualValues(t, 1, warned.Load())
	n, err := s.Len(ctx, "j")
	require.NoError(t, err)
	require.EqualValues(t, 4, n)
}

func TestLogInvalidArguments(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	tb := setup(t)
	s := NewLogStore(tb.client, WithPrefix(tb.prefix))
	require.Error(t, s.Write(ctx, []persistence.LogBatch{{Lines: []string{"a"}}}))
	require.Error(t, s.Write(ctx, []persistence.LogBatch{{JobID: "j", From: -1}}))
	_, _, err := s.Read(ctx, "j", -1, 0)
	require.Error(t, err)
	_, err = s.Subscribe(ctx, "")
	require.Error(t, err)
	require.NoError(t, s.Write(ctx, nil), "nothing to write")
}

// An idle subscription pings Redis and, answered, stays open.
func TestIdleSubscriptionHealthCheck(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	tb := setup(t)
	s := NewLogStore(tb.client, WithPrefix(tb.prefix))
	s.pingEvery = 100 * time.Millisecond // long enough for a loaded CI machine to answer
	sub, err := s.Subscribe(ctx, "idle")
	require.NoError(t, err)
	defer sub.Close()
	// Five intervals of silence: pongs must keep it alive.
	start := time.Now()
	storetest.WaitFor(t, "idle time", func() bool { return time.Since(start) > 5*s.pingEvery })
	require.NoError(t, sub.(*Subscription).Err())
	require.Greater(t, sub.(*Subscription).lastRecv.Load(), start.UnixNano(), "a pong came back")
	require.NoError(t, s.Write(ctx, []persistence.LogBatch{{JobID: "idle", Lines: []string{"a"}}}))
	select {
	case ev, ok := <-sub.C():
		require.True(t, ok, "closed: %v", sub.(*Subscription).Err())
		require.Equal(t, []string{"a"}, ev.Lines)
	case <-time.After(10 * time.Second):
		t.Fatal("no event")
	}
}
