package loadgen

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/paprika-hub/paprika/internal/backoff"
	"github.com/paprika-hub/paprika/persistence"
)

// submitConcurrency bounds the POST /jobs (and GET /jobs/{id}) in flight.
const submitConcurrency = 16

// ingestSettle bounds the wait, after the last ack, for the hub's stored-
// lines counter to catch up with the lines sent (it is bumped just after
// the write that precedes the ack).
const ingestSettle = 3 * time.Second

// Run drives one measured run against the hub at o.HubURL and returns its
// report:
//
//  1. open o.Workers simulated worker links (hello → welcome);
//  2. submit one noop job per lane (Workers × Lanes) and wait until every
//     lane runs one;
//  3. start the followers, let o.Warmup pass, then measure o.Duration;
//  4. end every job (job_done), wait for every job_ack, check that every
//     line sent was stored and read back each job's final status.
//
// On error (the context included) it returns what it measured so far with
// the error. Every link, stream and goroutine it opened is closed when it
// returns.
func Run(ctx context.Context, opts Options) (Report, error) {
	o := opts.withDefaults()
	if err := o.validate(); err != nil {
		return Report{}, fmt.Errorf("loadgen options: %w", err)
	}
	r := &runner{o: &o, log: o.Logger, hub: newHubClient(o.HubURL, o.Token)}
	r.fleet = newFleet(r.o, r.o.linkURL)
	r.phase.Store("start")
	r.rep = Report{HubURL: o.HubURL, Workers: o.Workers, Lanes: o.Lanes, Rate: o.Rate, FlatOut: o.FlatOut,
		Followers: o.Followers, LineBytes: o.LineBytes, Warmup: o.Warmup}
	if o.FlatOut {
		r.rep.Rate = 0
	}
	defer r.cleanup()
	err := r.run(ctx)
	return r.rep, err
}

// runner is the state of one Run. Its goroutines (monitor, followers) are
// started and stopped by run; cleanup is the backstop.
type runner struct {
	// fixed after construction
	o     *Options
	log   *slog.Logger
	hub   *hubClient
	fleet *fleet

	// set by probes, read-only afterwards
	hubProc  *procProbe
	selfProc *procProbe
	redis    *redisProbe

	window  windowClock
	samples atomic.Int64  // latency samples so far (progress)
	phase   atomic.Value  // string: what the run is doing (progress)
	begun   time.Time     // when the links began to open (progress)
	monitor *monitor      // nil until started
	follow  followerGroup // zero until started

	// owned by run
	rep       Report
	submitted []string
}

func (r *runner) run(ctx context.Context) error {
	if err := r.hub.healthy(ctx); err != nil {
		return fmt.Errorf("hub at %s is not reachable: %w", r.o.HubURL, err)
	}
	if err := r.probes(ctx); err != nil {
		return err
	}
	base, err := r.snap(ctx)
	if err != nil {
		return err
	}
	r.begun = time.Now()
	r.monitor = startMonitor(r, base)

	r.phase.Store("connect")
	if err := r.fleet.connect(ctx); err != nil {
		return fmt.Errorf("open the simulated workers' links: %w", err)
	}
	r.rep.ConnectTime = time.Since(r.begun)
	r.log.Info("links up", slog.Int("workers", r.o.Workers), slog.Duration("took", r.rep.ConnectTime))

	r.phase.Store("submit")
	submitStart := time.Now()
	if err := r.submit(ctx); err != nil {
		return err
	}
	want := r.o.Workers * r.o.Lanes
	all, err := r.fleet.waitUntil(ctx, r.o.StartTimeout, func(c fleetCounts) bool { return c.started >= want })
	if err != nil {
		return err
	}
	r.rep.StartTime = time.Since(submitStart)
	if !all {
		r.warn("only %d of %d jobs started within %s: some lanes were idle", r.fleet.counts().started, want, r.o.StartTimeout)
	}

	r.phase.Store("warmup")
	r.follow.start(r)
	if err := interrupted(backoff.Sleep(ctx, r.o.Warmup)); err != nil {
		return err
	}

	r.phase.Store("measure")
	a, err := r.snap(ctx)
	if err != nil {
		return err
	}
	r.window.start.Store(a.at.UnixNano())
	if err := interrupted(backoff.Sleep(ctx, time.Until(a.at.Add(r.o.Duration)))); err != nil {
		return err
	}
	b, err := r.snap(ctx)
	if err != nil {
		return err
	}
	r.window.end.Store(b.at.UnixNano())
	r.fleet.finish()
	r.figures(a, b)

	r.phase.Store("drain")
	if err := r.drain(ctx, base); err != nil {
		return err
	}
	r.rep.Latency = r.follow.stop()
	if err := r.verifyJobs(ctx); err != nil {
		return err
	}
	r.monitor.stop()
	r.monitor.fill(&r.rep)
	c := r.fleet.counts()
	r.rep.Jobs.Started, r.rep.Jobs.Acked, r.rep.Jobs.Lost = c.started, c.acked, c.lost
	r.rep.Jobs.Rejected, r.rep.Jobs.ErrorFrames, r.rep.Jobs.LinkFailures = c.rejected, c.errFrames, c.linkFailures
	if c.lastError != "" && (c.lost > 0 || c.errFrames > 0 || c.linkFailures > 0) {
		r.warn("last link problem: %s", c.lastError)
	}
	return nil
}

// probes opens the optional probes: the hub's /proc, ours, Redis.
func (r *runner) probes(ctx context.Context) error {
	if r.o.HubPID > 0 {
		p, err := newProcProbe(r.o.HubPID)
		if err != nil {
			return fmt.Errorf("hub pid %d: %w", r.o.HubPID, err)
		}
		r.hubProc = p
	}
	if r.o.HubPID != os.Getpid() {
		if p, err := newProcProbe(os.Getpid()); err == nil {
			r.selfProc = p // best effort: no /proc, no loadgen figure
		}
	}
	if r.o.RedisURL != "" {
		p, err := newRedisProbe(ctx, r.o.RedisURL)
		if err != nil {
			return err
		}
		r.redis = p
	}
	return nil
}

// submit creates one job per lane.
func (r *runner) submit(ctx context.Context) error {
	n := r.o.Workers * r.o.Lanes
	lines := r.o.jobLines(r.o.perJobRate())
	interval := 0
	if rate := r.o.perJobRate(); rate > 0 {
		interval = int(1000 / rate)
	}
	// The deadline must outlast the whole run, drain included.
	timeoutS := int((r.o.StartTimeout + r.o.Warmup + r.o.Duration + r.o.DrainTimeout + time.Minute).Seconds())
	keyBase := fmt.Sprintf("bench-%d-%d", os.Getpid(), time.Now().UnixNano())
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	ids := make([]string, n)
	err := forEach(ctx, idx, submitConcurrency, func(ctx context.Context, i int) error {
		j, err := r.hub.submitNoop(ctx, lines, interval, timeoutS, fmt.Sprintf("%s-%d", keyBase, i))
		if err != nil {
			return fmt.Errorf("submit job %d of %d: %w", i+1, n, err)
		}
		ids[i] = j.ID
		return nil
	})
	for _, id := range ids {
		if id != "" {
			r.submitted = append(r.submitted, id)
		}
	}
	r.rep.Jobs.Submitted = len(r.submitted)
	return err
}

// figures fills the window's rates from the snapshots at its two ends.
func (r *runner) figures(a, b snapshot) {
	win := b.at.Sub(a.at)
	secs := win.Seconds()
	r.rep.Window = win
	l := &r.rep.Lines
	l.WindowSent = b.send.lines - a.send.lines
	l.WindowIngested = int64(b.stored - a.stored)
	l.LogWrites = int64(b.writes - a.writes)
	l.SentPerSec = float64(l.WindowSent) / secs
	l.IngestedPerSec = float64(l.WindowIngested) / secs
	l.LogWritesPerSec = float64(l.LogWrites) / secs
	if l.LogWrites > 0 {
		l.LinesPerWrite = float64(l.WindowIngested) / float64(l.LogWrites)
	}
	bp := &r.rep.Backpressure
	bp.Stalls = b.send.stalls - a.send.stalls
	bp.StallTime = b.send.stallTime - a.send.stallTime
	bp.MaxStall = b.send.maxStall // the run's longest (the counter keeps no per-window max)
	bp.QueueWaits = b.send.queueWaits - a.send.queueWaits
	if a.hub != nil && b.hub != nil {
		r.rep.Hub = cpuFigures(r.hubProc, *a.hub, *b.hub, l.WindowIngested)
		r.rep.Hub.InProcess = r.o.HubPID == os.Getpid()
	}
	if a.self != nil && b.self != nil {
		r.rep.Loadgen = cpuFigures(r.selfProc, *a.self, *b.self, 0)
	}
	r.machineFigures(a, b)
	if a.redis != nil && b.redis != nil {
		rd := &RedisFigures{Commands: b.redis.total - a.redis.total, Calls: map[string]int64{}}
		rd.CommandsPerSec = float64(rd.Commands) / b.redis.at.Sub(a.redis.at).Seconds()
		for cmd, n := range b.redis.calls {
			if d := n - a.redis.calls[cmd]; d > 0 {
				rd.Calls[cmd] = d
			}
		}
		r.rep.Redis = rd
	}
}

// othersWarnPercent is the CPU other processes may take in the window, in
// percent of one core, before the report warns that they perturbed it.
const othersWarnPercent = 20

// machineFigures reports the whole machine's CPU over the window and what
// neither the hub nor this process used: the bench and the hub share the
// machine with whatever else runs on it.
func (r *runner) machineFigures(a, b snapshot) {
	if a.machine == nil || b.machine == nil || b.machine.total <= a.machine.total {
		return
	}
	cores := runtime.NumCPU()
	busy := float64(b.machine.busy-a.machine.busy) / float64(b.machine.total-a.machine.total)
	m := &MachineFigures{Cores: cores, CPUPercent: 100 * busy * float64(cores)}
	m.OthersPercent = m.CPUPercent
	if r.rep.Hub != nil {
		m.OthersPercent -= r.rep.Hub.CPUPercent
	}
	if r.rep.Loadgen != nil {
		m.OthersPercent -= r.rep.Loadgen.CPUPercent
	}
	if r.rep.Hub == nil {
		m.OthersPercent = -1 // unknown: the hub is among the others
	}
	r.rep.Machine = m
	if m.OthersPercent > othersWarnPercent {
		r.warn("other processes used %.0f%% of a core during the window (machine %.0f%% of %d cores): the figures are perturbed",
			m.OthersPercent, m.CPUPercent, cores)
	}
}

func cpuFigures(p *procProbe, a, b procStat, lines int64) *ProcessFigures {
	cpu := p.cpuSeconds(b.cpuTicks - a.cpuTicks)
	f := &ProcessFigures{PID: p.pid, CPUSeconds: cpu, CPUPercent: 100 * cpu / b.at.Sub(a.at).Seconds(),
		ClockTicks: p.clockTicks, ClockTicksAssumed: p.ticksAssumed}
	if lines > 0 {
		f.CPUMicrosPerLine = cpu * 1e6 / float64(lines)
	}
	return f
}

// drain waits for every started job to be acknowledged (or lost with its
// link), then for the stored-lines counter to account for every line sent.
func (r *runner) drain(ctx context.Context, base snapshot) error {
	done, err := r.fleet.waitUntil(ctx, r.o.DrainTimeout, func(c fleetCounts) bool { return c.acked+c.lost >= c.started })
	if err != nil {
		return err
	}
	if !done {
		c := r.fleet.counts()
		r.warn("%d of %d jobs not acknowledged within %s", c.started-c.acked-c.lost, c.started, r.o.DrainTimeout)
	}
	deadline := time.Now().Add(ingestSettle)
	for {
		m, err := r.hub.metrics(ctx)
		if err != nil {
			return fmt.Errorf("read hub metrics: %w", err)
		}
		sent := r.fleet.sendStats()
		l := &r.rep.Lines
		l.TotalSent = sent.lines
		l.TotalIngested = int64(m[metricLinesStored] - base.stored)
		l.Missing = l.TotalSent - l.TotalIngested
		r.rep.Backpressure.TotalStalls = sent.stalls
		if l.Missing <= 0 || time.Now().After(deadline) {
			if l.Missing < 0 {
				r.warn("the hub stored %d more lines than this bench sent: another load on the same hub?", -l.Missing)
			}
			return nil
		}
		if err := interrupted(backoff.Sleep(ctx, 50*time.Millisecond)); err != nil {
			return err
		}
	}
}

// verifyJobs cancels the jobs no worker started and reads back every job's
// final status.
func (r *runner) verifyJobs(ctx context.Context) error {
	started := map[string]bool{}
	r.fleet.mu.Lock()
	for id := range r.fleet.jobs {
		started[id] = true
	}
	r.fleet.mu.Unlock()
	var mu sync.Mutex
	j := &r.rep.Jobs
	err := forEach(ctx, r.submitted, submitConcurrency, func(ctx context.Context, id string) error {
		if !started[id] {
			if err := r.hub.cancel(ctx, id); err != nil {
				return fmt.Errorf("cancel unstarted job %s: %w", id, err)
			}
		}
		v, err := r.hub.job(ctx, id)
		if err != nil {
			return fmt.Errorf("read back job %s: %w", id, err)
		}
		mu.Lock()
		defer mu.Unlock()
		switch v.Status {
		case persistence.StatusSucceeded:
			j.Succeeded++
		case persistence.StatusFailed:
			j.Failed++
		case persistence.StatusCanceled:
			j.Canceled++
		default:
			j.Other++
		}
		return nil
	})
	return err
}

// snapshot is one reading of every counter the figures come from.
type snapshot struct {
	at             time.Time
	stored, writes float64 // hub metrics
	send           sendStats
	hub, self      *procStat
	machine        *machineStat
	redis          *redisStat
}

// snap reads the hub's metrics first (the one slow read: a loaded hub
// answers late), stamps the snapshot when the answer arrived, then takes
// the local readings at once, so every counter of one snapshot belongs to
// about the same instant.
func (r *runner) snap(ctx context.Context) (snapshot, error) {
	m, err := r.hub.metrics(ctx)
	if err != nil {
		return snapshot{}, fmt.Errorf("read hub metrics: %w", err)
	}
	s := snapshot{at: time.Now(), send: r.fleet.sendStats(), stored: m[metricLinesStored], writes: m[metricLogWrites]}
	if r.hubProc != nil {
		st, err := r.hubProc.read()
		if err != nil {
			return s, fmt.Errorf("read hub process (did it exit?): %w", err)
		}
		s.hub = &st
	}
	if r.selfProc != nil {
		if st, err := r.selfProc.read(); err == nil {
			s.self = &st
		}
	}
	if st, err := readMachine(); err == nil {
		s.machine = &st
	}
	if r.redis != nil {
		st, err := r.redis.read(ctx)
		if err != nil {
			return s, err
		}
		s.redis = &st
	}
	return s, nil
}

func (r *runner) warn(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	r.rep.Warnings = append(r.rep.Warnings, msg)
	r.log.Warn(msg)
}

// cleanup stops whatever run left running, in dependency order: readers of
// the links first, then the links, then the clients. Safe after a full run.
func (r *runner) cleanup() {
	r.fleet.finish()
	r.follow.stop()
	if r.monitor != nil {
		r.monitor.stop()
	}
	r.fleet.close()
	if r.redis != nil {
		if err := r.redis.close(); err != nil {
			r.log.Debug("close redis probe", slog.Any("err", err))
		}
	}
	r.hub.close()
}

// interrupted names the error of a pause that ctx cut short.
func interrupted(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("run interrupted: %w", err)
}
