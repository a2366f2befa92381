// Command tlscost measures what TLS costs Paprika, with real processes, in
// one run: alternating rounds with and without TLS, each on fresh hub and
// worker processes, reported as medians and TLS/plain ratios (the machine
// is noisy; a ratio within one run is the figure that means something).
//
//   - cluster: two hubs in one cluster (Redis membership, MariaDB jobs),
//     two worker processes linked to the second hub only, no-op jobs
//     submitted to the first, so every job's placement, assignment and
//     reports cross remoting between the hubs. Cluster mutual TLS
//     (cluster.tls_*) against cluster.insecure; figure: jobs/s.
//   - link: one hub, two worker processes streaming noop jobs with many
//     log lines; the hub on HTTPS/WSS (hub.tls_cert/key, worker --ca)
//     against plain HTTP/WS; figure: log lines stored per second.
//
// Throughput is counted from the hub's own stamps: jobs (or their lines)
// over the span from the first job's created_at to the last one's
// finished_at, so polling for the end adds nothing.
//
//	go run ./loadgen/tlscost                       # or: make bench-tls
//	go run ./loadgen/tlscost --rounds 7 --only link
//
// It needs MariaDB and Redis for the cluster part (the test services,
// scripts/services.sh); --mysql-dsn and --redis-url point elsewhere.
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"database/sql"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/paprika-hub/paprika/client"
	"github.com/paprika-hub/paprika/persistence"
)

type options struct {
	binary       string
	rounds       int
	only         string
	clusterJobs  int
	clusterLanes int
	submitters   int
	linkJobs     int
	linkLines    int
	linkLanes    int
	mysqlDSN     string
	redisURL     string
	keep         bool
}

func main() {
	var o options
	flag.StringVar(&o.binary, "binary", "", "the paprika binary (default: go build ./cmd/paprika into a temporary directory)")
	flag.IntVar(&o.rounds, "rounds", 5, "rounds per variant (alternating TLS and plain)")
	flag.StringVar(&o.only, "only", "all", "cluster, link or all")
	flag.IntVar(&o.clusterJobs, "cluster-jobs", 600, "no-op jobs per cluster round")
	flag.IntVar(&o.clusterLanes, "cluster-lanes", 4, "lanes of each of the two workers in the cluster rounds")
	flag.IntVar(&o.submitters, "submitters", 8, "concurrent submitters in the cluster rounds")
	flag.IntVar(&o.linkJobs, "link-jobs", 4, "noop jobs per link round (keep <= 2 x link-lanes: all run at once)")
	flag.IntVar(&o.linkLines, "link-lines", 100000, "log lines of each job in the link rounds")
	flag.IntVar(&o.linkLanes, "link-lanes", 2, "lanes of each of the two workers in the link rounds")
	flag.StringVar(&o.mysqlDSN, "mysql-dsn", envOr("PAPRIKA_TEST_MYSQL_DSN", "root@tcp(127.0.0.1:3306)/"), "MariaDB server for the cluster rounds (a database is created and dropped)")
	flag.StringVar(&o.redisURL, "redis-url", envOr("PAPRIKA_TEST_REDIS_URL", "redis://127.0.0.1:6379/0"), "Redis for the cluster rounds (a fresh key prefix per round)")
	flag.BoolVar(&o.keep, "keep", false, "keep the work directory (process logs)")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "tlscost:", err)
		os.Exit(1)
	}
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func run(o options) error {
	if o.rounds < 1 || o.clusterJobs < 1 || o.linkJobs < 1 || o.linkLines < 1 {
		return fmt.Errorf("rounds, cluster-jobs, link-jobs and link-lines must be positive")
	}
	work, err := os.MkdirTemp("", "paprika-tlscost-")
	if err != nil {
		return err
	}
	if o.keep {
		fmt.Println("work directory:", work)
	} else {
		defer os.RemoveAll(work)
	}
	if o.binary == "" {
		o.binary = filepath.Join(work, "paprika")
		build := exec.Command("go", "build", "-o", o.binary, "./cmd/paprika")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("build paprika (run from the repository root, or give --binary): %w", err)
		}
	}
	certs := filepath.Join(work, "certs")
	for _, args := range [][]string{{"certs", "ca", "--dir", certs}, {"certs", "hub", "--dir", certs, "--host", "127.0.0.1,localhost"}} {
		if out, err := exec.Command(o.binary, args...).CombinedOutput(); err != nil {
			return fmt.Errorf("paprika %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	b := &bench{o: o, work: work, certs: certs}
	if o.only == "all" || o.only == "cluster" {
		if err := b.cluster(); err != nil {
			return err
		}
	}
	if o.only == "all" || o.only == "link" {
		if err := b.link(); err != nil {
			return err
		}
	}
	return nil
}

type bench struct {
	o     options
	work  string
	certs string
	seq   int
}

// figures are one round's: the throughput, and the CPU time (user+system,
// from /proc) the hubs and the workers spent per unit of work over the
// measured batch. CPU per unit is the steadier figure on a shared
// machine: other processes' load slows the round's clock far more than it
// changes what each job costs.
type figures struct {
	rate      float64 // jobs/s or lines/s
	hubCPU    float64 // CPU seconds of the hubs per unit
	workerCPU float64 // CPU seconds of the workers per unit
}

// variants runs rounds of a and b, alternating, and prints each round and
// the summary. unit names the rate, per the CPU figures' unit (with its
// size in work units).
func (b *bench) variants(a, bname, unit, per string, perN float64, round func(secure bool) (figures, error)) error {
	var fa, fb []figures
	for r := 0; r < b.o.rounds; r++ {
		for _, secure := range order(r) {
			f, err := round(secure)
			if err != nil {
				return err
			}
			name := bname
			if secure {
				name, fa = a, append(fa, f)
			} else {
				fb = append(fb, f)
			}
			fmt.Printf("  round %d %-8s %10.1f %s   CPU per %s: hubs %7.3f s, workers %7.3f s\n",
				r+1, name, f.rate, unit, per, f.hubCPU*perN, f.workerCPU*perN)
		}
	}
	pick := func(fs []figures, get func(figures) float64) []float64 {
		out := make([]float64, len(fs))
		for i, f := range fs {
			out[i] = get(f)
		}
		return out
	}
	summary(unit, a, bname, pick(fa, func(f figures) float64 { return f.rate }), pick(fb, func(f figures) float64 { return f.rate }), 1)
	summary("hub CPU s per "+per, a, bname, pick(fa, func(f figures) float64 { return f.hubCPU }), pick(fb, func(f figures) float64 { return f.hubCPU }), perN)
	summary("worker CPU s per "+per, a, bname, pick(fa, func(f figures) float64 { return f.workerCPU }), pick(fb, func(f figures) float64 { return f.workerCPU }), perN)
	return nil
}

// cluster alternates rounds of two hubs on cluster mTLS and on
// cluster.insecure.
func (b *bench) cluster() error {
	dsn, drop, err := mysqlDatabase(b.o.mysqlDSN)
	if err != nil {
		return err
	}
	defer drop()
	fmt.Printf("cluster TLS: 2 hubs, 2 workers x %d lanes on hub B, %d no-op jobs per round submitted to hub A (%d submitters), %d rounds each\n",
		b.o.clusterLanes, b.o.clusterJobs, b.o.submitters, b.o.rounds)
	return b.variants("mtls", "insecure", "jobs/s", "1000 jobs", 1000, func(secure bool) (figures, error) { return b.clusterRound(dsn, secure) })
}

// link alternates rounds of one hub on HTTPS/WSS and on HTTP/WS.
func (b *bench) link() error {
	fmt.Printf("worker link TLS: 1 hub, 2 workers x %d lanes, %d noop jobs x %d lines per round, %d rounds each\n",
		b.o.linkLanes, b.o.linkJobs, b.o.linkLines, b.o.rounds)
	return b.variants("wss", "ws", "lines/s", "1M lines", 1e6, b.linkRound)
}

// order alternates which variant goes first, so neither always runs on a
// warmer (or more loaded) machine.
func order(round int) []bool {
	if round%2 == 0 {
		return []bool{true, false}
	}
	return []bool{false, true}
}

// summary prints the medians of a and b (each times scale) and their
// ratio, beside the median of the rounds' paired ratios.
func summary(unit, a, b string, as, bs []float64, scale float64) {
	ma, mb := median(as), median(bs)
	fmt.Printf("  median %-26s %s %10.3f  %s %10.3f  ratio %s/%s %.3f (paired rounds: %.3f)\n",
		unit+":", a, ma*scale, b, mb*scale, a, b, ma/mb, median(pairedRatios(as, bs)))
}

// clusterRound starts hub A, hub B and two workers on B, warms up, then
// counts jobs/s over clusterJobs submitted to A.
func (b *bench) clusterRound(dsn string, secure bool) (figures, error) {
	b.seq++
	dir := filepath.Join(b.work, fmt.Sprintf("cluster-%02d", b.seq))
	g := &group{dir: dir}
	defer g.stop()
	prefix := "paprika_tlscost_" + randHex() + ":"
	defer cleanRedis(b.o.redisURL, prefix)
	shared := []string{
		"PAPRIKA_MYSQL_DSN=" + dsn,
		"PAPRIKA_REDIS_URL=" + b.o.redisURL,
		"PAPRIKA_REDIS_PREFIX=" + prefix,
		"PAPRIKA_ASSETS_DIR=" + filepath.Join(dir, "assets"),
		"PAPRIKA_LIMITS_API_RATE=0",
		"PAPRIKA_LIMITS_MAX_CONNS_PER_IP=0",
	}
	if secure {
		shared = append(shared,
			"PAPRIKA_CLUSTER_TLS_CA="+filepath.Join(b.certs, "ca.crt"),
			"PAPRIKA_CLUSTER_TLS_CERT="+filepath.Join(b.certs, "hub.crt"),
			"PAPRIKA_CLUSTER_TLS_KEY="+filepath.Join(b.certs, "hub.key"))
	} else {
		shared = append(shared, "PAPRIKA_CLUSTER_INSECURE=true")
	}
	var urls []string
	for _, name := range []string{"hubA", "hubB"} {
		addr, err := freeAddr()
		if err != nil {
			return figures{}, err
		}
		if err := g.start(b.o.binary, name, append([]string{"PAPRIKA_HUB_LISTEN=" + addr}, shared...), "hub"); err != nil {
			return figures{}, err
		}
		urls = append(urls, "http://"+addr)
	}
	for _, u := range urls {
		if err := waitReady(u, nil, 30*time.Second); err != nil {
			return figures{}, fmt.Errorf("%w (logs in %s)", err, dir)
		}
	}
	for i := 0; i < 2; i++ {
		if err := g.start(b.o.binary, fmt.Sprintf("worker%d", i), nil, "worker", "--hub", urls[1], "--id", fmt.Sprintf("tc%d", i),
			"--lanes", strconv.Itoa(b.o.clusterLanes)); err != nil {
			return figures{}, err
		}
	}
	c, err := client.New([]string{urls[0]}, client.WithMaxAttempts(8))
	if err != nil {
		return figures{}, err
	}
	defer c.CloseIdleConnections()
	if err := waitWorkers(c, 2, 30*time.Second); err != nil {
		return figures{}, err
	}
	noop := client.SubmitRequest{Mode: "noop", Params: map[string]any{"lines": 1}}
	if _, err := submitAll(c, noop, 40, b.o.submitters); err != nil { // warm-up: connections, handshakes, grains
		return figures{}, err
	}
	cpu0 := g.cpu()
	jobs, err := submitAll(c, noop, b.o.clusterJobs, b.o.submitters)
	if err != nil {
		return figures{}, err
	}
	return g.figures(cpu0, float64(len(jobs)), spanOf(jobs)), nil
}

// linkRound starts one hub (HTTPS when secure) and two workers, warms up,
// then counts stored log lines per second over linkJobs jobs.
func (b *bench) linkRound(secure bool) (figures, error) {
	b.seq++
	dir := filepath.Join(b.work, fmt.Sprintf("link-%02d", b.seq))
	g := &group{dir: dir}
	defer g.stop()
	addr, err := freeAddr()
	if err != nil {
		return figures{}, err
	}
	env := []string{
		"PAPRIKA_HUB_LISTEN=" + addr,
		"PAPRIKA_ASSETS_DIR=" + filepath.Join(dir, "assets"),
		"PAPRIKA_LIMITS_MAX_LOG_LINES=0", "PAPRIKA_LIMITS_MAX_LOG_BYTES=0",
		"PAPRIKA_LIMITS_API_RATE=0", "PAPRIKA_LIMITS_MAX_CONNS_PER_IP=0",
	}
	url := "http://" + addr
	var workerTLS []string
	var pool *x509.CertPool
	if secure {
		env = append(env, "PAPRIKA_HUB_TLS_CERT="+filepath.Join(b.certs, "hub.crt"), "PAPRIKA_HUB_TLS_KEY="+filepath.Join(b.certs, "hub.key"))
		url = "https://" + addr
		workerTLS = []string{"--ca", filepath.Join(b.certs, "ca.crt")}
		pem, err := os.ReadFile(filepath.Join(b.certs, "ca.crt"))
		if err != nil {
			return figures{}, err
		}
		pool = x509.NewCertPool()
		pool.AppendCertsFromPEM(pem)
	}
	if err := g.start(b.o.binary, "hub", env, "hub"); err != nil {
		return figures{}, err
	}
	if err := waitReady(url, pool, 30*time.Second); err != nil {
		return figures{}, fmt.Errorf("%w (logs in %s)", err, dir)
	}
	for i := 0; i < 2; i++ {
		args := append([]string{"worker", "--hub", url, "--id", fmt.Sprintf("tl%d", i), "--lanes", strconv.Itoa(b.o.linkLanes)}, workerTLS...)
		if err := g.start(b.o.binary, fmt.Sprintf("worker%d", i), nil, args...); err != nil {
			return figures{}, err
		}
	}
	opts := []client.Option{client.WithMaxAttempts(8)}
	if pool != nil {
		opts = append(opts, client.WithRootCAs(pool))
	}
	c, err := client.New([]string{url}, opts...)
	if err != nil {
		return figures{}, err
	}
	defer c.CloseIdleConnections()
	if err := waitWorkers(c, 2, 30*time.Second); err != nil {
		return figures{}, err
	}
	lines := func(n int) client.SubmitRequest {
		return client.SubmitRequest{Mode: "noop", TimeoutS: 600, Params: map[string]any{"lines": n}}
	}
	if _, err := submitAll(c, lines(2000), b.o.linkJobs, b.o.linkJobs); err != nil { // warm-up
		return figures{}, err
	}
	cpu0 := g.cpu()
	jobs, err := submitAll(c, lines(b.o.linkLines), b.o.linkJobs, b.o.linkJobs)
	if err != nil {
		return figures{}, err
	}
	return g.figures(cpu0, float64(len(jobs)*b.o.linkLines), spanOf(jobs)), nil
}

// submitAll submits n copies of req with the given concurrency, waits for
// all to end and returns them; any that did not succeed is an error.
func submitAll(c *client.Client, req client.SubmitRequest, n, concurrency int) ([]persistence.Job, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	ids := make([]string, n)
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	next := make(chan int)
	for range max(concurrency, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				j, err := c.Submit(ctx, req, "")
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				ids[i] = j.ID
				mu.Unlock()
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	if firstErr != nil {
		return nil, fmt.Errorf("submit: %w", firstErr)
	}
	jobs := make([]persistence.Job, 0, n)
	for _, id := range ids {
		for {
			j, err := c.Get(ctx, id)
			if err != nil {
				return nil, fmt.Errorf("get %s: %w", id, err)
			}
			if j.Status.Final() {
				if j.Status != persistence.StatusSucceeded {
					return nil, fmt.Errorf("job %s ended %s (%s %s)", id, j.Status, j.Reason, j.Error)
				}
				jobs = append(jobs, j)
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return jobs, nil
}

// spanOf is from the first job's creation to the last one's end, by the
// hubs' clocks (one machine: one clock).
func spanOf(jobs []persistence.Job) time.Duration {
	first, last := jobs[0].CreatedAt, jobs[0].FinishedAt
	for _, j := range jobs {
		if j.CreatedAt.Before(first) {
			first = j.CreatedAt
		}
		if j.FinishedAt.After(last) {
			last = j.FinishedAt
		}
	}
	return max(last.Sub(first), time.Millisecond)
}

func waitWorkers(c *client.Client, n int, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		ws, err := c.Workers(ctx)
		cancel()
		alive := 0
		for _, w := range ws {
			if w.Alive {
				alive++
			}
		}
		if err == nil && alive >= n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d workers not linked within %s (%d are; %v)", n, within, alive, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func waitReady(url string, pool *x509.CertPool, within time.Duration) error {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Timeout: 2 * time.Second, Transport: tr}
	deadline := time.Now().Add(within)
	for {
		res, err := hc.Get(url + "/readyz")
		if err == nil {
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("hub at %s not ready within %s: %v", url, within, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// group is the processes of one round; stop ends them (SIGTERM, then
// SIGKILL after 10 s), each by its own pid.
type group struct {
	dir   string
	procs []*exec.Cmd
	hub   []bool // procs[i] is a hub (else a worker)
	done  []chan struct{}
}

// cpu is the CPU time so far of the hubs and of the workers, in clock
// ticks (USER_HZ, 100 on Linux).
func (g *group) cpu() [2]int64 {
	var t [2]int64
	for i, p := range g.procs {
		k := 1
		if g.hub[i] {
			k = 0
		}
		t[k] += cpuTicks(p.Process.Pid)
	}
	return t
}

// figures turns units of work done over span, and the CPU spent since
// cpu0, into a round's figures.
func (g *group) figures(cpu0 [2]int64, units float64, span time.Duration) figures {
	cpu := g.cpu()
	return figures{rate: units / span.Seconds(),
		hubCPU:    float64(cpu[0]-cpu0[0]) / userHZ / units,
		workerCPU: float64(cpu[1]-cpu0[1]) / userHZ / units}
}

// userHZ is the unit of /proc/<pid>/stat's times on Linux.
const userHZ = 100

// cpuTicks is utime+stime of pid; 0 when /proc cannot tell.
func cpuTicks(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name may hold spaces: fields count from after its ")".
	rest := string(b[strings.LastIndexByte(string(b), ')')+1:])
	f := strings.Fields(rest)
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return u + st
}

func (g *group) start(bin, name string, env []string, args ...string) error {
	if err := os.MkdirAll(g.dir, 0o755); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(g.dir, name+".log"))
	if err != nil {
		return err
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Dir = g.dir
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		f.Close()
		return fmt.Errorf("start %s: %w", name, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); f.Close(); close(done) }()
	g.procs = append(g.procs, cmd)
	g.hub = append(g.hub, len(args) > 0 && args[0] == "hub")
	g.done = append(g.done, done)
	return nil
}

func (g *group) stop() {
	// Workers first (they are started last), so the hubs see them leave.
	for i := len(g.procs) - 1; i >= 0; i-- {
		_ = g.procs[i].Process.Signal(syscall.SIGTERM)
		select {
		case <-g.done[i]:
		case <-time.After(10 * time.Second):
			_ = g.procs[i].Process.Kill()
			<-g.done[i]
		}
	}
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func randHex() string {
	var b [6]byte
	for i := range b {
		b[i] = byte(rand.IntN(256))
	}
	return hex.EncodeToString(b[:])
}

// mysqlDatabase creates a fresh database on the server of dsn and returns
// a DSN for it and its drop.
func mysqlDatabase(dsn string) (string, func(), error) {
	cfg, err := gomysql.ParseDSN(dsn)
	if err != nil {
		return "", nil, fmt.Errorf("--mysql-dsn: %w", err)
	}
	cfg.Timeout = 3 * time.Second
	conn, err := gomysql.NewConnector(cfg)
	if err != nil {
		return "", nil, err
	}
	db := sql.OpenDB(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	name := "paprika_tlscost_" + randHex()
	if _, err := db.ExecContext(ctx, "CREATE DATABASE "+name+" CHARACTER SET utf8mb4"); err != nil {
		_ = db.Close()
		return "", nil, fmt.Errorf("MariaDB at %s (the cluster rounds need it; scripts/services.sh): %w", cfg.Addr, err)
	}
	cfg.DBName = name
	cfg.ParseTime = true
	return cfg.FormatDSN(), func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, _ = db.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name)
		_ = db.Close()
	}, nil
}
