// Command bench is the side-by-side benchmark of `make bench-compare`: the
// same no-op workload through Asynq on Redis, River on PostgreSQL and
// Paprika (embedded, on MariaDB + Redis, and with 3 hubs), in interleaved
// rounds, printed as one table of jobs/s, CPU seconds per 1,000 jobs per
// process, store statements per job and enqueue → started latency.
//
// It is a module of its own so the product's go.mod never gains Asynq or
// River. Nothing here runs in CI; `make lint` only builds it.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

type options struct {
	jobs, producers, rounds, paced, lanes int
	workers                               int
	batch                                 int
	rate                                  float64
	systems                               string
	paprika, redisAddr, mysqlDSN, pgURL   string
	pprof, base                           string
	sqlTrips                              bool
	hubEnv                                []string // -hub-env: for the hubs of the systems that are not @base
}

func main() {
	var o options
	flag.IntVar(&o.jobs, "jobs", 5000, "no-op jobs per throughput run")
	flag.IntVar(&o.producers, "producers", 16, "concurrent submitters")
	flag.IntVar(&o.batch, "batch", 1, "jobs per submission in the flat-out runs: Paprika's SubmitMany (POST /jobs:batch, at most 1,000), River's InsertMany; Asynq has no batch enqueue and sends them one by one (the paced run always submits one at a time)")
	flag.IntVar(&o.rounds, "rounds", 3, "interleaved rounds (every system once per round); medians are reported")
	flag.IntVar(&o.paced, "paced", 600, "jobs of the paced latency run (0: none)")
	flag.Float64Var(&o.rate, "rate", 200, "jobs/s of the paced latency run")
	flag.IntVar(&o.lanes, "lanes", 32, "concurrent job slots: Paprika lanes over its workers, Asynq concurrency, River MaxWorkers")
	flag.IntVar(&o.workers, "workers", 0, "Paprika worker processes the lanes are split over (0: one per hub, at least 2)")
	flag.StringVar(&o.systems, "systems", "asynq,river,paprika-embedded,paprika-mariadb,paprika-3hubs", "comma list of systems to run")
	flag.StringVar(&o.paprika, "paprika", "", "paprika binary (default: built from the repository root into a temp dir)")
	flag.StringVar(&o.redisAddr, "redis", "127.0.0.1:6379", "Redis host:port (Asynq; Paprika's coordination store, db 6)")
	flag.StringVar(&o.mysqlDSN, "mysql", "root@tcp(127.0.0.1:3306)/", "MariaDB DSN without a database; each run makes and drops its own")
	flag.StringVar(&o.pgURL, "pg", "postgres://127.0.0.1:5432/test?sslmode=disable", "PostgreSQL URL for River")
	flag.StringVar(&o.base, "base", "", "a second paprika binary (e.g. built from main): every Paprika system also runs with it, as \"<name>@base\", interleaved, for before/after ratios in one run")
	flag.StringVar(&o.pprof, "pprof", "", "with a host:port, the first Paprika hub serves debug.pprof there (profile it while the bench runs)")
	flag.Func("hub-env", "KEY=VALUE set in the environment of the Paprika hubs of every system but the @base twins (repeat it for more), so that -base with the same binary measures a setting: -hub-env GOGC=400, -hub-env GOMAXPROCS=1", func(v string) error {
		if k, _, ok := strings.Cut(v, "="); !ok || k == "" {
			return fmt.Errorf("want KEY=VALUE, not %q", v)
		}
		o.hubEnv = append(o.hubEnv, v)
		return nil
	})
	flag.BoolVar(&o.sqlTrips, "sqltrips", false, "Paprika on MariaDB connects through a proxy in the bench that counts the SQL round trips (commands sent), shown as sql-trips per job; it costs the bench process CPU")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// result is one system's figures of one round.
type result struct {
	jobsPerSec float64
	cpuPerK    map[string]float64 // process → CPU s per 1,000 jobs
	stmts      map[string]float64 // store → statements per job
	p50, p99   time.Duration      // paced enqueue → started
	// pacedCPUPerK is CPU s per 1,000 jobs of the paced run, per process:
	// a steady load, where grains of earlier jobs passivate meanwhile
	// (Paprika's do 3 s after their job ends), unlike in a short burst.
	pacedCPUPerK map[string]float64
	// pacedStmts is stmts of the paced run: a load with idle lanes, where
	// placement has a choice of workers.
	pacedStmts map[string]float64
	// gapP50, gapP99: freed lane → next job of the flat-out run, where
	// one was measured (laneGapper); slotP50, slotP99 the same per worker
	// slot (gapsOf).
	gapP50, gapP99   time.Duration
	slotP50, slotP99 time.Duration
	gaps, slots      int
}

// laneGapper is a system that can tell, after a flat-out run, how long a
// freed lane, and a freed worker slot, waited for its next queued job
// (paprikaSystem.laneGaps).
type laneGapper interface {
	laneGaps(ctx context.Context, n int) (lane, slot []time.Duration, err error)
}

// system is one queue under test.
type system interface {
	name() string
	// start brings the system up; stop takes it down and removes its data.
	start(ctx context.Context) error
	stop()
	// submit enqueues n no-op jobs, in one request where the system has
	// one; done counts the jobs finished.
	submit(ctx context.Context, n int) error
	done(ctx context.Context) (int64, error)
	// procs names the processes whose CPU counts, each with its reader.
	procs() map[string]func() float64
	// stmts reads the store's statement counters (name → count).
	stmts(ctx context.Context) map[string]float64
	// latencies are enqueue → started of the jobs since the last reset.
	resetLatencies()
	latencies(ctx context.Context) ([]time.Duration, error)
}

func run(ctx context.Context, o options) error {
	var systems []system
	for _, n := range strings.Split(o.systems, ",") {
		s, err := newSystem(strings.TrimSpace(n), &o)
		if err != nil {
			return err
		}
		systems = append(systems, s)
		if p, ok := s.(*paprikaSystem); ok && o.base != "" {
			systems = append(systems, &paprikaSystem{label: p.label + "@base", bin: o.base, o: p.o, hubs: p.hubs, real: p.real, cports: p.cports,
				base: true})
		}
	}
	res := map[string][]result{}
	for round := 1; round <= o.rounds; round++ {
		for _, s := range systems {
			if p, ok := s.(*paprikaSystem); ok {
				*p.cports = nil // new ports each round, the same for a system and its @base twin
			}
		}
		for _, s := range systems {
			fmt.Fprintf(os.Stderr, "round %d/%d: %s ...\n", round, o.rounds, s.name())
			r, err := measure(ctx, s, o)
			if err != nil {
				return fmt.Errorf("%s: %w", s.name(), err)
			}
			fmt.Fprintf(os.Stderr, "  %.0f jobs/s, cpu/1k %s, p50 %s p99 %s, paced cpu/1k %s\n", r.jobsPerSec, fmtMap(r.cpuPerK, 3), r.p50, r.p99,
				fmtMap(r.pacedCPUPerK, 3))
			if r.gaps > 0 {
				fmt.Fprintf(os.Stderr, "  freed lane → next job: p50 %s p99 %s (%d gaps); freed slot: p50 %s p99 %s (%d gaps)\n",
					r.gapP50, r.gapP99, r.gaps, r.slotP50, r.slotP99, r.slots)
			}
			fmt.Fprintf(os.Stderr, "  per job: %s\n", fmtMap(r.stmts, 2))
			if len(r.pacedStmts) > 0 {
				fmt.Fprintf(os.Stderr, "  per paced job: %s\n", fmtMap(r.pacedStmts, 2))
			}
			res[s.name()] = append(res[s.name()], r)
		}
	}
	printTable(os.Stdout, systems, res, o)
	return nil
}

func measure(ctx context.Context, s system, o options) (r result, err error) {
	if err := s.start(ctx); err != nil {
		return r, err
	}
	defer s.stop()
	// Warm-up: connections, caches, grains; also proves the system is ready.
	if _, err := drive(ctx, s, 200, o.producers, o.batch, 0); err != nil {
		return r, fmt.Errorf("warm-up: %w", err)
	}
	procs := s.procs()
	before := map[string]float64{}
	for k, f := range procs {
		before[k] = f()
	}
	st0 := s.stmts(ctx)
	took, err := drive(ctx, s, o.jobs, o.producers, o.batch, 0)
	if err != nil {
		return r, err
	}
	st1 := s.stmts(ctx)
	r.jobsPerSec = float64(o.jobs) / took.Seconds()
	r.cpuPerK = map[string]float64{}
	for k, f := range procs {
		r.cpuPerK[k] = (f() - before[k]) * 1000 / float64(o.jobs)
	}
	r.stmts = map[string]float64{}
	for k, v := range st1 {
		r.stmts[k] = (v - st0[k]) / float64(o.jobs)
	}
	// Read after the CPU and the statements are taken, so the listing
	// counts in neither.
	if g, ok := s.(laneGapper); ok {
		gaps, slots, err := g.laneGaps(ctx, o.jobs)
		if err != nil {
			return r, fmt.Errorf("lane gaps: %w", err)
		}
		r.gaps, r.gapP50, r.gapP99 = len(gaps), quantile(gaps, 0.5), quantile(gaps, 0.99)
		r.slots, r.slotP50, r.slotP99 = len(slots), quantile(slots, 0.5), quantile(slots, 0.99)
	}
	if o.paced > 0 {
		s.resetLatencies()
		for k, f := range procs {
			before[k] = f()
		}
		st0 = s.stmts(ctx)
		if _, err := drive(ctx, s, o.paced, o.producers, 1, o.rate); err != nil {
			return r, fmt.Errorf("paced run: %w", err)
		}
		st1 = s.stmts(ctx)
		r.pacedStmts = map[string]float64{}
		for k, v := range st1 {
			r.pacedStmts[k] = (v - st0[k]) / float64(o.paced)
		}
		r.pacedCPUPerK = map[string]float64{}
		for k, f := range procs {
			r.pacedCPUPerK[k] = (f() - before[k]) * 1000 / float64(o.paced)
		}
		lat, err := s.latencies(ctx)
		if err != nil {
			return r, err
		}
		r.p50, r.p99 = quantile(lat, 0.5), quantile(lat, 0.99)
	}
	return r, nil
}

// drive submits n jobs from the given producers, batch at a time (flat
// out, or paced at rate jobs/s overall) and waits until n more jobs are
// done.
func drive(ctx context.Context, s system, n, producers, batch int, rate float64) (time.Duration, error) {
	batch = max(batch, 1)
	base, err := s.done(ctx)
	if err != nil {
		return 0, err
	}
	start := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	errc := make(chan error, producers)
	for p := 0; p < producers; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(int64(batch)) - int64(batch)
				if i >= int64(n) {
					return
				}
				if rate > 0 {
					due := start.Add(time.Duration(float64(i) / rate * float64(time.Second)))
					time.Sleep(time.Until(due))
				}
				if err := s.submit(ctx, int(min(int64(batch), int64(n)-i))); err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	select {
	case err := <-errc:
		return 0, err
	default:
	}
	deadline := time.Now().Add(time.Duration(n)*10*time.Millisecond + 60*time.Second)
	// The first rate is the run's so far: base counts jobs of earlier runs.
	last, lastAt := base, start
	for {
		d, err := s.done(ctx)
		if err != nil {
			return 0, err
		}
		now := time.Now()
		if d-base >= int64(n) {
			return now.Sub(start), nil
		}
		if now.After(deadline) {
			return 0, fmt.Errorf("only %d of %d jobs done in time", d-base, n)
		}
		wait := nextDonePoll(int64(n)-(d-base), d-last, now.Sub(lastAt))
		last, lastAt = d, now
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(wait):
		}
	}
}

// A read of Paprika's done count is a /metrics scrape of every hub, about
// 1.4 ms of a hub's CPU (most of it the process collector reading /proc),
// and it counts against the hubs' CPU per job. Read every 25 ms from the
// last submission on, that was some 150 scrapes per hub in a three-hub run
// of 8,000 jobs (4 % of the hubs' CPU per job), 19 now. The next read is
// due when, at the rate since the last one, a quarter of what is left
// would be done: never sooner than donePoll (the end is seen within it),
// never later than donePollMax.
const (
	donePoll    = 25 * time.Millisecond
	donePollMax = 250 * time.Millisecond
)

// nextDonePoll is the wait before the next read of the done count, with
// left jobs to go and done of them finished in the last since.
func nextDonePoll(left, done int64, since time.Duration) time.Duration {
	if done <= 0 || since <= 0 {
		return donePoll
	}
	eta := time.Duration(float64(since) * float64(left) / float64(done))
	return min(max(eta/4, donePoll), donePollMax)
}

func quantile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	i := int(q*float64(len(d))+0.5) - 1
	return d[min(max(i, 0), len(d)-1)]
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	v = slices.Clone(v)
	slices.Sort(v)
	return v[len(v)/2]
}

func fmtMap(m map[string]float64, prec int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "%s=%.*f", k, prec, m[k])
	}
	return b.String()
}
