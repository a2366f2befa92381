package main

import (
	"context"
	"encoding/binary"
	"log"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
)

// asynqDB is the Redis database Asynq uses here, flushed around each run.
const asynqDB = 5

// asynqSystem runs an Asynq client and server in this process (as a Go
// service would embed them) on the local Redis.
type asynqSystem struct {
	o        *options
	cl       *asynq.Client
	srv      *asynq.Server
	rdb      *redis.Client
	finished atomic.Int64
	mu       sync.Mutex
	lat      []time.Duration
}

func (a *asynqSystem) name() string { return "asynq" }

func (a *asynqSystem) start(ctx context.Context) error {
	a.rdb = redis.NewClient(&redis.Options{Addr: a.o.redisAddr, DB: asynqDB})
	if err := a.rdb.FlushDB(ctx).Err(); err != nil {
		return err
	}
	opt := asynq.RedisClientOpt{Addr: a.o.redisAddr, DB: asynqDB}
	a.cl = asynq.NewClient(opt)
	a.srv = asynq.NewServer(opt, asynq.Config{
		Concurrency: a.o.lanes,
		// Poll tuned: the default 1 s wait after an empty queue would
		// dominate the paced latency.
		TaskCheckInterval: time.Millisecond,
		LogLevel:          asynq.ErrorLevel,
		Logger:            quietLogger{},
	})
	mux := asynq.NewServeMux()
	mux.HandleFunc("noop", func(_ context.Context, t *asynq.Task) error {
		if p := t.Payload(); len(p) == 8 {
			d := time.Since(time.Unix(0, int64(binary.BigEndian.Uint64(p))))
			a.mu.Lock()
			if a.lat != nil {
				a.lat = append(a.lat, d)
			}
			a.mu.Unlock()
		}
		a.finished.Add(1)
		return nil
	})
	return a.srv.Start(mux)
}

func (a *asynqSystem) stop() {
	a.srv.Shutdown()
	_ = a.cl.Close()
	_ = a.rdb.FlushDB(context.Background()).Err()
	_ = a.rdb.Close()
}

func (a *asynqSystem) submit(ctx context.Context, n int) error {
	for range n { // Asynq has no batch enqueue
		var p [8]byte
		binary.BigEndian.PutUint64(p[:], uint64(time.Now().UnixNano()))
		if _, err := a.cl.EnqueueContext(ctx, asynq.NewTask("noop", p[:]), asynq.MaxRetry(0)); err != nil {
			return err
		}
	}
	return nil
}

func (a *asynqSystem) done(context.Context) (int64, error) { return a.finished.Load(), nil }

func (a *asynqSystem) procs() map[string]func() float64 {
	return map[string]func() float64{
		"bench+asynq": selfCPU,
		"redis":       func() float64 { return serviceCPU("redis-server") },
	}
}

func (a *asynqSystem) stmts(ctx context.Context) map[string]float64 {
	return map[string]float64{"redis": redisCalls(ctx, a.rdb)}
}

func (a *asynqSystem) resetLatencies() {
	a.mu.Lock()
	a.lat = []time.Duration{}
	a.mu.Unlock()
}

func (a *asynqSystem) latencies(context.Context) ([]time.Duration, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	l := a.lat
	a.lat = nil
	return l, nil
}

// quietLogger drops Asynq's logs below error.
type quietLogger struct{}

func (quietLogger) Debug(...any) {}
func (quietLogger) Info(...any)  {}
func (quietLogger) Warn(...any)  {}
func (quietLogger) Error(a ...any) {
	log.Println(append([]any{"asynq:"}, a...)...)
}
func (quietLogger) Fatal(a ...any) { log.Fatal(append([]any{"asynq:"}, a...)...) }
