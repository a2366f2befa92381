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

// Write stores and publishes every batch in one pipeline (one round trip):
// per batch RPUSH of its lines, SET of the done marker on a Done batch,
// PUBLISH of its event, PEXPIRE of the list — in that order, so whatever a
// follower is told has been stored. Batches of one job are applied in
// slice order.
//
// The event carries the writer's From: a follower places lines by it. If
// the list's length before the RPUSH disagrees (a retried Write that had in
// fact landed, or two writers of one job), the mismatch is logged, not
// returned: the lines are stored and published, and a retry would only
// append them again.
func (s *LogStore) Write(ctx context.Context, batches []persistence.LogBatch) error {
	if len(batches) == 0 {
		return nil
	}
	size, nargs := 0, 0
	for i := range batches {
		b := &batches[i]
		if b.JobID == "" {
			return fmt.Errorf("write logs: batch %d without job id", i)
		}
		if b.From < 0 {
			return fmt.Errorf("write logs of job %s: negative index %d", b.JobID, b.From)
		}
		size += eventSize(b)
		nargs += 2 + len(b.Lines) + 3 + 5 + 3 // rpush, publish, set, pexpire
	}

	// Allocations must not grow with the lines: every payload goes into one
	// string, and every argument into one slice, as a *string where it can
	// (go-redis writes a *string as the string; a pointer fits an interface
	// without the allocation a string needs).
	var sb strings.Builder
	sb.Grow(size)
	ends := make([]int, len(batches))
	for i := range batches {
		writeEvent(&sb, &batches[i])
		ends[i] = sb.Len()
	}
	payloads := sb.String()
	strs := make([]string, 3*len(batches)) // per batch: list, channel, payload
	args := make([]any, 0, nargs)
	next := func(n int) []any { // the next n args, capped so no append spills
		a := args[len(args) : len(args)+n : len(args)+n]
		args = args[:len(args)+n]
		return a
	}
	retention := any(s.cfg.retention.Milliseconds())

	pipe := s.client.Pipeline()
	pushes := make([]*redis.IntCmd, len(batches))
	start := 0
	for i := range batches {
		b := &batches[i]
		list, channel, payload := &strs[3*i], &strs[3*i+1], &strs[3*i+2]
		*list, *channel, *payload = s.keys.log(b.JobID), s.keys.logChan(b.JobID), payloads[start:ends[i]]
		start = ends[i]
		if len(b.Lines) > 0 {
			a := next(2 + len(b.Lines))
			a[0], a[1] = "rpush", list
			for j := range b.Lines {
				a[2+j] = &b.Lines[j]
			}
			pushes[i] = redis.NewIntCmd(ctx, a...)
			_ = pipe.Process(ctx, pushes[i])
		}
		// The marker before the PUBLISH, as the lines: a follower that
		// subscribed just after this event must find the log done in the
		// backlog it reads, or it would wait for an event already gone.
		if b.Done {
			a := next(5)
			a[0], a[1], a[2] = "set", s.keys.logDone(b.JobID), "1"
			if s.cfg.retention > 0 {
				a[3], a[4] = "px", retention
			} else {
				a = a[:3]
			}
			_ = pipe.Process(ctx, redis.NewStatusCmd(ctx, a...))
		}
		a := next(3)
		a[0], a[1], a[2] = "publish", channel, payload
		_ = pipe.Process(ctx, redis.NewIntCmd(ctx, a...))
		if s.cfg.retention > 0 && len(b.Lines) > 0 {
			a = next(3)
			a[0], a[1], a[2] = "pexpire", list, retention
			_ = pipe.Process(ctx, redis.NewBoolCmd(ctx, a...))
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return wrapErr(ctx, fmt.Sprintf("write logs (%d batches)", len(batches)), err)
	}
	for i, c := range pushes {
		if c == nil {
			continue
		}
		b := &batches[i]
		if at := c.Val() - int64(len(b.Lines)); at != b.From {
			s.cfg.log.Warn("log batch stored at another index than its From",
				slog.String("job_id", b.JobID), slog.Int64("from", b.From), slog.Int64("stored_at", at))
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
