package redisstore

import (
	"log/slog"
	"time"
)

// Defaults of the options.
const (
	// DefaultPrefix starts every key and channel name.
	DefaultPrefix = "paprika:"
	// DefaultRetention is how long a job's log stays after its last write.
	DefaultRetention = 24 * time.Hour
	// DefaultSubscriberBuffer is how many batches a follower may fall behind
	// before its subscription is dropped.
	DefaultSubscriberBuffer = 256
	// DefaultHubHistory is how long a dead hub stays listed (Alive=false)
	// after its last beat before List prunes it.
	DefaultHubHistory = 24 * time.Hour
)

// config is what the options set; each store keeps a copy.
type config struct {
	prefix     string
	retention  time.Duration
	subBuffer  int
	hubHistory time.Duration
	log        *slog.Logger
}

func newConfig(opts []Option) config {
	c := config{
		prefix:     DefaultPrefix,
		retention:  DefaultRetention,
		subBuffer:  DefaultSubscriberBuffer,
		hubHistory: DefaultHubHistory,
		log:        slog.New(slog.DiscardHandler),
	}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// Option configures NewLogStore, NewWorkerRegistry, NewHubRegistry and
// NewSessionStore. They take the same options; each ignores those that are
// not its own.
type Option func(*config)

// WithPrefix sets the prefix of every key and channel (default
// DefaultPrefix). Stores that must see each other's data use the same one.
func WithPrefix(p string) Option {
	return func(c *config) { c.prefix = p }
}

// WithRetention sets how long a log stays after its last Write (default
// DefaultRetention; 0 or less keeps logs until deleted). LogStore only.
func WithRetention(d time.Duration) Option {
	return func(c *config) { c.retention = max(d, 0) }
}

// WithSubscriberBuffer sets how many batches a follower may fall behind
// before its subscription is dropped (default DefaultSubscriberBuffer;
// minimum 1). LogStore only.
func WithSubscriberBuffer(n int) Option {
	return func(c *config) { c.subBuffer = max(n, 1) }
}

// WithHubHistory sets how long a dead hub stays listed after its last beat
// (default DefaultHubHistory; minimum one second). HubRegistry only.
func WithHubHistory(d time.Duration) Option {
	return func(c *config) { c.hubHistory = max(d, time.Second) }
}

// WithLogger sets the logger of events no caller sees as an error: a
// dropped follower, a batch whose From disagrees with the stored length, a
// failed index prune (default: discard).
func WithLogger(l *slog.Logger) Option {
	return func(c *config) {
		if l != nil {
			c.log = l
		}
	}
}
