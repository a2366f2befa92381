package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/paprika-hub/paprika/agent"
	"github.com/paprika-hub/paprika/agent/chromium"
	"github.com/paprika-hub/paprika/worker"
)

// hubURLs is a repeatable --hub flag that also takes a comma list.
type hubURLs []string

func (h *hubURLs) String() string { return strings.Join(*h, ",") }

func (h *hubURLs) Set(v string) error {
	for _, u := range strings.Split(v, ",") {
		if u = strings.TrimSpace(u); u != "" {
			*h = append(*h, u)
		}
	}
	return nil
}

// workerSpec is what builds one worker: the library's options, with the
// built-in modes registered as handlers (worker.New).
type workerSpec struct {
	cfg      agent.Config
	driver   string
	chromium string // path to the browser; "" = search PATH
	// driverLog is the chromium driver's logger; nil means cfg.Logger. The
	// agent tags its own lines with worker_id, so a caller that wants the id
	// on the driver's lines too adds it here, not to cfg.Logger (where it
	// would appear twice).
	driverLog *slog.Logger
}

// errNoChromium marks the one start-up error a user fixes by installing a
// package: the CLI turns it into exit status 2.
var errNoChromium = errors.New("chromium not found")

// build makes the worker (and its chromium driver when asked); Run starts
// it and closes the driver when it ends, Close releases a worker never run.
func (s workerSpec) build() (*worker.Worker, error) {
	c := s.cfg
	w, err := worker.New(worker.Options{Hubs: c.HubURLs, ID: c.ID, Lanes: c.Lanes, Token: c.Token,
		CAFile: c.CAFile, RootCAs: c.RootCAs, Insecure: c.Insecure, Driver: s.driver, Logger: c.Logger,
		DriverLogger: s.driverLog, Chromium: chromium.Config{Path: s.chromium, WorkDir: c.WorkDir}, Agent: c})
	if err != nil {
		if errors.Is(err, chromium.ErrNotFound) {
			return nil, fmt.Errorf("%w: %v", errNoChromium, err)
		}
		return nil, err
	}
	return w, nil
}

// runWorker is `paprika worker`: a worker agent until SIGINT/SIGTERM, which
// stops taking jobs, finishes the running ones and exits 0.
func runWorker(args []string) int {
	fs := flag.NewFlagSet("paprika worker", flag.ContinueOnError)
	var hubs hubURLs
	fs.Var(&hubs, "hub", "hub base URL, e.g. http://127.0.0.1:8080 (repeat or comma list; reconnects go to the next)")
	id := fs.String("id", "", "worker id (default: derived from the LAN IP, 10.10.50.150 → w50150)")
	lanes := fs.Int("lanes", agent.DefaultLanes, "number of lanes (jobs at once)")
	driver := fs.String("driver", agent.DefaultDriver, "lane driver: simulated or chromium")
	chromiumPath := fs.String("chromium", "", "path to Chromium (default: chromium, chromium-browser or google-chrome on PATH)")
	token := fs.String("token", os.Getenv("PAPRIKA_AUTH_WORKER_TOKEN"), "worker token (default $PAPRIKA_AUTH_WORKER_TOKEN)")
	ca := fs.String("ca", os.Getenv(envCA), "PEM file of the CA that signed the hubs' HTTPS certificates (hub.tls_cert), e.g. from paprika certs ca (default $"+envCA+"; else the system roots)")
	insecure := fs.Bool("insecure", false, "send the token to a non-loopback hub over plain http:// (only on a network you trust: anyone on the path can read it)")
	execLog := fs.String("exec-log", "", "append one line per job execution start and end to this file (tests)")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn, error")
	restartAfter := fs.Duration("restart-after", 0, "drain and exit 0 after this uptime, for the supervisor to restart (0 = never)")
	restartJobs := fs.Int("restart-jobs", 0, "drain and exit 0 after this many jobs (0 = never)")
	restartRSS := fs.Int64("restart-rss-mib", 0, "drain and exit 0 above this resident memory in MiB (0 = never)")
	restartJitter := fs.Duration("restart-jitter", agent.DefaultRestartJitter, "random wait (0..this) before a threshold restart, so a fleet does not leave together")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *restartAfter < 0 || *restartJobs < 0 || *restartRSS < 0 || *restartJitter < 0 {
		fmt.Fprintln(os.Stderr, "paprika worker: --restart-after, --restart-jobs, --restart-rss-mib and --restart-jitter must not be negative")
		return 2
	}
	if len(hubs) == 0 {
		fmt.Fprintln(os.Stderr, "paprika worker: --hub is required (e.g. --hub http://127.0.0.1:8080)")
		return 2
	}
	if *driver != agent.DriverSimulated && *driver != agent.DriverChromium {
		fmt.Fprintf(os.Stderr, "paprika worker: --driver %q is not one of simulated, chromium\n", *driver)
		return 2
	}
	log, err := newLogger(*logLevel, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "paprika worker:", err)
		return 2
	}
	w, err := workerSpec{driver: *driver, chromium: *chromiumPath, cfg: agent.Config{HubURLs: hubs, ID: *id,
		Lanes: *lanes, Token: *token, CAFile: *ca, Insecure: *insecure, ExecLog: *execLog, Logger: log,
		RestartAfter: *restartAfter, RestartAfterJobs: *restartJobs, RestartAboveRSS: *restartRSS << 20,
		RestartJitter: max(*restartJitter, time.Nanosecond)}}.build()
	if err != nil {
		fmt.Fprintln(os.Stderr, "paprika worker:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	runErr := w.Run(ctx)
	if runErr != nil && !errors.Is(runErr, context.Canceled) {
		log.Error("worker stopped", "err", runErr)
		return 1
	}
	return 0
}
