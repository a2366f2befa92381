package main

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/redis/go-redis/v9"

	"github.com/paprika-hub/paprika/client"
)

// paprikaSystem runs hubs and workers as real processes of the paprika
// binary; the bench submits through the Go SDK, spread over the hubs.
type paprikaSystem struct {
	label string
	bin   string // this system's own binary (-base); "" = binary()
	base  bool   // the @base twin: no -hub-env
	o     *options
	hubs  int
	real  bool // MariaDB + Redis; embedded otherwise
	// cports are the hubs' cluster ports of this round, shared with the
	// @base twin: grains are placed by a hash over the members'
	// addresses, so the same ports give both binaries the same placement
	// of the scheduler and the worker grains — which hub each lives on
	// swings the remote messages per job by ±1.5 from one set of ports
	// to another. run clears them at each round.
	cports *[]int

	dir      string
	db       string // MariaDB database of this run
	hubCmds  []*exec.Cmd
	wrkCmds  []*exec.Cmd
	urls     []string
	clients  []*client.Client
	rr       atomic.Uint64
	rdb      *redis.Client
	sqlDB    *sql.DB
	trips    *sqlTripCounter // -sqltrips: the hubs' MariaDB connections
	mu       sync.Mutex
	record   bool
	recorded []string
}

var buildOnce struct {
	sync.Once
	path string
	err  error
}

// binary is -paprika or a fresh build of the repository's cmd/paprika.
func (p *paprikaSystem) binary() (string, error) {
	if p.bin != "" {
		return p.bin, nil
	}
	if p.o.paprika != "" {
		return p.o.paprika, nil
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "paprika-bench-bin")
		if err != nil {
			buildOnce.err = err
			return
		}
		buildOnce.path = filepath.Join(dir, "paprika")
		cmd := exec.Command("go", "build", "-o", buildOnce.path, "./cmd/paprika")
		cmd.Dir = ".."
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		buildOnce.err = cmd.Run()
	})
	return buildOnce.path, buildOnce.err
}

func (p *paprikaSystem) name() string { return p.label }

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func (p *paprikaSystem) start(ctx context.Context) error {
	bin, err := p.binary()
	if err != nil {
		return fmt.Errorf("build paprika: %w", err)
	}
	if p.dir, err = os.MkdirTemp("", "paprika-bench"); err != nil {
		return err
	}
	env := append(os.Environ(), "PAPRIKA_LIMITS_API_RATE=0", "PAPRIKA_LIMITS_MAX_CONNS_PER_IP=0", "PAPRIKA_LIMITS_MAX_QUEUED=0")
	prefix := fmt.Sprintf("bench%d:", time.Now().UnixNano())
	if p.real {
		p.db = fmt.Sprintf("paprika_bench_%d", time.Now().UnixNano())
		if p.sqlDB, err = sql.Open("mysql", p.o.mysqlDSN); err != nil {
			return err
		}
		if _, err := p.sqlDB.ExecContext(ctx, "CREATE DATABASE "+p.db); err != nil {
			return fmt.Errorf("create database: %w", err)
		}
		p.rdb = redis.NewClient(&redis.Options{Addr: p.o.redisAddr, DB: 6})
		dsn := p.o.mysqlDSN
		if p.o.sqlTrips {
			if dsn, err = p.countTrips(dsn); err != nil {
				return err
			}
		}
		env = append(env, "PAPRIKA_MYSQL_DSN="+dsn+p.db+"?parseTime=true",
			"PAPRIKA_REDIS_URL=redis://"+p.o.redisAddr+"/6", "PAPRIKA_REDIS_PREFIX="+prefix)
	}
	for i := 0; i < p.hubs; i++ {
		port, err := freePort()
		if err != nil {
			return err
		}
		if i == len(*p.cports) {
			cport, err := freePort()
			if err != nil {
				return err
			}
			*p.cports = append(*p.cports, cport)
		}
		cport := (*p.cports)[i]
		url := fmt.Sprintf("http://127.0.0.1:%d", port)
		henv := append(env, fmt.Sprintf("PAPRIKA_HUB_ID=hub-%d", i), fmt.Sprintf("PAPRIKA_CLUSTER_PORT=%d", cport),
			"PAPRIKA_ASSETS_DIR="+filepath.Join(p.dir, fmt.Sprintf("hub-%d", i), "assets"))
		if i == 0 && p.o.pprof != "" {
			henv = append(henv, "PAPRIKA_DEBUG_PPROF="+p.o.pprof)
		}
		if !p.base {
			henv = append(henv, p.o.hubEnv...)
		}
		cmd := exec.Command(bin, "hub", "--listen", fmt.Sprintf("127.0.0.1:%d", port), "--log-level", "warn")
		cmd.Env = henv
		cmd.Stderr = prefixed(fmt.Sprintf("[%s hub-%d] ", p.label, i))
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			return err
		}
		p.hubCmds = append(p.hubCmds, cmd)
		p.urls = append(p.urls, url)
		if err := waitReady(ctx, url); err != nil {
			return err
		}
		c, err := client.New([]string{url})
		if err != nil {
			return err
		}
		p.clients = append(p.clients, c)
	}
	// One worker per hub (all on the one hub when alone) unless -workers
	// says how many, the lanes split between them, so every setup has the
	// same slots. Each is given every hub, starting at its own, as a fleet
	// behind a round-robin list would be: a hub that sends relink sends it
	// on to its grain's hub.
	workers := max(p.hubs, 2)
	if p.o.workers > 0 {
		workers = p.o.workers
	}
	for i := 0; i < workers; i++ {
		lanes := p.o.lanes / workers
		if i < p.o.lanes%workers {
			lanes++
		}
		hubs := make([]string, 0, len(p.urls))
		for j := range p.urls {
			hubs = append(hubs, p.urls[(i+j)%len(p.urls)])
		}
		cmd := exec.Command(bin, "worker", "--hub", strings.Join(hubs, ","), "--id", fmt.Sprintf("wb%d", i),
			"--lanes", strconv.Itoa(lanes), "--log-level", "warn")
		cmd.Env = env
		cmd.Stderr = prefixed(fmt.Sprintf("[%s worker-%d] ", p.label, i))
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			return err
		}
		p.wrkCmds = append(p.wrkCmds, cmd)
	}
	return nil
}

// prefixed passes a child's warnings through, one prefixed line each.
func prefixed(prefix string) io.Writer {
	r, w := io.Pipe()
	go func() {
		s := bufio.NewScanner(r)
		for s.Scan() {
			fmt.Fprintln(os.Stderr, prefix+s.Text())
		}
	}()
	return w
}

func waitReady(ctx context.Context, url string) error {
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get(url + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return fmt.Errorf("hub %s not healthy within 60 s", url)
}

func (p *paprikaSystem) stop() {
	for _, c := range p.wrkCmds {
		_ = c.Process.Signal(syscall.SIGTERM)
	}
	for _, c := range p.wrkCmds {
		_ = c.Wait()
	}
	var peak int64 // memory is the price of a GC target: shown beside the CPU
	for _, c := range p.hubCmds {
		peak = max(peak, peakRSSMiB(c.Process.Pid))
	}
	fmt.Fprintf(os.Stderr, "  hub peak RSS %d MiB\n", peak)
	for _, c := range p.hubCmds {
		_ = c.Process.Signal(syscall.SIGTERM)
	}
	for _, c := range p.hubCmds {
		_ = c.Wait()
	}
	for _, c := range p.clients {
		c.CloseIdleConnections()
	}
	if p.trips != nil {
		p.trips.close()
		p.trips = nil
	}
	if p.sqlDB != nil {
		_, _ = p.sqlDB.Exec("DROP DATABASE IF EXISTS " + p.db)
		_ = p.sqlDB.Close()
	}
	if p.rdb != nil {
		_ = p.rdb.FlushDB(context.Background()).Err()
		_ = p.rdb.Close()
	}
	_ = os.RemoveAll(p.dir)
	p.hubCmds, p.wrkCmds, p.urls, p.clients, p.sqlDB, p.rdb = nil, nil, nil, nil, nil, nil
}

func (p *paprikaSystem) submit(ctx context.Context, n int) error {
	c := p.clients[p.rr.Add(1)%uint64(len(p.clients))]
	req := client.SubmitRequest{Mode: "noop", TimeoutS: 600, MaxAttempts: 1}
	var ids []string
	if n == 1 {
		j, err := c.Submit(ctx, req, "")
		if err != nil {
			return err
		}
		ids = []string{j.ID}
	} else {
		reqs := make([]client.SubmitRequest, n)
		for i := range reqs {
			reqs[i] = req
		}
		res, err := c.SubmitMany(ctx, reqs)
		if err != nil {
			return err
		}
		for _, r := range res {
			if r.Err != nil {
				return r.Err
			}
			ids = append(ids, r.Job.ID)
		}
	}
	p.mu.Lock()
	if p.record {
		p.recorded = append(p.recorded, ids...)
	}
	p.mu.Unlock()
	return nil
}

// done sums paprika_jobs_finished_total over the hubs.
func (p *paprikaSystem) done(ctx context.Context) (int64, error) {
	var n float64
	for _, u := range p.urls {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u+"/metrics", nil)
		// Uncompressed: the hub's gzip of every poll would count as hub CPU
		// per job (7 % of a hub's profile, and once per hub).
		req.Header.Set("Accept-Encoding", "identity")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err
		}
		s := bufio.NewScanner(resp.Body)
		s.Buffer(make([]byte, 1<<20), 1<<20)
		for s.Scan() {
			line := s.Text()
			if !strings.HasPrefix(line, "paprika_jobs_finished_total{") {
				continue
			}
			if i := strings.LastIndexByte(line, ' '); i > 0 {
				v, _ := strconv.ParseFloat(line[i+1:], 64)
				n += v
			}
		}
		resp.Body.Close()
	}
	return int64(n), nil
}

func (p *paprikaSystem) procs() map[string]func() float64 {
	m := map[string]func() float64{
		"hubs":    func() float64 { return sumCPU(p.hubCmds) },
		"workers": func() float64 { return sumCPU(p.wrkCmds) },
		"bench":   selfCPU,
	}
	if p.real {
		m["mariadb"] = func() float64 { return serviceCPU("mariadbd") }
		m["redis"] = func() float64 { return serviceCPU("redis-server") }
	}
	return m
}

func sumCPU(cmds []*exec.Cmd) float64 {
	t := 0.0
	for _, c := range cmds {
		t += cpuSeconds(c.Process.Pid)
	}
	return t
}

func (p *paprikaSystem) stmts(ctx context.Context) map[string]float64 {
	m := map[string]float64{}
	p.hubCounters(ctx, m)
	if !p.real {
		return m
	}
	rows, err := p.sqlDB.QueryContext(ctx, "SHOW GLOBAL STATUS LIKE 'Com_%'")
	if err == nil {
		for rows.Next() {
			var k string
			var v float64
			if rows.Scan(&k, &v) != nil {
				continue
			}
			switch k {
			case "Com_select", "Com_insert", "Com_update", "Com_delete", "Com_commit", "Com_begin", "Com_replace", "Com_insert_select":
				m["sql"] += v
				// by statement kind, in the per-job line (not the table)
				m["sql/"+strings.TrimPrefix(k, "Com_")] += v
			case "Com_stmt_prepare", "Com_stmt_execute", "Com_stmt_close", "Com_stmt_reset":
				m["sql-proto"] += v
			}
		}
		rows.Close()
		m["sql-proto"] += m["sql"]
	}
	if p.trips != nil {
		m["sql-trips"] = float64(p.trips.trips.Load())
	}
	m["redis"] = redisCalls(ctx, p.rdb)
	p.grainMessages(ctx, m)
	return m
}

// hubCounters adds the bytes the hubs' Go heaps allocated so far
// (go_memstats_alloc_bytes_total), in KiB, as "hub-alloc-kb": per job, what
// the hubs' garbage collectors are made to work through. Unlike CPU seconds
// it hardly moves with what else the machine is doing. With the embedded
// store it adds the store's commits (paprika_job_store_commits_total) as
// "commits": per job, the fsync pairs a job's writes cost.
func (p *paprikaSystem) hubCounters(ctx context.Context, m map[string]float64) {
	const family = "go_memstats_alloc_bytes_total "
	const commits = "paprika_job_store_commits_total "
	p.eachMetricLine(ctx, func(line string) {
		if v, ok := strings.CutPrefix(line, family); ok {
			n, _ := strconv.ParseFloat(v, 64)
			m["hub-alloc-kb"] += n / 1024
		}
		if v, ok := strings.CutPrefix(line, commits); ok {
			n, _ := strconv.ParseFloat(v, 64)
			m["commits"] += n
		}
	})
}

// eachMetricLine calls fn with each line of every hub's /metrics; a hub
// that does not answer ends the walk (the figures of that read are short).
func (p *paprikaSystem) eachMetricLine(ctx context.Context, fn func(line string)) {
	for _, u := range p.urls {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u+"/metrics", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return
		}
		s := bufio.NewScanner(resp.Body)
		s.Buffer(make([]byte, 1<<20), 1<<20)
		for s.Scan() {
			fn(s.Text())
		}
		resp.Body.Close()
	}
}

// grainMessages adds the hubs' paprika_grain_messages_total to m: the sums
// "grain-local" and "grain-remote", and each series as "kind/op/to" (a
// binary without the family adds nothing).
func (p *paprikaSystem) grainMessages(ctx context.Context, m map[string]float64) {
	const family = "paprika_grain_messages_total{"
	p.eachMetricLine(ctx, func(line string) {
		if !strings.HasPrefix(line, family) {
			return
		}
		i := strings.LastIndexByte(line, ' ')
		j := strings.IndexByte(line, '}')
		if i < 0 || j < 0 {
			return
		}
		v, _ := strconv.ParseFloat(line[i+1:], 64)
		labels := map[string]string{}
		for _, kv := range strings.Split(line[len(family):j], ",") {
			k, val, _ := strings.Cut(kv, "=")
			labels[k] = strings.Trim(val, `"`)
		}
		m[labels["kind"]+"/"+labels["op"]+"/"+labels["to"]] += v
		m["grain-"+labels["to"]] += v
	})
}

// redisCalls sums the calls of INFO commandstats (this read counts one).
func redisCalls(ctx context.Context, rdb *redis.Client) float64 {
	s, err := rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		return 0
	}
	t := 0.0
	for _, line := range strings.Split(s, "\n") {
		if !strings.HasPrefix(line, "cmdstat_") {
			continue
		}
		i := strings.Index(line, "calls=")
		if i < 0 {
			continue
		}
		v := line[i+len("calls="):]
		if j := strings.IndexByte(v, ','); j >= 0 {
			v = v[:j]
		}
		n, _ := strconv.ParseFloat(v, 64)
		t += n
	}
	return t
}

func (p *paprikaSystem) resetLatencies() {
	p.mu.Lock()
	p.record, p.recorded = true, nil
	p.mu.Unlock()
}

// latencies are started_at − created_at, both stamped by the hub.
func (p *paprikaSystem) latencies(ctx context.Context) ([]time.Duration, error) {
	p.mu.Lock()
	ids := p.recorded
	p.record, p.recorded = false, nil
	p.mu.Unlock()
	out := make([]time.Duration, 0, len(ids))
	for _, id := range ids {
		j, err := p.clients[0].Get(ctx, id)
		if err != nil {
			return nil, err
		}
		out = append(out, j.StartedAt.Sub(j.CreatedAt))
	}
	return out, nil
}

func newSystem(name string, o *options) (system, error) {
	switch name {
	case "paprika-embedded":
		return &paprikaSystem{label: name, o: o, hubs: 1, cports: new([]int)}, nil
	case "paprika-mariadb":
		return &paprikaSystem{label: name, o: o, hubs: 1, real: true, cports: new([]int)}, nil
	case "paprika-3hubs":
		return &paprikaSystem{label: name, o: o, hubs: 3, real: true, cports: new([]int)}, nil
	case "asynq":
		return &asynqSystem{o: o}, nil
	case "river":
		return &riverSystem{o: o}, nil
	}
	return nil, fmt.Errorf("unknown system %q (asynq, river, paprika-embedded, paprika-mariadb, paprika-3hubs)", name)
}

// laneGaps are the freed lane → next job gaps of the last n jobs to
// finish (the flat-out run's), two ways (see gapsOf): per lane and per
// worker slot.
func (p *paprikaSystem) laneGaps(ctx context.Context, n int) (lane, slot []time.Duration, err error) {
	var jobs []client.Job
	cursor := ""
	for len(jobs) < n {
		page, err := p.clients[0].List(ctx, client.ListOptions{Status: client.StatusSucceeded, Limit: min(n-len(jobs), 1000), Cursor: cursor})
		if err != nil {
			return nil, nil, fmt.Errorf("list jobs: %w", err)
		}
		jobs = append(jobs, page.Jobs...)
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	lane, slot = gapsOf(jobs)
	return lane, slot, nil
}

// gapsOf measures how long freed capacity waited for a queued job, from
// the hubs' stamps: a job's finished_at (its job_done read off the
// worker's link) and the next one's started_at (the release, the
// placement, the claim, the assignment, the worker's start and its
// job_started). Only a next job that was already queued when the
// capacity was freed counts (its created_at is not later than the
// finish), so capacity that waited for a submission is not counted as
// slow.
//
// lane pairs two jobs in a row on one worker's lane. It overstated what
// a worker waits while a worker put an assignment on its lowest free
// lane (before it took the lane free the longest): a freed high lane was
// passed over for lower ones freed meanwhile. A lane's jobs are paired
// in the order they finished, which is the order the lane ran them; their
// started_at is the claim, and with several hubs a job claimed first can
// reach the worker after one claimed later and run after it.
//
// slot counts a worker's capacity as the hub does, in interchangeable
// slots: each start on a worker is paired with the earliest of its freed
// slots not paired yet.
func gapsOf(jobs []client.Job) (lane, slot []time.Duration) {
	byLane := map[string][]client.Job{}
	byWorker := map[string][]client.Job{}
	for _, j := range jobs {
		if !j.StartedAt.IsZero() && !j.FinishedAt.IsZero() && j.Lane != "" {
			k := j.WorkerID + "/" + j.Lane
			byLane[k] = append(byLane[k], j)
			byWorker[j.WorkerID] = append(byWorker[j.WorkerID], j)
		}
	}
	for _, js := range byLane {
		slices.SortFunc(js, func(a, b client.Job) int { return a.FinishedAt.Compare(b.FinishedAt) })
		for i := 1; i < len(js); i++ {
			prev, next := js[i-1], js[i]
			if next.CreatedAt.After(prev.FinishedAt) || next.StartedAt.Before(prev.FinishedAt) {
				continue
			}
			lane = append(lane, next.StartedAt.Sub(prev.FinishedAt))
		}
	}
	type event struct {
		at    time.Time
		start bool
		job   *client.Job
	}
	for _, js := range byWorker {
		evs := make([]event, 0, 2*len(js))
		for i := range js {
			evs = append(evs, event{js[i].FinishedAt, false, &js[i]}, event{js[i].StartedAt, true, &js[i]})
		}
		// At one instant a finish comes first: the slot it frees is free.
		slices.SortFunc(evs, func(a, b event) int {
			if c := a.at.Compare(b.at); c != 0 {
				return c
			}
			if a.start == b.start {
				return 0
			}
			if a.start {
				return 1
			}
			return -1
		})
		var freed []time.Time // freed slots not refilled yet, oldest first
		for _, e := range evs {
			if !e.start {
				freed = append(freed, e.at)
				continue
			}
			if len(freed) == 0 {
				continue // a slot that was never taken: nothing was freed
			}
			f := freed[0]
			freed = freed[1:]
			if !e.job.CreatedAt.After(f) {
				slot = append(slot, e.at.Sub(f))
			}
		}
	}
	return lane, slot
}

// countTrips starts the round-trip counter in front of the server dsn
// names and returns dsn pointed at it.
func (p *paprikaSystem) countTrips(dsn string) (string, error) {
	cfg, err := gomysql.ParseDSN(dsn)
	if err != nil {
		return "", fmt.Errorf("-mysql: %w", err)
	}
	if cfg.Net != "tcp" || cfg.TLSConfig != "" && cfg.TLSConfig != "false" {
		return "", fmt.Errorf("-sqltrips needs a plain tcp -mysql DSN, not %s", cfg.Net)
	}
	if p.trips, err = startSQLTripCounter(cfg.Addr); err != nil {
		return "", err
	}
	cfg.Addr = p.trips.addr()
	return cfg.FormatDSN(), nil
}
