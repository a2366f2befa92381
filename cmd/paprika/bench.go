package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/paprika-hub/paprika/loadgen"
)

// envWorkerToken is the hub's worker-link token, the default --worker-token.
const envWorkerToken = "PAPRIKA_AUTH_WORKER_TOKEN"

const benchSynopsis = `paprika bench [--hub URL | --spawn-hub] [--hub-pid PID] [--workers N] [--lanes L]
       [--rate R] [--duration D] [--warmup D] [--followers K] [--redis-url URL] [--json]

Simulates N workers streaming job_log lines into a hub (one noop job per lane,
R lines/s per worker, 0 = flat out) with K SSE followers, and reports lines/s
sent and ingested, log-store round trips, hub CPU per line and RSS (with a hub
pid), Redis commands (with --redis-url), line-to-follower latency and
backpressure stalls. Progress goes to stderr every 5 s, the report to stdout.
Exit status 0 when every line sent was stored and every job succeeded.`

// benchFlags are the flags of `paprika bench`.
type benchFlags struct {
	hub, token, workerToken, redisURL string
	spawn, jsonOut, quiet             bool
	hubPID, workers, lanes, followers int
	lineBytes, sendBuffer             int
	rate                              float64
	duration, warmup                  time.Duration
}

func (f *benchFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.hub, "hub", "", "hub `URL` to load (default $"+envHub+" or "+defaultHubURL+")")
	fs.BoolVar(&f.spawn, "spawn-hub", false, "start a hub (paprika hub) as a child process on a free port (PAPRIKA_* env passes through) and stop it at the end")
	fs.IntVar(&f.hubPID, "hub-pid", 0, "`pid` of the hub, for its CPU and RSS (implied by --spawn-hub)")
	fs.IntVar(&f.workers, "workers", loadgen.DefaultWorkers, "simulated workers `N`")
	fs.IntVar(&f.lanes, "lanes", loadgen.DefaultLanes, "lanes per worker; one job runs on each")
	fs.Float64Var(&f.rate, "rate", loadgen.DefaultRate, "log lines/s per worker; 0 = flat out")
	fs.DurationVar(&f.duration, "duration", loadgen.DefaultDuration, "measured window")
	fs.DurationVar(&f.warmup, "warmup", loadgen.DefaultWarmup, "time before the window, left out of the figures")
	fs.IntVar(&f.followers, "followers", loadgen.DefaultFollowers, "SSE followers of random running jobs")
	fs.IntVar(&f.lineBytes, "line-bytes", 0, "pad each log line to at least this many bytes (0: about 30)")
	fs.IntVar(&f.sendBuffer, "sndbuf", 0, "SO_SNDBUF of each worker socket in `bytes` (0: kernel default); small values make a slow hub block writes sooner")
	fs.StringVar(&f.redisURL, "redis-url", "", "Redis the hub uses, for INFO stats/commandstats deltas (`URL`)")
	fs.StringVar(&f.token, "token", "", "API bearer `token` (default $"+envToken+")")
	fs.StringVar(&f.workerToken, "worker-token", "", "worker-link `token` (default $"+envWorkerToken+", else --token)")
	fs.BoolVar(&f.jsonOut, "json", false, "print the report as JSON")
	fs.BoolVar(&f.quiet, "quiet", false, "no progress lines")
}

// runBench is `paprika bench`: the load generator (package loadgen).
func runBench(args []string) int {
	return benchMain(args, os.Stdout, os.Stderr, os.Getenv)
}

func benchMain(args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	fs := flag.NewFlagSet("paprika bench", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var f benchFlags
	f.register(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			var b bytes.Buffer
			fs.SetOutput(&b)
			fs.PrintDefaults()
			fmt.Fprintf(stdout, "Usage: %s\n\nFlags:\n%s", benchSynopsis, b.String())
			return exitOK
		}
		fmt.Fprintf(stderr, "paprika bench: %v (see paprika bench -h)\n", err)
		return exitUsage
	}
	opts, err := f.options(fs, getenv, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "paprika bench: %v (see paprika bench -h)\n", err)
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	var spawned *loadgen.SpawnedHub
	if f.spawn {
		bin, err := os.Executable()
		if err != nil {
			fmt.Fprintf(stderr, "paprika bench: find own binary to spawn the hub: %v\n", err)
			return exitFail
		}
		h, err := loadgen.SpawnHub(ctx, loadgen.SpawnOptions{Binary: bin, Args: []string{"--log-level", "warn"}})
		if err != nil {
			fmt.Fprintf(stderr, "paprika bench: %v\n", err)
			return exitFail
		}
		defer func() {
			if err := h.Stop(loadgen.DefaultSpawnStopTimeout); err != nil {
				fmt.Fprintf(stderr, "paprika bench: %v\n", err)
			}
		}()
		spawned = h
		fmt.Fprintf(stderr, "spawned hub pid %d at %s (log %s, kept if the run fails)\n", h.PID, h.URL, h.LogPath)
		opts.HubURL, opts.HubPID = h.URL, h.PID
	}
	rep, err := loadgen.Run(ctx, opts)
	if spawned != nil && (err != nil || !rep.OK()) {
		spawned.KeepLog()
	}
	if err != nil {
		if ctx.Err() != nil {
			fmt.Fprintln(stderr, "paprika bench: interrupted")
			return exitInterrupted
		}
		fmt.Fprintf(stderr, "paprika bench: %v\n", err)
		return exitFail
	}
	if f.jsonOut {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			fmt.Fprintf(stderr, "paprika bench: %v\n", err)
			return exitFail
		}
	} else if err := rep.WriteText(stdout); err != nil {
		fmt.Fprintf(stderr, "paprika bench: %v\n", err)
		return exitFail
	}
	if !rep.OK() {
		fmt.Fprintln(stderr, "paprika bench: lines were lost or jobs did not succeed (see the report)")
		return exitFail
	}
	return exitOK
}

// options maps the flags (and their env defaults) onto loadgen.Options.
func (f *benchFlags) options(fs *flag.FlagSet, getenv func(string) string, progress io.Writer) (loadgen.Options, error) {
	if fs.NArg() > 0 {
		return loadgen.Options{}, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	var errs []error
	if f.spawn && (set["hub"] || set["hub-pid"]) {
		errs = append(errs, errors.New("--spawn-hub starts its own hub: drop --hub and --hub-pid"))
	}
	positive := func(name string, v int) {
		if v < 1 {
			errs = append(errs, fmt.Errorf("--%s %d: want at least 1", name, v))
		}
	}
	positive("workers", f.workers)
	positive("lanes", f.lanes)
	if f.rate < 0 {
		errs = append(errs, fmt.Errorf("--rate %g: want lines/s per worker >= 0 (0 = flat out)", f.rate))
	}
	if f.duration <= 0 {
		errs = append(errs, fmt.Errorf("--duration %s: want > 0", f.duration))
	}
	if f.warmup < 0 || f.followers < 0 || f.hubPID < 0 || f.lineBytes < 0 || f.sendBuffer < 0 {
		errs = append(errs, errors.New("--warmup, --followers, --hub-pid, --line-bytes and --sndbuf must not be negative"))
	}
	if len(errs) > 0 { // one line, every problem
		msgs := make([]string, len(errs))
		for i, e := range errs {
			msgs[i] = e.Error()
		}
		return loadgen.Options{}, errors.New(strings.Join(msgs, "; "))
	}
	hub := f.hub
	if hub == "" {
		hub = strings.TrimSpace(getenv(envHub))
	}
	if hub == "" {
		hub = defaultHubURL
	}
	if strings.Contains(hub, ",") {
		return loadgen.Options{}, fmt.Errorf("--hub %q: the bench loads one hub; give one URL", hub)
	}
	if !strings.Contains(hub, "://") {
		hub = "http://" + hub
	}
	token := firstNonEmpty(f.token, getenv(envToken), getenv(envTokenAlt))
	o := loadgen.Options{
		HubURL: hub, Token: token, WorkerToken: firstNonEmpty(f.workerToken, getenv(envWorkerToken), token),
		HubPID: f.hubPID, RedisURL: f.redisURL,
		Workers: f.workers, Lanes: f.lanes, Rate: f.rate, FlatOut: f.rate == 0,
		Duration: f.duration, Warmup: f.warmup, Followers: f.followers, LineBytes: f.lineBytes, SendBuffer: f.sendBuffer,
	}
	// Zero means "default" in loadgen.Options; an explicit 0 here means none.
	if f.warmup == 0 {
		o.Warmup = -1
	}
	if f.followers == 0 {
		o.Followers = -1
	}
	if !f.quiet {
		o.Progress = progress
		o.Logger = slog.New(slog.NewTextHandler(progress, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	return o, nil
}

func firstNonEmpty(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}
