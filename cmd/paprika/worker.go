package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/paprika-hub/paprika/agent"
	"github.com/paprika-hub/paprika/agent/chromium"
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

// workerSpec is what builds one worker agent with its lane driver.
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

// builtWorker is an agent and the driver it owns (closed after Run).
type builtWorker struct {
	agent *agent.Agent
	close func() error
}

// errNoChromium marks the one start-up error a user fixes by installing a
// package: the CLI turns it into exit status 2.
var errNoChromium = errors.New("chromium not found")

// build makes the driver first (the chromium driver stores assets through
// the agent made after it), then the agent.
func (s workerSpec) build() (*builtWorker, error) {
	s.cfg.Driver = s.driver
	// Checked before any driver starts: a refused configuration (a token
	// for a plain-http remote hub) must not launch a browser first.
	if err := s.cfg.Validate(); err != nil {
		return nil, fmt.Errorf("worker config: %w", err)
	}
	closeDrv := func() error { return nil }
	if s.driver == agent.DriverChromium {
		var a *agent.Agent
		workDir := s.cfg.WorkDir
		if workDir == "" {
			workDir = filepath.Join(os.TempDir(), "paprika-lanes-"+s.cfg.ID)
		}
		drv, err := chromium.New(chromium.Config{Lanes: s.cfg.Lanes, Path: s.chromium, WorkDir: workDir, Logger: cmp.Or(s.driverLog, s.cfg.Logger),
			Upload: func(ctx context.Context, jobID, name, contentType string, r io.Reader, size int64) error {
				return a.UploadAsset(ctx, jobID, name, contentType, r, size) // a is set before any job runs
			},
			SessionUpload: func(ctx context.Context, sessionID, name, contentType string, r io.Reader, size int64) error {
				return a.UploadSessionDownload(ctx, sessionID, name, contentType, r, size)
			}})
		if err != nil {
			if errors.Is(err, chromium.ErrNotFound) {
				return nil, fmt.Errorf("%w: %v", errNoChromium, err)
			}
			return nil, err
		}
		s.cfg.DriverImpl = drv
		closeDrv = drv.Close
		a, err = agent.New(s.cfg)
		if err != nil {
			_ = drv.Close()
			return nil, err
		}
		return &builtWorker{agent: a, close: closeDrv}, nil
	}
	a, err := agent.New(s.cfg)
	if err != nil {
		return nil, err
	}
	return &builtWorker{agent: a, close: closeDrv}, nil
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
	runErr := w.agent.Run(ctx)
	if err := w.close(); err != nil {
		log.Warn("close lane driver", slog.Any("err", err))
	}
	if runErr != nil && !errors.Is(runErr, context.Canceled) {
		log.Error("worker stopped", "err", runErr)
		return 1
	}
	return 0
}
