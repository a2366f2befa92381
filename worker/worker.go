package worker

import (
	"cmp"
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/paprika-hub/paprika/agent"
	"github.com/paprika-hub/paprika/agent/chromium"
	"github.com/paprika-hub/paprika/messages"
)

// Drivers of Options.Driver: what the worker's lanes are.
const (
	// DriverSimulated: lanes are slots, no browser (handlers that need no
	// lane, and the built-in noop).
	DriverSimulated = agent.DriverSimulated
	// DriverChromium: every lane is a headless Chromium (modes registered
	// with NeedsChromium, and the built-in fetch and macro).
	DriverChromium = agent.DriverChromium
)

// DefaultAbandonAfter is Options.AbandonAfter's default.
const DefaultAbandonAfter = 2 * time.Second

// ErrNoChromium wraps New's error when Options.Driver is chromium and no
// Chromium binary is found.
var ErrNoChromium = chromium.ErrNotFound

// ErrStarted is returned by Handle (through Run) after Run started, and by
// a second Run.
var ErrStarted = errors.New("worker already started")

// Options configure a Worker. Only Hubs is required.
type Options struct {
	// Hubs are the hubs' base URLs (http(s)://host:port); a lost link is
	// redialled to the next. Required.
	Hubs []string
	// ID is the worker id. Default: derived from the LAN IP (agent.ShortID).
	ID string
	// Lanes is how many jobs run at once. Default 1.
	Lanes int
	// Token is the worker token (auth.worker_token). Default none.
	Token string
	// CAFile is a PEM file of the CA that signed the hubs' HTTPS
	// certificates; RootCAs a pool of them. Default: the system roots.
	CAFile  string
	RootCAs *x509.CertPool
	// Insecure allows sending Token over plain http to a non-loopback hub.
	Insecure bool
	// Driver is DriverSimulated (default) or DriverChromium.
	Driver string
	// Chromium configures the chromium driver when Driver is chromium. Its
	// Lanes, Upload and SessionUpload are set by the worker; Logger
	// defaults to DriverLogger, WorkDir to a directory per worker id.
	Chromium chromium.Config
	// Logger receives the worker's logs. Default slog.Default().
	Logger *slog.Logger
	// DriverLogger receives the chromium driver's logs. Default Logger.
	DriverLogger *slog.Logger
	// NoBuiltins leaves the built-in modes (noop; fetch and macro on a
	// chromium driver) unregistered. Default false: they are registered.
	NoBuiltins bool
	// AbandonAfter is how long a handler may run on after its context
	// ended before its attempt is reported failed without it (see the
	// package doc). Default DefaultAbandonAfter.
	AbandonAfter time.Duration
	// Agent holds the agent's other settings (Version, HeartbeatInterval,
	// PingInterval, StopTimeout, FlushTimeout, WorkDir, ExecLog, LanIP,
	// restart thresholds). Its fields named above (HubURLs, ID, Lanes,
	// Token, CAFile, RootCAs, Insecure, Logger, Driver) and DriverImpl,
	// JobRunner and Modes are set from Options.
	Agent agent.Config
}

// Handler runs one job attempt of a mode. It returns the job's result
// (any JSON-encodable value; nil is {}) or an error (see the package doc
// for how errors, panics and ignored cancellation are reported).
type Handler func(ctx context.Context, j *Job) (any, error)

// HandleOption configures a mode at Handle.
type HandleOption func(*mode)

// NeedsChromium says the mode's handler drives the lane's Chromium
// (Job.Lane); the worker must have Driver chromium. Hello declares the
// mode with lane need "chromium".
func NeedsChromium() HandleOption {
	return func(m *mode) { m.decl.Lane = messages.LaneNeedChromium }
}

// Schema declares a JSON Schema (an object) of the mode's params in
// hello; the hub checks jobs of the mode against it at POST /jobs.
func Schema(schema json.RawMessage) HandleOption {
	return func(m *mode) { m.decl.Schema = slices.Clone(schema) }
}

// mode is one registered handler.
type mode struct {
	decl    messages.ModeDecl
	h       Handler
	ownLane bool // a built-in whose driver takes the lane itself: no Job.Lane
}

// Worker runs registered handlers for the jobs a hub assigns. Build it with
// New, register modes with Handle, then call Run once.
type Worker struct {
	opts   Options
	log    *slog.Logger
	cfg    agent.Config
	chrome *chromium.Driver // nil unless Driver is chromium

	mu      sync.Mutex
	modes   map[string]*mode
	order   []string // registration order, as hello declares them
	errs    []error  // registration errors, returned by Run
	started bool
	agent   *agent.Agent // set by Run
}

// New checks o and builds a Worker, with its chromium driver when o.Driver
// is chromium (no browser starts before a job needs one; a missing
// Chromium is an error wrapping ErrNoChromium). The built-in modes are
// registered unless o.NoBuiltins.
func New(o Options) (*Worker, error) {
	o.Driver = cmp.Or(o.Driver, DriverSimulated)
	o.Logger = cmp.Or(o.Logger, slog.Default())
	o.AbandonAfter = cmp.Or(o.AbandonAfter, DefaultAbandonAfter)
	if o.AbandonAfter < 0 {
		return nil, fmt.Errorf("worker config: abandon_after: %s is negative", o.AbandonAfter)
	}
	if o.Driver != DriverSimulated && o.Driver != DriverChromium {
		return nil, fmt.Errorf("worker config: driver: %q, allowed values: %s, %s", o.Driver, DriverChromium, DriverSimulated)
	}
	cfg := o.Agent
	cfg.HubURLs, cfg.ID, cfg.Lanes, cfg.Token = o.Hubs, o.ID, o.Lanes, o.Token
	cfg.CAFile, cfg.RootCAs, cfg.Insecure, cfg.Logger = o.CAFile, o.RootCAs, o.Insecure, o.Logger
	cfg.Driver, cfg.DriverImpl, cfg.Modes = o.Driver, nil, nil
	// Checked before any driver starts: a refused configuration (a token
	// for a plain-http remote hub) must not launch a browser first.
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("worker config: %w", err)
	}
	w := &Worker{opts: o, log: o.Logger, modes: make(map[string]*mode)}
	if o.Driver == DriverChromium {
		cc := o.Chromium
		cc.Lanes = cmp.Or(cfg.Lanes, agent.DefaultLanes)
		cc.Logger = cmp.Or(cc.Logger, o.DriverLogger, o.Logger)
		if cc.WorkDir == "" {
			cc.WorkDir = filepath.Join(os.TempDir(), "paprika-lanes-"+defaultID(cfg))
		}
		cc.Upload = func(ctx context.Context, jobID, name, contentType string, r io.Reader, size int64) error {
			return w.agentOf().UploadAsset(ctx, jobID, name, contentType, r, size)
		}
		cc.SessionUpload = func(ctx context.Context, sessionID, name, contentType string, r io.Reader, size int64) error {
			return w.agentOf().UploadSessionDownload(ctx, sessionID, name, contentType, r, size)
		}
		cc.ProfileLoad = func(ctx context.Context, name, holder string, attempt int) ([]byte, error) {
			return w.agentOf().LoadProfile(ctx, name, holder, attempt)
		}
		cc.ProfileSave = func(ctx context.Context, name, holder string, attempt int, state []byte) error {
			return w.agentOf().SaveProfile(ctx, name, holder, attempt, state)
		}
		drv, err := chromium.New(cc)
		if err != nil {
			return nil, err
		}
		w.chrome = drv
		cfg.DriverImpl = drv
	}
	cfg.JobRunner = w.dispatch
	w.cfg = cfg
	if !o.NoBuiltins {
		w.handleBuiltins()
	}
	return w, nil
}

// Handle registers h for jobs of mode. A name that is not a valid mode
// (messages.ValidModeName), one registered twice, a chromium mode on a
// worker without a chromium driver, a bad schema, or a call after Run
// started is an error that Run returns before linking.
func (w *Worker) Handle(name string, h Handler, opts ...HandleOption) {
	m := &mode{decl: messages.ModeDecl{Name: name}, h: h}
	for _, o := range opts {
		o(m)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.checkMode(m); err != nil {
		w.errs = append(w.errs, fmt.Errorf("handle %q: %w", name, err))
		return
	}
	w.modes[name] = m
	w.order = append(w.order, name)
}

// checkMode says why m cannot be registered. Caller holds mu.
func (w *Worker) checkMode(m *mode) error {
	switch {
	case w.started:
		return ErrStarted
	case m.h == nil:
		return errors.New("nil handler")
	case !messages.ValidModeName(m.decl.Name):
		return fmt.Errorf("not a valid mode name: use 1-%d of a-z 0-9 . _ - starting with a letter or digit", messages.MaxModeNameBytes)
	case w.modes[m.decl.Name] != nil:
		return errors.New("registered twice")
	case len(w.modes) >= messages.MaxModes:
		return fmt.Errorf("more than %d modes", messages.MaxModes)
	case m.decl.Lane == messages.LaneNeedChromium && w.chrome == nil:
		return errors.New("needs chromium, but the worker's driver is " + w.opts.Driver)
	case len(m.decl.Schema) > messages.MaxModeSchemaBytes:
		return fmt.Errorf("schema has %d bytes, limit %d", len(m.decl.Schema), messages.MaxModeSchemaBytes)
	}
	if len(m.decl.Schema) > 0 {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(m.decl.Schema, &obj); err != nil {
			return errors.New("schema is not a JSON object")
		}
	}
	return nil
}

// Modes is what hello declares: every registered mode, in registration
// order.
func (w *Worker) Modes() []messages.ModeDecl {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]messages.ModeDecl, 0, len(w.order))
	for _, n := range w.order {
		out = append(out, w.modes[n].decl)
	}
	return out
}

// ID is the worker id: the agent's once Run started (the hub may have
// given it another), else Options.ID.
func (w *Worker) ID() string {
	if a := w.agentOf(); a != nil {
		return a.ID()
	}
	return w.opts.ID
}

// Run links to the hubs and serves jobs until ctx ends, then drains: it
// takes no more jobs, waits for the running ones (up to
// Agent.StopTimeout, then cancels them), waits for the hub to acknowledge
// their reports, closes the link and the chromium driver. It returns nil
// after that orderly stop, or the registration errors (or an agent start
// error) without linking. Run may be called once.
func (w *Worker) Run(ctx context.Context) error {
	w.mu.Lock()
	if w.started {
		w.mu.Unlock()
		return ErrStarted
	}
	w.started = true
	errs := errors.Join(w.errs...)
	w.mu.Unlock()
	if errs != nil {
		w.closeDriver()
		return errs
	}
	cfg := w.cfg
	cfg.Modes = w.Modes()
	a, err := agent.New(cfg)
	if err != nil {
		w.closeDriver()
		return err
	}
	w.mu.Lock()
	w.agent = a
	w.mu.Unlock()
	runErr := a.Run(ctx)
	w.closeDriver()
	return runErr
}

// Close releases what New built (the chromium driver) for a Worker whose
// Run is never called; Run does it itself.
func (w *Worker) Close() error {
	w.mu.Lock()
	started := w.started
	w.started = true
	w.mu.Unlock()
	if started {
		return nil
	}
	return w.closeDriverErr()
}

func (w *Worker) closeDriver() {
	if err := w.closeDriverErr(); err != nil {
		w.log.Warn("close lane driver", "err", err)
	}
}

func (w *Worker) closeDriverErr() error {
	if w.chrome == nil {
		return nil
	}
	if err := w.chrome.Close(); err != nil {
		return fmt.Errorf("close chromium driver: %w", err)
	}
	return nil
}

// agentOf is the agent, once Run built it.
func (w *Worker) agentOf() *agent.Agent {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.agent
}

// defaultID is the worker id the agent will start with: cfg.ID, else the
// one derived from the LAN IP (so two workers on one machine get lane
// directories of their own only when their ids differ, as they must).
func defaultID(cfg agent.Config) string {
	if cfg.ID != "" {
		return cfg.ID
	}
	ip := agent.LanIP()
	if cfg.LanIP != "" {
		ip = net.ParseIP(cfg.LanIP).To4()
	}
	return agent.ShortID(ip)
}
