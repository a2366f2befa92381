package loadgen

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisStat is one reading of Redis's command counters.
type redisStat struct {
	at    time.Time
	total int64            // INFO stats total_commands_processed
	calls map[string]int64 // INFO commandstats: command → calls
}

// redisProbe reads INFO from the Redis the hub uses. Its own INFO calls are
// counted by Redis too: two per reading, negligible beside the hub's.
type redisProbe struct {
	rdb *redis.Client
}

// newRedisProbe connects and takes a first reading to check the URL.
func newRedisProbe(ctx context.Context, url string) (*redisProbe, error) {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("redis URL: %w", err)
	}
	opt.PoolSize = 2
	p := &redisProbe{rdb: redis.NewClient(opt)}
	if _, err := p.read(ctx); err != nil {
		_ = p.rdb.Close()
		return nil, err
	}
	return p, nil
}

func (p *redisProbe) close() error { return p.rdb.Close() }

// read takes one reading.
func (p *redisProbe) read(ctx context.Context) (redisStat, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	st := redisStat{at: time.Now()}
	stats, err := p.rdb.Info(ctx, "stats").Result()
	if err != nil {
		return st, fmt.Errorf("redis INFO stats: %w", err)
	}
	total, ok := parseInfo(stats)["total_commands_processed"]
	if !ok {
		return st, fmt.Errorf("redis INFO stats has no total_commands_processed")
	}
	if st.total, err = strconv.ParseInt(total, 10, 64); err != nil {
		return st, fmt.Errorf("redis total_commands_processed %q: %w", total, err)
	}
	cmds, err := p.rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		return st, fmt.Errorf("redis INFO commandstats: %w", err)
	}
	st.calls = parseCommandStats(cmds)
	return st, nil
}

// parseInfo reads "key:value" lines of an INFO section.
func parseInfo(s string) map[string]string {
	out := map[string]string{}
	for line := range strings.SplitSeq(s, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		if k, v, ok := strings.Cut(line, ":"); ok {
			out[k] = v
		}
	}
	return out
}

// parseCommandStats reads "cmdstat_rpush:calls=10,usec=..." lines into
// command → calls. Subcommands ("cmdstat_client|setname") keep their bar.
func parseCommandStats(s string) map[string]int64 {
	out := map[string]int64{}
	for k, v := range parseInfo(s) {
		cmd, ok := strings.CutPrefix(k, "cmdstat_")
		if !ok {
			continue
		}
		for field := range strings.SplitSeq(v, ",") {
			if n, ok := strings.CutPrefix(field, "calls="); ok {
				if c, err := strconv.ParseInt(n, 10, 64); err == nil {
					out[cmd] = c
				}
			}
		}
	}
	return out
}
