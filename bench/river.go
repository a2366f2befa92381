package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// noopArgs is River's no-op job; T is when it was enqueued (unix ns).
type noopArgs struct {
	T int64 `json:"t"`
}

func (noopArgs) Kind() string { return "noop" }

type noopWorker struct {
	river.WorkerDefaults[noopArgs]
	r *riverSystem
}

func (w *noopWorker) Work(_ context.Context, j *river.Job[noopArgs]) error {
	d := time.Since(time.Unix(0, j.Args.T))
	w.r.mu.Lock()
	if w.r.lat != nil {
		w.r.lat = append(w.r.lat, d)
	}
	w.r.mu.Unlock()
	w.r.finished.Add(1)
	return nil
}

// riverSystem runs a River client (inserting and working) in this
// process on the local PostgreSQL, its poll tuned down to 5 ms.
type riverSystem struct {
	o        *options
	pool     *pgxpool.Pool
	cl       *river.Client[pgx.Tx]
	finished atomic.Int64
	mu       sync.Mutex
	lat      []time.Duration
}

func (r *riverSystem) name() string { return "river" }

func (r *riverSystem) start(ctx context.Context) error {
	var err error
	if r.pool, err = pgxpool.New(ctx, r.o.pgURL); err != nil {
		return err
	}
	drv := riverpgxv5.New(r.pool)
	mig, err := rivermigrate.New(drv, nil)
	if err != nil {
		return err
	}
	if _, err := mig.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("river migrate: %w", err)
	}
	if _, err := r.pool.Exec(ctx, "TRUNCATE river_job"); err != nil {
		return err
	}
	workers := river.NewWorkers()
	river.AddWorker(workers, &noopWorker{r: r})
	r.cl, err = river.NewClient(drv, &river.Config{
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: r.o.lanes}},
		Workers:           workers,
		FetchCooldown:     time.Millisecond,
		FetchPollInterval: 5 * time.Millisecond,
		Logger:            slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		return err
	}
	return r.cl.Start(ctx)
}

func (r *riverSystem) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = r.cl.Stop(ctx)
	_, _ = r.pool.Exec(ctx, "TRUNCATE river_job")
	r.pool.Close()
}

func (r *riverSystem) submit(ctx context.Context, n int) error {
	opts := &river.InsertOpts{MaxAttempts: 1}
	if n == 1 {
		_, err := r.cl.Insert(ctx, noopArgs{T: time.Now().UnixNano()}, opts)
		return err
	}
	many := make([]river.InsertManyParams, n)
	for i := range many {
		many[i] = river.InsertManyParams{Args: noopArgs{T: time.Now().UnixNano()}, InsertOpts: opts}
	}
	_, err := r.cl.InsertMany(ctx, many)
	return err
}

func (r *riverSystem) done(context.Context) (int64, error) { return r.finished.Load(), nil }

func (r *riverSystem) procs() map[string]func() float64 {
	return map[string]func() float64{
		"bench+river": selfCPU,
		"postgres":    func() float64 { return serviceCPU("postgres") },
	}
}

func (r *riverSystem) stmts(context.Context) map[string]float64 { return nil }

func (r *riverSystem) resetLatencies() {
	r.mu.Lock()
	r.lat = []time.Duration{}
	r.mu.Unlock()
}

func (r *riverSystem) latencies(context.Context) ([]time.Duration, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	l := r.lat
	r.lat = nil
	return l, nil
}
