package agent

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/paprika-hub/paprika/agent/sysstat"
	"github.com/paprika-hub/paprika/messages"
)

// Timing of the stop sequence that is not configurable.
const (
	// cancelGrace is how long Run waits for jobs to return after cancelling
	// them at StopTimeout; a driver that ignores its context is left behind
	// (and logged) rather than hanging the stop.
	cancelGrace = 5 * time.Second
	// closeWait is how long a normal close waits for the hub's close frame.
	closeWait = time.Second
	// leaveWait bounds a stopping link's wait for leave_ack (an older hub
	// never sends one; it only costs this much of the stop).
	leaveWait = 2 * time.Second
	// maxPendingFrames makes job log emitters wait while this many frames
	// are queued for a live link that is slow to take them (backpressure
	// through the socket instead of unbounded growth).
	maxPendingFrames = 4096
)

// ErrAlreadyStarted is returned by a second call of Run.
var ErrAlreadyStarted = errors.New("agent already started")

// Causes of a job's cancellation, mapped to job_failed reasons.
var (
	errCanceledByHub = errors.New("canceled by the hub (cancel_job)")
	errAgentStopping = errors.New("worker stopped before the job finished")
)

// Agent is a worker agent: it links to a hub, runs the jobs the hub assigns
// on its lanes and reports them. Build it with New and start it with Run.
type Agent struct {
	// Set by New. cfg, driver, lanIP, sampler, box and bootTime never
	// change after it; the atomics do, read and written without mu (logp
	// whenever the worker id changes, see setIDLocked).
	cfg      Config
	logp     atomic.Pointer[slog.Logger] // carries worker_id; replaced when the id changes
	driver   Driver
	lanIP    net.IP
	sampler  *sysstat.Sampler
	box      *outbox
	started  atomic.Bool
	statErr  atomic.Bool  // a failed host reading was logged once already
	jobsRun  atomic.Int64 // jobs finished since start (restart threshold)
	bootTime time.Time    // when this process's agent was built (job_status uptime)
	// drained wakes the current link to tell its hub the worker is leaving
	// (Drain); capacity 1, never closed.
	drained chan struct{}

	// Guarded by mu; shared by the connect loop, the link readers and the
	// job goroutines.
	mu         sync.Mutex
	id         string
	lanes      *lanePool
	jobs       map[string]*runningJob // by job id
	jobsCtx    context.Context        // parent of every job's context; set by Run
	execLog    *execLog               // set by Run
	hbInterval time.Duration
	stopping   bool // Run's context ended: take no more jobs
	localDrain bool // Drain was called
	hubDrain   bool // the hub sent drain on the current link
	jobWG      sync.WaitGroup
	sessions   map[string]*sessionRunner // by session id (session.go)
	refused    attemptSet                // attempts answered "unknown" to job_query
	ran        attemptSet                // attempts that ran here and ended (ranKeep of them)
	held       int                       // lanes still held by abandoned jobs (job_runner.go)
	sessWG     sync.WaitGroup

	hubURL atomic.Pointer[string] // base URL of the hub linked last (upload.go)
	upload *http.Client           // for UploadAsset; idle connections closed when Run ends
	// tlsConf is the link's and the uploads' client TLS (Config.CAFile,
	// RootCAs); nil means Go's defaults.
	tlsConf *tls.Config
}

// New checks cfg, fills in its defaults and builds an Agent. It derives the
// worker id from the LAN IP unless cfg.ID is set.
func New(cfg Config) (*Agent, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("worker config: %w", err)
	}
	cfg = cfg.withDefaults()
	tlsConf, err := cfg.tlsConfig()
	if err != nil {
		return nil, fmt.Errorf("worker config: %w", err)
	}
	drv, err := newDriver(cfg)
	if err != nil {
		return nil, fmt.Errorf("worker config: %w", err)
	}
	ip := LanIP()
	if cfg.LanIP != "" {
		ip = net.ParseIP(cfg.LanIP).To4()
	}
	id := cfg.ID
	if id == "" {
		id = ShortID(ip)
	}
	a := &Agent{
		cfg:        cfg,
		driver:     drv,
		lanIP:      ip,
		sampler:    sysstat.NewSampler(cfg.WorkDir),
		box:        newOutbox(maxPendingFrames),
		bootTime:   time.Now(),
		drained:    make(chan struct{}, 1),
		jobs:       make(map[string]*runningJob),
		ran:        attemptSet{keep: ranKeep},
		sessions:   make(map[string]*sessionRunner),
		hbInterval: cfg.HeartbeatInterval,
		upload:     newUploadClient(tlsConf),
		tlsConf:    tlsConf,
	}
	a.lanes = newLanePool(make([]string, cfg.Lanes))
	a.setIDLocked(id)
	return a, nil
}

// ID returns the worker id the agent currently uses.
func (a *Agent) ID() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.id
}

// Drain makes the agent finish its running jobs and accept no new ones:
// every later assign_job is answered with job_failed reason rejected, while
// heartbeats keep reporting the falling in_flight. It lasts until the agent
// stops. (The hub's drain frame has the same effect until the next welcome.)
func (a *Agent) Drain() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.localDrain {
		a.localDrain = true
		a.lg().Info("draining: no new jobs", "running", len(a.jobs))
		select { // the hub then places nothing more here (connect.go)
		case a.drained <- struct{}{}:
		default:
		}
	}
}

// Draining reports whether the agent refuses new jobs (Drain was called,
// the hub sent drain, or Run is stopping).
func (a *Agent) Draining() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.localDrain || a.hubDrain || a.stopping
}

// leaving reports whether the worker itself takes no more work (Drain, or
// Run stopping), which its hubs are told; a hub's own drain is not: the
// hub knows it, and lifts it.
func (a *Agent) leaving() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.localDrain || a.stopping
}

// Run links to the hubs and runs jobs until ctx ends, then stops in order:
// take no more jobs or sessions → close the open sessions → wait for
// running jobs up to Config.StopTimeout and cancel the rest (reported as
// worker_lost) → wait up to Config.FlushTimeout for the hub to acknowledge
// every kept frame → say leaving and wait for the hub's leave_ack, so that
// every assignment it sent is answered → close the link with a normal
// close frame. It returns
// nil after that orderly stop, or an error when it could not start. Run may
// be called once.
func (a *Agent) Run(ctx context.Context) error {
	if !a.started.CompareAndSwap(false, true) {
		return ErrAlreadyStarted
	}
	el, err := openExecLog(a.cfg.ExecLog)
	if err != nil {
		return err
	}
	jobsCtx, cancelJobs := context.WithCancelCause(context.Background())
	defer cancelJobs(nil)
	a.mu.Lock()
	a.jobsCtx, a.execLog = jobsCtx, el
	a.mu.Unlock()

	// The link outlives ctx: frames of jobs that end during the stop still
	// have to reach the hub.
	linkCtx, stopLink := context.WithCancel(context.Background())
	defer stopLink()
	loopDone := make(chan struct{})
	go func() {
		defer close(loopDone)
		a.connectLoop(linkCtx)
	}()
	a.lg().Info("worker agent started", "lan_ip", a.lanIP.String(),
		"lanes", a.cfg.Lanes, "driver", a.driver.Name(), "hubs", a.cfg.HubURLs)

	// A restart threshold ends the run as the caller's ctx would.
	runCtx, endRun := context.WithCancel(ctx)
	defer endRun()
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		a.watchRestart(runCtx, endRun)
	}()
	<-runCtx.Done()
	<-watchDone
	a.stop(cancelJobs)
	stopLink()
	<-loopDone
	a.upload.CloseIdleConnections()
	if err := el.close(); err != nil {
		a.lg().Warn("close exec log", "err", err)
	}
	a.lg().Info("worker agent stopped")
	return nil
}

// stop runs the shutdown sequence up to, not including, closing the link.
// The order matters: refusing jobs first means the running set only shrinks;
// the flush comes after the jobs so that their final frames are in it.
func (a *Agent) stop(cancelJobs context.CancelCauseFunc) {
	a.mu.Lock()
	a.stopping = true
	running := len(a.jobs)
	a.mu.Unlock()
	a.lg().Info("worker agent stopping", "running", running, "stop_timeout", a.cfg.StopTimeout)
	a.stopSessions() // sessions are interactive: close them now, not after the jobs
	defer a.waitSessions(cancelGrace)

	jobsDone := make(chan struct{})
	go func() { // ends when the last job does
		a.jobWG.Wait()
		close(jobsDone)
	}()
	soft := time.NewTimer(a.cfg.StopTimeout)
	defer soft.Stop()
	select {
	case <-jobsDone:
	case <-soft.C:
		a.lg().Warn("stop timeout: cancelling running jobs", "running", a.inFlight())
		cancelJobs(errAgentStopping)
		hard := time.NewTimer(cancelGrace)
		defer hard.Stop()
		select {
		case <-jobsDone:
		case <-hard.C:
			a.lg().Error("jobs ignore cancellation; stopping without them", "running", a.inFlight())
		}
	}

	flush := time.NewTimer(a.cfg.FlushTimeout)
	defer flush.Stop()
	for {
		n, acked := a.box.kept()
		if n == 0 {
			return
		}
		select {
		case <-acked:
		case <-flush.C:
			a.lg().Warn("flush timeout: frames of some jobs not acknowledged by the hub", "jobs", n)
			return
		}
	}
}

// setIDLocked sets the worker id and the lane URLs derived from it. Caller
// holds mu (or owns a during New).
func (a *Agent) setIDLocked(id string) {
	a.id = id
	a.logp.Store(a.cfg.Logger.With("worker_id", id))
	urls := make([]string, a.lanes.size())
	for i := range urls {
		urls[i] = a.driver.LaneURL(id, i)
	}
	a.lanes.setURLs(urls)
}

// lg is the agent's logger, tagged with the current worker id.
func (a *Agent) lg() *slog.Logger { return a.logp.Load() }

// inFlight is the number of running jobs.
func (a *Agent) inFlight() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.jobs)
}

// report is what hello and heartbeat carry: running job ids and host stats.
func (a *Agent) report() (running []string, stats *messages.Stats) {
	a.mu.Lock()
	for id := range a.jobs {
		running = append(running, id)
	}
	sessions := a.sessionCountLocked() // a session holds a lane like a job
	held := a.held                     // and so does an abandoned job's code
	a.mu.Unlock()
	busy := len(running) + held
	// A finished job whose result the hub has not acknowledged is still
	// this worker's: reported as running, the hub never takes it for an
	// assignment that got lost (and never runs it again).
	for _, id := range a.box.unacked() {
		if !slices.Contains(running, id) {
			running = append(running, id)
		}
	}
	slices.Sort(running)
	r, err := a.sampler.Sample()
	if err != nil && a.statErr.CompareAndSwap(false, true) {
		a.lg().Warn("host statistics incomplete; reporting zeros for what failed", "err", err)
	}
	return running, &messages.Stats{InFlight: busy + sessions, CPUPct: r.CPUPct, MemPct: r.MemPct, DiskPct: r.DiskPct}
}
