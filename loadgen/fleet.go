package loadgen

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"
)

// fleet is the simulated workers of one run and the bookkeeping of the jobs
// they run. Run owns it; each simWorker reports into it.
type fleet struct {
	// fixed after construction
	o       *Options
	linkURL func(workerID string) string
	rate    float64       // lines/s per job; 0 = flat out
	stop    chan struct{} // closed when the measured window ends: jobs finish
	changed chan struct{} // capacity 1: a job started, ended or was lost

	workers []*simWorker // built with the fleet; each connects in connect

	mu           sync.Mutex
	jobs         map[string]*jobTrack
	started      []string // job ids in start order (followers pick from them)
	nStarted     int
	nFinished    int // job_done/job_failed queued
	nAcked       int
	nLost        int // their link failed before the ack
	rejected     int // assign_job answered with a rejection (no free lane)
	linkFailures int // links that failed (not closed by the bench)
	errFrames    int // error frames from the hub
	lastError    string
}

// jobTrack is one job as the fleet sees it.
type jobTrack struct {
	worker   string
	finished bool
	acked    bool
	lost     bool
}

func newFleet(o *Options, linkURL func(string) string) *fleet {
	f := &fleet{
		o: o, linkURL: linkURL, rate: o.perJobRate(),
		stop:    make(chan struct{}),
		changed: make(chan struct{}, 1),
		jobs:    map[string]*jobTrack{},
		workers: make([]*simWorker, o.Workers),
	}
	for i := range f.workers {
		f.workers[i] = newSimWorker(f, fmt.Sprintf("%s%d", o.WorkerPrefix, i+1))
	}
	return f
}

// maxLogged bounds the link failures and error frames logged one by one;
// the report counts them all.
const maxLogged = 10

// dialConcurrency bounds the links being opened at once.
const dialConcurrency = 32

// connect opens every worker's link (hello → welcome). On error the links
// already open are closed again.
func (f *fleet) connect(ctx context.Context) error {
	err := forEach(ctx, f.workers, dialConcurrency, func(ctx context.Context, w *simWorker) error {
		return w.connect(ctx)
	})
	if err != nil {
		f.close()
		return err
	}
	return nil
}

// close closes every link and waits for every worker goroutine.
func (f *fleet) close() {
	var wg sync.WaitGroup
	for _, w := range f.workers {
		wg.Add(1)
		go func() { defer wg.Done(); w.close() }()
	}
	wg.Wait()
}

// finish tells every job to end (job_done) at once: the window is over.
func (f *fleet) finish() {
	select {
	case <-f.stop:
	default:
		close(f.stop)
	}
}

func (f *fleet) notify() {
	select {
	case f.changed <- struct{}{}:
	default:
	}
}

func (f *fleet) jobStarted(id, worker string) {
	f.mu.Lock()
	if _, ok := f.jobs[id]; !ok {
		f.jobs[id] = &jobTrack{worker: worker}
		f.started = append(f.started, id)
		f.nStarted++
	}
	f.mu.Unlock()
	f.notify()
}

func (f *fleet) jobFinished(id string) {
	f.mu.Lock()
	if j := f.jobs[id]; j != nil && !j.finished {
		j.finished = true
		f.nFinished++
	}
	f.mu.Unlock()
	f.notify()
}

func (f *fleet) jobAcked(id string) {
	f.mu.Lock()
	if j := f.jobs[id]; j != nil && !j.acked && !j.lost {
		j.acked = true
		f.nAcked++
	}
	f.mu.Unlock()
	f.notify()
}

// linkLost marks the unacknowledged jobs of a worker whose link failed.
func (f *fleet) linkLost(worker string, err error) {
	f.mu.Lock()
	for _, j := range f.jobs {
		if j.worker == worker && !j.acked && !j.lost {
			j.lost = true
			f.nLost++
		}
	}
	f.lastError = fmt.Sprintf("link of %s: %v", worker, err)
	f.linkFailures++
	n := f.linkFailures
	f.mu.Unlock()
	f.notify()
	if n <= maxLogged {
		f.o.Logger.Warn("simulated worker lost its link", slog.String("worker_id", worker), slog.Any("err", err))
	}
}

func (f *fleet) noteRejected() {
	f.mu.Lock()
	f.rejected++
	f.mu.Unlock()
}

func (f *fleet) noteErrorFrame(worker, code, msg string) {
	f.mu.Lock()
	f.errFrames++
	f.lastError = fmt.Sprintf("hub error frame to %s: %s: %s", worker, code, msg)
	n := f.errFrames
	f.mu.Unlock()
	if n <= maxLogged {
		f.o.Logger.Warn("hub sent an error frame", slog.String("worker_id", worker), slog.String("code", code), slog.String("message", msg))
	}
}

// fleetCounts is a consistent reading of the job counters.
type fleetCounts struct {
	started, finished, acked, lost, rejected, errFrames, linkFailures int
	lastError                                                         string
}

func (f *fleet) counts() fleetCounts {
	f.mu.Lock()
	defer f.mu.Unlock()
	return fleetCounts{started: f.nStarted, finished: f.nFinished, acked: f.nAcked, lost: f.nLost,
		rejected: f.rejected, errFrames: f.errFrames, linkFailures: f.linkFailures, lastError: f.lastError}
}

// randomRunning picks a started job that has not finished, or "".
func (f *fleet) randomRunning(r *rand.Rand) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	for range 16 {
		if len(f.started) == 0 {
			return ""
		}
		id := f.started[r.IntN(len(f.started))]
		if j := f.jobs[id]; !j.finished && !j.lost {
			return id
		}
	}
	for _, id := range f.started {
		if j := f.jobs[id]; !j.finished && !j.lost {
			return id
		}
	}
	return ""
}

// waitUntil waits for cond (checked after every change) or the timeout;
// it reports whether cond held.
func (f *fleet) waitUntil(ctx context.Context, timeout time.Duration, cond func(fleetCounts) bool) (bool, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		if cond(f.counts()) {
			return true, nil
		}
		select {
		case <-ctx.Done():
			return false, fmt.Errorf("wait for the simulated workers: %w", ctx.Err())
		case <-t.C:
			return cond(f.counts()), nil
		case <-f.changed:
		}
	}
}

// sendStats sums the workers' send counters.
type sendStats struct {
	lines      int64
	stalls     int64
	stallTime  time.Duration
	maxStall   time.Duration
	queueWaits int64
}

func (f *fleet) sendStats() sendStats {
	var s sendStats
	for _, w := range f.workers {
		s.lines += w.sent.Load()
		s.stalls += w.stalls.stalls.Load()
		s.stallTime += time.Duration(w.stalls.waitNanos.Load())
		s.maxStall = max(s.maxStall, time.Duration(w.stalls.maxNanos.Load()))
		s.queueWaits += w.queueWaits.Load()
	}
	return s
}
