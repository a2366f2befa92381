package mysql

import (
	"fmt"
	"log/slog"
	"time"
)

// Pool and migration defaults.
const (
	// DefaultMaxOpenConns bounds the connections one hub holds. A hub's
	// store calls are short single-row statements, so 20 serves hundreds
	// of transitions a second while a few hubs stay far below MariaDB's
	// default max_connections (151).
	DefaultMaxOpenConns = 20
	// DefaultConnMaxLifetime recycles connections before a server's or a
	// proxy's idle cut-off can break them under a call.
	DefaultConnMaxLifetime = 5 * time.Minute
	// DefaultConnMaxIdleTime closes connections a quiet hub no longer
	// needs.
	DefaultConnMaxIdleTime = time.Minute
	// DefaultDialTimeout is the dial timeout Open sets when the DSN has
	// none, so an unreachable server fails a call in seconds instead of
	// after the operating system's TCP timeout.
	DefaultDialTimeout = 5 * time.Second
	// DefaultMigrateLockTimeout is how long Open waits for another hub
	// that is applying migrations.
	DefaultMigrateLockTimeout = 30 * time.Second
)

// Option configures Open.
type Option func(*options)

type options struct {
	maxOpenConns       int
	connMaxLifetime    time.Duration
	migrateLockTimeout time.Duration
	groupWait          time.Duration
	finishWait         time.Duration
	log                *slog.Logger
}

func defaultOptions() options {
	return options{
		maxOpenConns:       DefaultMaxOpenConns,
		connMaxLifetime:    DefaultConnMaxLifetime,
		migrateLockTimeout: DefaultMigrateLockTimeout,
		log:                slog.New(slog.DiscardHandler),
	}
}

func (o options) validate() error {
	switch {
	case o.maxOpenConns < 1:
		return fmt.Errorf("max open connections %d: want at least 1", o.maxOpenConns)
	case o.connMaxLifetime <= 0:
		return fmt.Errorf("connection max lifetime %s: want more than 0", o.connMaxLifetime)
	case o.groupWait < 0:
		return fmt.Errorf("group wait %s: want 0 or more", o.groupWait)
	case o.finishWait < 0:
		return fmt.Errorf("finish wait %s: want 0 or more", o.finishWait)
	case o.migrateLockTimeout < time.Second:
		// GET_LOCK takes whole seconds.
		return fmt.Errorf("migration lock timeout %s: want at least 1s", o.migrateLockTimeout)
	}
	return nil
}

// WithMaxOpenConns bounds the open connections (default
// DefaultMaxOpenConns); as many are kept idle, so a busy hub does not
// reconnect between calls.
func WithMaxOpenConns(n int) Option {
	return func(o *options) { o.maxOpenConns = n }
}

// WithConnMaxLifetime sets how long a connection is reused (default
// DefaultConnMaxLifetime). Keep it below the server's wait_timeout and any
// proxy's idle timeout.
func WithConnMaxLifetime(d time.Duration) Option {
	return func(o *options) { o.connMaxLifetime = d }
}

// WithMigrateLockTimeout sets how long Open waits for the migration lock
// another hub holds (default DefaultMigrateLockTimeout; whole seconds).
func WithMigrateLockTimeout(d time.Duration) Option {
	return func(o *options) { o.migrateLockTimeout = d }
}

// WithGroupWait lets a call that would go alone wait up to d for others
// to share its round trip (and commit), while calls come faster than one
// per d (batch.go); 0 (the default) never waits.
func WithGroupWait(d time.Duration) Option {
	return func(o *options) { o.groupWait = d }
}

// WithLogger sets the logger of the migrations Open applies and of the
// driver's own connection errors (default: discard).
func WithLogger(l *slog.Logger) Option {
	return func(o *options) { o.log = l }
}

// WithFinishWait lets a job's end computed from the caller's copy
// (persistence.Finish.From) and a running attempt's lane (SetLane) wait
// up to d for a batched transaction another call leads (a claim, most
// often), instead of leading one of their own: one commit less per job
// under a steady load. 0 (the default) never waits. Only with batching
// (client-side interpolation, as Open sets).
func WithFinishWait(d time.Duration) Option {
	return func(o *options) { o.finishWait = d }
}
