package chromium

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"os/exec"
	"time"
)

// Defaults of Config; each applies when its field is left zero.
const (
	// DefaultLanes is the number of lanes when Config.Lanes is 0.
	DefaultLanes = 1
	// DefaultStartTimeout bounds the start of one lane's browser.
	DefaultStartTimeout = 20 * time.Second
	// DefaultHealthTimeout bounds the health check (one CDP call) that runs
	// before every job and session on a lane that is already started.
	DefaultHealthTimeout = 2500 * time.Millisecond
	// DefaultCleanupTimeout bounds the cleanup of a lane after each job
	// and session (hygiene.go); a cleanup that takes longer restarts the
	// browser instead.
	DefaultCleanupTimeout = 5 * time.Second
	// DefaultStepTimeout bounds one step: a navigation, a wait, a click, …
	// The job's own deadline still applies when it is shorter.
	DefaultStepTimeout = 30 * time.Second
	// DefaultWindowWidth and DefaultWindowHeight are the viewport size, and
	// so the size of screenshots.
	DefaultWindowWidth  = 1280
	DefaultWindowHeight = 800

	// maxLanes matches the agent's limit.
	maxLanes = 10000
)

// ErrNotFound is returned by New (wrapped) when no Chromium binary is found.
var ErrNotFound = errors.New("chromium not found: install Debian package chromium or set --chromium PATH")

// executableNames are looked up on PATH, in order, when Config.Path is empty.
var executableNames = []string{"chromium", "chromium-browser", "google-chrome"}

// UploadFunc stores one asset of a job (API.md: GET /jobs/{id}/assets/{name}
// serves it later). r may be an io.ReadSeeker, so an uploader can retry;
// size is its length in bytes. agent.(*Agent).UploadAsset has this shape.
type UploadFunc func(ctx context.Context, jobID, name, contentType string, r io.Reader, size int64) error

// Config configures a Driver. The zero value is usable: one lane, Chromium
// from PATH, profiles under a new temporary directory, assets dropped.
type Config struct {
	// Lanes is the number of lanes (browsers). It must match the agent's
	// Config.Lanes. Default DefaultLanes (1).
	Lanes int
	// Path is the Chromium binary. Default: the first of chromium,
	// chromium-browser, google-chrome found on PATH.
	Path string
	// WorkDir is the directory under which each lane keeps its profile
	// directory (lane-<n>, wiped at every browser start and at Close).
	// Default: a new directory under os.TempDir(), removed by Close.
	WorkDir string
	// Upload stores the assets of fetch and macro jobs (page.html,
	// screenshot.png, step screenshots). Wire it to agent.UploadAsset once
	// the agent exists (see the package example). Default nil: assets are
	// not stored and not listed in the result; a log line says so.
	Upload UploadFunc
	// SessionUpload stores a file a session's page downloaded, under the
	// session id (its first argument) and the file's name: wire it to
	// agent.UploadSessionDownload. Default nil: a session's downloads are
	// not kept (a log line says so).
	SessionUpload UploadFunc
	// ProfileLoad and ProfileSave read and write the profiles of fetch
	// and macro jobs (params.profile) and of sessions (profile.go): wire
	// them to agent.LoadProfile and agent.SaveProfile. Default nil: a job
	// or session naming a profile fails with lane_error.
	ProfileLoad ProfileLoadFunc
	ProfileSave ProfileSaveFunc
	// StartTimeout bounds a browser start. Default 20s.
	StartTimeout time.Duration
	// HealthTimeout bounds the health check before each job. Default 2.5s.
	HealthTimeout time.Duration
	// CleanupTimeout bounds the cleanup of a lane when a job or session
	// releases it; past it the browser is restarted instead. Default 5s.
	CleanupTimeout time.Duration
	// StepTimeout bounds one fetch or macro step (and one session command
	// unless the command sets timeout_ms). Default 30s.
	StepTimeout time.Duration
	// WindowWidth and WindowHeight set the viewport. Default 1280×800.
	WindowWidth, WindowHeight int
	// NoSandbox starts Chromium with --no-sandbox even when not running as
	// root (as root it is always added: Chromium refuses to start
	// otherwise). Default false.
	NoSandbox bool
	// ExtraFlags are added to Chromium's command line, each "--name" or
	// "--name=value". Default none.
	ExtraFlags []string
	// Logger receives the driver's logs. Default slog.Default().
	Logger *slog.Logger
	// EgressDeny and EgressAllow add to the egress policy every request of
	// a job's browser is checked against, by the addresses its host
	// resolves to (egress.go): the top-level URL of fetch and macro, every
	// navigation, redirect and subresource. The defaults deny link-local
	// (169.254.0.0/16, fe80::/10) and the cloud metadata addresses, and
	// allow the rest, loopback and private ranges included. The longest
	// matching prefix decides; on a tie, allow. $PAPRIKA_BROWSER_EGRESS_DENY
	// and $PAPRIKA_BROWSER_EGRESS_ALLOW (comma-separated CIDRs) add more.
	EgressDeny, EgressAllow []netip.Prefix

	// Test hooks: the environment and the resolver of the egress policy
	// (nil: os.Getenv, net.DefaultResolver), and a fault for a step of the
	// lane cleanup (called with the step's name; an error fails the step),
	// and sessions without a guard (the baseline of BenchmarkGuard).
	getenv       func(string) string
	lookup       lookupFunc
	cleanupFault func(step string) error
	noGuard      bool
}

// Validate reports every invalid field at once.
func (c Config) Validate() error {
	var errs []error
	if c.Lanes < 0 || c.Lanes > maxLanes {
		errs = append(errs, fmt.Errorf("lanes: %d out of range 1..%d", c.Lanes, maxLanes))
	}
	for name, d := range map[string]time.Duration{
		"start_timeout": c.StartTimeout, "health_timeout": c.HealthTimeout, "step_timeout": c.StepTimeout,
		"cleanup_timeout": c.CleanupTimeout,
	} {
		if d < 0 {
			errs = append(errs, fmt.Errorf("chromium %s: %s is negative", name, d))
		}
	}
	if c.WindowWidth < 0 || c.WindowHeight < 0 {
		errs = append(errs, fmt.Errorf("chromium window: %dx%d is negative", c.WindowWidth, c.WindowHeight))
	}
	for _, f := range c.ExtraFlags {
		if len(f) < 3 || f[:2] != "--" {
			errs = append(errs, fmt.Errorf("chromium extra flag %q: must look like --name or --name=value", f))
		}
	}
	return errors.Join(errs...)
}

// withDefaults returns c with every zero field set to its default.
func (c Config) withDefaults() Config {
	c.Lanes = cmp.Or(c.Lanes, DefaultLanes)
	c.StartTimeout = cmp.Or(c.StartTimeout, DefaultStartTimeout)
	c.HealthTimeout = cmp.Or(c.HealthTimeout, DefaultHealthTimeout)
	c.StepTimeout = cmp.Or(c.StepTimeout, DefaultStepTimeout)
	c.CleanupTimeout = cmp.Or(c.CleanupTimeout, DefaultCleanupTimeout)
	c.WindowWidth = cmp.Or(c.WindowWidth, DefaultWindowWidth)
	c.WindowHeight = cmp.Or(c.WindowHeight, DefaultWindowHeight)
	c.Logger = cmp.Or(c.Logger, slog.Default())
	return c
}

// LookPath finds the Chromium binary: path itself when set (a file name is
// looked up on PATH), else the first of chromium, chromium-browser,
// google-chrome on PATH. The error wraps ErrNotFound.
func LookPath(path string) (string, error) {
	if path != "" {
		p, err := exec.LookPath(path)
		if err != nil {
			return "", fmt.Errorf("%w (%s: %v)", ErrNotFound, path, err)
		}
		return p, nil
	}
	for _, name := range executableNames {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w (looked for %v on PATH=%s)", ErrNotFound, executableNames, os.Getenv("PATH"))
}
