package redisstore

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// Connect opens a client for url (redis://[user:pass@]host[:port][/db],
// rediss://…, unix://…, the forms go-redis's ParseURL takes) and checks it
// with a PING under ctx. The caller closes the client after the stores
// that share it, last in the hub's shutdown. An unreachable Redis is an
// error wrapping persistence.ErrUnavailable; the URL, which may hold a
// password, is not repeated in errors.
func Connect(ctx context.Context, url string) (*redis.Client, error) {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("connect to redis: invalid URL")
	}
	client := redis.NewClient(opt)
	if err := client.Ping(ctx).Err(); err != nil {
		_ = client.Close()
		return nil, wrapErr(ctx, "connect to redis at "+opt.Addr, err)
	}
	return client, nil
}
