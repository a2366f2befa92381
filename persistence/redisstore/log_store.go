package redisstore

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/paprika-hub/paprika/persistence"
)

var _ persistence.LogStore = (*LogStore)(nil)

// LogStore is the Redis persistence.LogStore: each job's lines in a list,
// a done marker beside it, and one Pub/Sub channel per job for followers
// (layout and round trips in the package doc). It is safe for concurrent
// use and starts no goroutine except one reader per subscription.
type LogStore struct {
	client *redis.Client
	keys   keys
	cfg    config

	// pingEvery is the health-check interval of subscriptions
	// (pingInterval; shorter in tests).
	pingEvery time.Duration
	// receiveHook, when set (tests only), runs before each read of a
	// subscription's Pub/Sub connection; Subscribe copies it.
	receiveHook func()
}

// NewLogStore returns a LogStore on client. Options: WithPrefix,
// WithRetention, WithSubscriberBuffer, WithLogger.
func NewLogStore(client *redis.Client, opts ...Option) *LogStore {
	cfg := newConfig(opts)
	return &LogStore{client: client, keys: keys{cfg.prefix}, cfg: cfg, pingEvery: pingInterval}
}

// appendScript appends a batch at its index, once. KEYS: list, done
// marker, channel. ARGV: from, retention ms (0 = none), done (0/1), event
// payload, lines... Lines the list already holds at their index are not
// pushed again, so a Write retried after it had in fact landed (go-redis
// and the hub's flusher both retry), or a second hub writing a job whose
// worker moved, never duplicates a line. A gap (the list shorter than
// from) is appended anyway — losing lines would be worse — and reported by
// the returned old length.
var appendScript = redis.NewScript(`
local n = redis.call('LLEN', KEYS[1])
local from = tonumber(ARGV[1])
local first = 5 + math.max(n - from, 0)
local i = first
while i <= #ARGV do
  local j = math.min(i + 999, #ARGV)
  redis.call('RPUSH', KEYS[1], unpack(ARGV, i, j))
  i = j + 1
end
local ret = tonumber(ARGV[2])
if ARGV[3] == '1' then
  if ret > 0 then redis.call('SET', KEYS[2], '1', 'PX', ret) else redis.call('SET', KEYS[2], '1') end
end
redis.call('PUBLISH', KEYS[3], ARGV[4])
if ret > 0 and #ARGV >= first then redis.call('PEXPIRE', KEYS[1], ret) end
return n
`)

// Write stores and publishes every batch in one pipeline (one round trip):
// per batch one call of appendScript — RPUSH of the lines not yet stored at
// their index, SET of the done marker on a Done batch, PUBLISH of the
// event, PEXPIRE of the list, in that order, so whatever a follower is told
// has been stored. Batches of one job are applied in slice order. Write is
// idempotent: retrying it after an error never stores a line twice.
func (s *LogStore) Write(ctx context.Context, batches []persistence.LogBatch) error {
	if len(batches) == 0 {
		return nil
	}
	size := 0
	for i := range batches {
		b := &batches[i]
		if b.JobID == "" {
			return fmt.Errorf("write logs: batch %d without job id", i)
		}
		if b.From < 0 {
			return fmt.Errorf("write logs of job %s: negative index %d", b.JobID, b.From)
		}
		size += eventSize(b)
	}
	// Every payload goes into one string, so allocations do not grow with
	// the lines.
	var sb strings.Builder
	sb.Grow(size)
	ends := make([]int, len(batches))
	for i := range batches {
		writeEvent(&sb, &batches[i])
		ends[i] = sb.Len()
	}
	payloads := sb.String()
	retention := s.cfg.retention.Milliseconds()

	run := func() ([]*redis.Cmd, error) {
		pipe := s.client.Pipeline()
		cmds := make([]*redis.Cmd, len(batches))
		start := 0
		for i := range batches {
			b := &batches[i]
			done := "0"
			if b.Done {
				done = "1"
			}
			args := make([]any, 0, 4+len(b.Lines))
			args = append(args, b.From, retention, done, payloads[start:ends[i]])
			for j := range b.Lines {
				args = append(args, &b.Lines[j])
			}
			start = ends[i]
			cmds[i] = appendScript.EvalSha(ctx, pipe,
				[]string{s.keys.log(b.JobID), s.keys.logDone(b.JobID), s.keys.logChan(b.JobID)}, args...)
		}
		_, err := pipe.Exec(ctx)
		return cmds, err
	}
	cmds, err := run()
	if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		// First write, or Redis restarted and lost its scripts: load and
		// run again (batches that did run are skipped by the script).
		if lerr := appendScript.Load(ctx, s.client).Err(); lerr != nil {
			return wrapErr(ctx, "load log append script", lerr)
		}
		cmds, err = run()
	}
	if err != nil {
		return wrapErr(ctx, fmt.Sprintf("write logs (%d batches)", len(batches)), err)
	}
	for i, c := range cmds {
		b := &batches[i]
		if had, _ := c.Int64(); had < b.From {
			s.cfg.log.Warn("log batch appended after a gap",
				slog.String("job_id", b.JobID), slog.Int64("from", b.From), slog.Int64("stored_len", had))
		}
	}
	return nil
}

// Read returns up to max lines of jobID from index from on (max <= 0: all)
// and whether the log is done, in one round trip. An unknown job has no
// lines and is not done.
func (s *LogStore) Read(ctx context.Context, jobID string, from int64, max int) ([]string, bool, error) {
	if from < 0 {
		return nil, false, fmt.Errorf("read log of job %s: negative index %d", jobID, from)
	}
	stop := int64(-1)
	if max > 0 {
		stop = from + int64(max) - 1
	}
	pipe := s.client.Pipeline()
	lr := pipe.LRange(ctx, s.keys.log(jobID), from, stop)
	ex := pipe.Exists(ctx, s.keys.logDone(jobID))
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, false, wrapErr(ctx, "read log of job "+jobID, err)
	}
	return lr.Val(), ex.Val() > 0, nil
}

// Len returns the number of stored lines of jobID (LLEN).
func (s *LogStore) Len(ctx context.Context, jobID string) (int64, error) {
	n, err := s.client.LLen(ctx, s.keys.log(jobID)).Result()
	if err != nil {
		return 0, wrapErr(ctx, "length of log of job "+jobID, err)
	}
	return n, nil
}

// Subscribe opens a Pub/Sub connection on jobID's channel and returns once
// Redis confirmed the subscription: every batch written after Subscribe
// returns is delivered, in order, until the subscription ends (see the
// package doc). The result is a *Subscription; its Err says why it ended.
func (s *LogStore) Subscribe(ctx context.Context, jobID string) (persistence.LogSubscription, error) {
	if jobID == "" {
		return nil, fmt.Errorf("subscribe to log: empty job id")
	}
	sub, err := subscribe(ctx, s, jobID)
	if err != nil {
		return nil, err
	}
	return sub, nil
}
