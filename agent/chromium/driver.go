package chromium

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/paprika-hub/paprika/agent"
	"github.com/paprika-hub/paprika/messages"
)

// Driver runs jobs and sessions on lanes of headless Chromium, one browser
// process per lane (doc.go says why). Build it with New, hand it to the
// agent as agent.Config.DriverImpl, and Close it after the agent stopped.
type Driver struct {
	// Fixed after New.
	cfg      Config
	path     string
	workDir  string
	ownDir   bool // workDir was created by New and is removed by Close
	opts     []chromedp.ExecAllocatorOption
	log      *slog.Logger
	ctx      context.Context // parent of every browser; ends at Close
	cancel   context.CancelFunc
	lanes    []*lane
	closeErr error
	changes  chan struct{} // LaneChanges; buffer of one, sent to without blocking
	egress   *egressPolicy

	cleanups, restarts atomic.Int64 // Hygiene

	closeOnce sync.Once
}

var (
	_ agent.Driver        = (*Driver)(nil)
	_ agent.SessionDriver = (*Driver)(nil)
	_ agent.LaneWatcher   = (*Driver)(nil)
	_ agent.LaneStater    = (*Driver)(nil)
)

// New checks cfg and finds Chromium; it starts no browser (lanes start on
// first use). The error wraps ErrNotFound when Chromium is missing.
func New(cfg Config) (*Driver, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("chromium config: %w", err)
	}
	cfg = cfg.withDefaults()
	egress, err := newEgressPolicy(cfg.EgressDeny, cfg.EgressAllow, envOr(cfg.getenv), cfg.lookup)
	if err != nil {
		return nil, fmt.Errorf("chromium config: egress: %w", err)
	}
	path, err := LookPath(cfg.Path)
	if err != nil {
		return nil, err
	}
	d := &Driver{cfg: cfg, path: path, log: cfg.Logger.With("driver", agent.DriverChromium), changes: make(chan struct{}, 1), egress: egress}
	if cfg.WorkDir == "" {
		if d.workDir, err = os.MkdirTemp("", "paprika-chromium-"); err != nil {
			return nil, fmt.Errorf("chromium work dir: %w", err)
		}
		d.ownDir = true
	} else {
		if d.workDir, err = filepath.Abs(cfg.WorkDir); err != nil {
			return nil, fmt.Errorf("chromium work dir: %w", err)
		}
		if err := os.MkdirAll(d.workDir, 0o700); err != nil {
			return nil, fmt.Errorf("chromium work dir: %w", err)
		}
	}
	d.opts = browserFlags(cfg, path)
	d.ctx, d.cancel = context.WithCancel(context.Background())
	d.lanes = make([]*lane, cfg.Lanes)
	for i := range d.lanes {
		d.lanes[i] = &lane{d: d, idx: i, dir: filepath.Join(d.workDir, fmt.Sprintf("lane-%d", i)), sem: make(chan struct{}, 1)}
	}
	d.log.Info("chromium driver ready", "path", path, "lanes", cfg.Lanes, "work_dir", d.workDir)
	return d, nil
}

// Name implements agent.Driver.
func (d *Driver) Name() string { return agent.DriverChromium }

// LaneURL implements agent.Driver: the lane's stable name
// chromium://<worker id>/lane/<n>. It is never the browser's DevTools
// address, which the worker keeps to itself (DevToolsURL): the hub shows
// lane names to every API client.
func (d *Driver) LaneURL(workerID string, lane int) string {
	return fmt.Sprintf("chromium://%s/lane/%d", workerID, lane)
}

// MarkLaneSuspect implements agent.LaneSuspecter: the lane's next user
// restarts its browser first.
func (d *Driver) MarkLaneSuspect(lane int, why string) {
	if lane >= 0 && lane < len(d.lanes) {
		d.lanes[lane].markSuspect(why)
	}
}

// DevToolsURL is the browser-level DevTools WebSocket URL of the lane's
// running browser (ws://127.0.0.1:<port>/devtools/browser/<id>), for the
// worker's own use (a CDP tunnel to the lane); ok is false while the lane
// has no browser running. It changes when the lane restarts; LaneChanges
// signals every change.
func (d *Driver) DevToolsURL(lane int) (u string, ok bool) {
	if lane >= 0 && lane < len(d.lanes) {
		if p := d.lanes[lane].url.Load(); p != nil {
			return *p, true
		}
	}
	return "", false
}

// LaneState implements agent.LaneStater: messages.LaneRestarting while the
// lane's browser is being started or restarted, else "".
func (d *Driver) LaneState(lane int) string {
	if lane >= 0 && lane < len(d.lanes) && d.lanes[lane].restarting.Load() {
		return messages.LaneRestarting
	}
	return ""
}

// LaneChanges implements agent.LaneWatcher: it signals after a lane's
// browser started, restarted, exited or was stopped by Close, and when a
// lane's restart began or ended.
func (d *Driver) LaneChanges() <-chan struct{} { return d.changes }

// laneChanged signals LaneChanges. A signal already pending covers this
// change too: the reader reads every lane's URL when it wakes.
func (d *Driver) laneChanged() {
	select {
	case d.changes <- struct{}{}:
	default:
	}
}

// Run implements agent.Driver for the modes fetch, macro and noop (noop as
// the simulated driver runs it, so any job runs on any lane). Bad params,
// navigation errors, timeouts of a step and non-2xx pages fail with
// job_error; a browser that cannot start, a crashed renderer or browser,
// and an asset that cannot be stored fail with lane_error. ctx's end
// (deadline, cancel_job) stops the job in the browser: the page is closed,
// which aborts its navigation, and the lane is clean for the next job.
func (d *Driver) Run(ctx context.Context, lane int, job agent.Job, emit func(line string) error) (agent.Result, error) {
	var run func(context.Context, *tab, func(string)) (agent.Result, error)
	var opts messages.BrowserOptions
	var settle time.Duration // how long to wait for a download to begin after the page work
	switch job.Mode {
	case messages.ModeNoop:
		return agent.SimulatedDriver{}.Run(ctx, lane, job, emit)
	case messages.ModeFetch:
		p, err := parseFetchParams(job.Params)
		if err != nil {
			return agent.Result{}, agent.Fail(agent.ReasonJobError, "%v", err)
		}
		opts = p.BrowserOptions
		run = func(ctx context.Context, t *tab, log func(string)) (agent.Result, error) {
			return d.runFetch(ctx, t, job, p, log)
		}
	case messages.ModeMacro:
		steps, o, err := parseMacroParams(job.Params)
		opts = o
		if err != nil {
			return agent.Result{}, agent.Fail(agent.ReasonJobError, "%v", err)
		}
		run = func(ctx context.Context, t *tab, log func(string)) (agent.Result, error) {
			return d.runMacro(ctx, t, job, steps, log)
		}
		settle = macroSettle(steps)
	default:
		return agent.Result{}, agent.Fail(agent.ReasonLaneError, "mode %q: the chromium driver runs fetch, macro and noop", job.Mode)
	}
	// Log lines are best effort: emit fails only once ctx ended, and then
	// the next browser call fails too.
	log := func(line string) { _ = emit(line) }

	if line := describeOptions(&opts); line != "" {
		log(line)
	}
	t, release, err := d.openLaneTab(ctx, lane, log, &opts, nil)
	if err != nil {
		return agent.Result{}, err
	}
	defer release() // cleans the lane for the next user (hygiene.go)
	defer t.close() // before release: the next user finds the lane clean
	dls, err := watchDownloads(t, false, nil, log)
	if err != nil {
		t.l.markSuspect(err.Error())
		return agent.Result{}, agent.Fail(agent.ReasonLaneError, "lane %d: %v", lane, err)
	}
	defer dls.close() // before the tab closes, which would cancel a download
	var rec *recorder
	if opts.Record {
		rec = startRecording(ctx, t, log)
	}
	var prof messages.ProfileState
	if opts.Profile != "" {
		if prof, err = d.restoreProfile(ctx, t, job.ID, job.Attempt, opts.Profile, log); err != nil {
			rec.finish()
			return agent.Result{}, err
		}
	}
	res, err := run(ctx, t, log)
	if err != nil {
		rec.finish()
		return res, err
	}
	if opts.Profile != "" {
		// Saved while the tab still shows the job's last page.
		if err := d.saveProfile(ctx, t, job.ID, job.Attempt, opts.Profile, prof, log); err != nil {
			rec.finish()
			return agent.Result{}, err
		}
	}
	if name, err := d.storeJobRecording(ctx, job.ID, rec, log); err != nil {
		return agent.Result{}, failure(err, "store the recording")
	} else if name != "" {
		res.Assets = append(res.Assets, name)
	}
	names, err := dls.collect(ctx, settle, d.jobDownloadStore(job.ID, log))
	if err != nil {
		return agent.Result{}, failure(err, "store downloads")
	}
	res.Assets = append(res.Assets, names...)
	return res, nil
}

// openLaneTab takes the lane, makes sure its browser is healthy (starting
// or restarting it) and opens a fresh page in a new BrowserContext, with
// the browser options o (nil: none), on a browser started with la's
// command line (nil: the driver's). The caller closes the tab, then calls
// release.
func (d *Driver) openLaneTab(ctx context.Context, idx int, log func(string), o *messages.BrowserOptions, la *launch) (*tab, func(), error) {
	if idx < 0 || idx >= len(d.lanes) {
		return nil, nil, agent.Fail(agent.ReasonLaneError, "lane %d: the chromium driver has lanes 0..%d", idx, len(d.lanes)-1)
	}
	if err := d.checkProxy(ctx, o); err != nil {
		return nil, nil, agent.Fail(agent.ReasonJobError, "%v", err)
	}
	l := d.lanes[idx]
	release, err := l.acquire(ctx)
	if err != nil {
		return nil, nil, err
	}
	b, err := l.ensureLaunch(ctx, log, la)
	if err != nil {
		release()
		if ctx.Err() != nil {
			return nil, nil, fmt.Errorf("start lane %d: %w", idx, ctx.Err())
		}
		return nil, nil, agent.Fail(agent.ReasonLaneError, "%v", err)
	}
	t, err := l.openTab(ctx, b, o)
	if err != nil {
		release()
		if ctx.Err() != nil {
			return nil, nil, fmt.Errorf("lane %d: %w", idx, ctx.Err())
		}
		l.markSuspect(fmt.Sprintf("opening a page failed: %v", err))
		return nil, nil, agent.Fail(agent.ReasonLaneError, "lane %d: %v", idx, err)
	}
	return t, release, nil
}

// Close stops every browser process with all its helpers and removes the
// profiles (and the work dir when New created it). Jobs still running fail.
// Safe to call twice.
func (d *Driver) Close() error {
	d.closeOnce.Do(func() {
		d.cancel() // aborts starts in progress and kills every browser at once
		var wg sync.WaitGroup
		for _, l := range d.lanes {
			wg.Go(l.shutdown)
		}
		wg.Wait()
		if d.ownDir {
			if err := removeAllRetry(d.workDir); err != nil {
				d.closeErr = fmt.Errorf("remove chromium work dir: %w", err)
			}
		}
		d.log.Info("chromium driver closed")
	})
	return d.closeErr
}

// failure prefixes err with what failed and gives it a reason: a
// *agent.JobError keeps its reason; an error of the job's context is left
// without one (the agent reports why its context ended: deadline_exceeded,
// canceled, worker_lost); anything else is the job's fault (job_error).
func failure(err error, what string) error {
	var je *agent.JobError
	if errors.As(err, &je) {
		return &agent.JobError{Reason: je.Reason, Err: fmt.Errorf("%s: %w", what, je.Err)}
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return fmt.Errorf("%s: %w", what, err)
	}
	return &agent.JobError{Reason: agent.ReasonJobError, Err: fmt.Errorf("%s: %w", what, err)}
}
