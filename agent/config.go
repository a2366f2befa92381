package agent

import (
	"cmp"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/paprika-hub/paprika/messages"
)

// Defaults of Config; each applies when its field is left zero.
const (
	// DefaultLanes is the number of lanes when Config.Lanes is 0.
	DefaultLanes = 1
	// DefaultDriver is the driver used when Config.Driver is empty.
	DefaultDriver = DriverSimulated
	// DefaultHeartbeatInterval is API.md's heartbeat period; the hub's
	// welcome frame may override it.
	DefaultHeartbeatInterval = 15 * time.Second
	// DefaultPingInterval is the period of WebSocket pings; a link that
	// shows no traffic (not even a pong) for three periods is dropped.
	DefaultPingInterval = 10 * time.Second
	// DefaultStopTimeout bounds how long Run waits for running jobs after
	// its context ends before it cancels them.
	DefaultStopTimeout = 30 * time.Second
	// DefaultFlushTimeout bounds how long Run waits, after the jobs ended,
	// for the hub to acknowledge every kept frame before closing the link.
	DefaultFlushTimeout = 5 * time.Second
	// DefaultVersion is reported in hello when Config.Version is empty.
	DefaultVersion = "dev"

	// maxLanes matches the hub's limit on max_concurrent (messages.Frame
	// validation).
	maxLanes = 10000
)

// Config configures an Agent. Only HubURLs is required.
type Config struct {
	// HubURLs are the hubs' base URLs (http://host:port or https://…; ws://
	// and wss:// are accepted too). The link is GET {base}/workers/{id}/link
	// upgraded to a WebSocket. After every failed dial or lost link the agent
	// moves on to the next URL, wrapping around. Required.
	HubURLs []string
	// ID overrides the worker id derived from the LAN IP (ShortID, or
	// LongID after an id_taken answer). Default: derived.
	ID string
	// LanIP overrides the detected LAN IPv4 address (see LanIP), both for
	// the derived id and for the lan_ip reported in hello. Default: detected.
	LanIP string
	// Lanes is the number of jobs run at once. Default DefaultLanes (1).
	Lanes int
	// Driver names the driver that runs jobs: "simulated" ("chromium" needs
	// DriverImpl = chromium.New(...)). Default "simulated". Ignored when
	// DriverImpl is set.
	Driver string
	// DriverImpl, when set, is used instead of looking Driver up by name, so
	// a driver living in another package can be plugged in. Default nil.
	DriverImpl Driver
	// Token is sent as "Authorization: Bearer <token>" on the WebSocket
	// upgrade. Default: no header.
	Token string
	// CAFile is a PEM file of CA certificates that sign the hubs' HTTPS
	// certificates (hub.tls_cert), for a private CA such as `paprika certs
	// ca`; both the link and asset uploads trust it. Added to RootCAs when
	// both are set. Default "" (RootCAs, else the system roots).
	CAFile string
	// RootCAs is the pool of CAs the link and asset uploads trust for a
	// hub's certificate. Default nil (the system roots, plus CAFile).
	RootCAs *x509.CertPool
	// Insecure lets the agent send Token to a hub over plain http:// or
	// ws:// on an address other than loopback, where anyone on the path can
	// read it and link as this worker. Default false: New refuses such a
	// hub URL (ErrInsecureHub) unless Token is empty.
	Insecure bool
	// Version is reported in hello. Default DefaultVersion ("dev").
	Version string
	// HeartbeatInterval is the heartbeat period until the hub's welcome
	// frame sets another one. Default 15s.
	HeartbeatInterval time.Duration
	// PingInterval is the WebSocket ping period. Default 10s.
	PingInterval time.Duration
	// StopTimeout bounds the wait for running jobs once Run's context ends;
	// jobs still running then are cancelled and reported as job_failed with
	// reason worker_lost. Default 30s.
	StopTimeout time.Duration
	// FlushTimeout bounds the wait for job_ack of every kept frame after
	// the jobs ended, before the socket is closed. Default 5s.
	FlushTimeout time.Duration
	// WorkDir is the directory whose file system disk_pct reports.
	// Default ".".
	WorkDir string
	// ExecLog, when set, is a file to which the agent appends a line
	// "start|end worker_id job_id attempt unix_nanos" as each job starts
	// and ends, so tests can prove that no job ran twice and no worker ran
	// more jobs at once than it has lanes. Default: none.
	ExecLog string
	// Restart thresholds (0 = off): after this uptime, this many jobs, or
	// above this resident memory the agent drains, finishes its jobs and
	// Run returns nil, for a supervisor (systemd) to start it again with
	// the same id. Defaults 0.
	RestartAfter     time.Duration
	RestartAfterJobs int
	RestartAboveRSS  int64
	// RestartJitter is the most a restart waits after its threshold, at
	// random, so a fleet deployed together does not leave together.
	// Default 60s.
	RestartJitter time.Duration
	// Logger receives the agent's logs. Default slog.Default().
	Logger *slog.Logger
	// JobRunner, when set, runs every job instead of the driver's Run; the
	// driver still names the lanes and runs sessions and tunnels. The
	// worker library (package worker) dispatches modes to its handlers
	// through it. Default nil (the driver runs jobs).
	JobRunner JobRunner
	// Modes is declared in hello's capabilities.modes (the worker
	// library's registered handlers). Default none: the hub assumes the
	// built-in modes the driver allows.
	Modes []messages.ModeDecl
}

// Validate reports every invalid field at once, each error naming the
// `paprika worker` flag or Config field it is about.
func (c Config) Validate() error {
	var errs []error
	if len(c.HubURLs) == 0 {
		errs = append(errs, errors.New("hub: at least one hub URL is required"))
	}
	var clear []string
	for _, u := range c.HubURLs {
		if _, err := linkURL(u, "x"); err != nil {
			errs = append(errs, fmt.Errorf("hub: %w", err))
		} else if plainRemote(u) {
			clear = append(clear, u)
		}
	}
	if len(clear) > 0 && c.Token != "" && !c.Insecure {
		// One error for every such URL: a refusal is one line.
		errs = append(errs, fmt.Errorf("hub: %w: %s (use https://, the hub's hub.tls_cert, or --insecure on a trusted network)",
			ErrInsecureHub, strings.Join(clear, ", ")))
	}
	if c.LanIP != "" {
		if ip := net.ParseIP(c.LanIP); ip == nil || ip.To4() == nil {
			errs = append(errs, fmt.Errorf("lan_ip: %q is not an IPv4 address", c.LanIP))
		}
	}
	if c.ID != "" && url.PathEscape(c.ID) != c.ID {
		errs = append(errs, fmt.Errorf("id: %q must be usable in a URL path without escaping", c.ID))
	}
	if c.Lanes < 0 || c.Lanes > maxLanes {
		errs = append(errs, fmt.Errorf("lanes: %d out of range 1..%d", c.Lanes, maxLanes))
	}
	if c.DriverImpl == nil && c.Driver != "" && c.Driver != DriverSimulated && c.Driver != DriverChromium {
		errs = append(errs, fmt.Errorf("driver: %q, allowed values: %s, %s", c.Driver, DriverChromium, DriverSimulated))
	}
	for name, d := range map[string]time.Duration{
		"heartbeat_interval": c.HeartbeatInterval, "ping_interval": c.PingInterval,
		"stop_timeout": c.StopTimeout, "flush_timeout": c.FlushTimeout,
	} {
		if d < 0 {
			errs = append(errs, fmt.Errorf("%s: %s is negative", name, d))
		}
	}
	return errors.Join(errs...)
}

// ErrInsecureHub is what Validate and New return when a worker with a token
// is pointed at a non-loopback hub over plain HTTP and Config.Insecure is
// off: the token would cross the network in clear text.
var ErrInsecureHub = errors.New("refusing to send the worker token in clear text to a non-loopback hub")

// plainRemote reports whether base is http:// or ws:// to a host other than
// loopback (127.0.0.0/8, ::1, localhost). Names are not resolved: only
// these spellings are known to stay on the machine.
func plainRemote(base string) bool {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "ws") {
		return false
	}
	host := u.Hostname()
	if strings.EqualFold(host, "localhost") {
		return false
	}
	ip := net.ParseIP(host)
	return ip == nil || !ip.IsLoopback()
}

// tlsConfig is the client TLS configuration of the link and the uploads:
// nil (Go's defaults, the system roots) unless a CA is given.
func (c Config) tlsConfig() (*tls.Config, error) {
	if c.CAFile == "" && c.RootCAs == nil {
		return nil, nil
	}
	pool := c.RootCAs
	if c.CAFile != "" {
		pem, err := os.ReadFile(c.CAFile)
		if err != nil {
			return nil, fmt.Errorf("ca: %w", err)
		}
		if pool == nil {
			pool = x509.NewCertPool()
		} else {
			pool = pool.Clone()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("ca: %s holds no PEM certificate", c.CAFile)
		}
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}

// withDefaults returns c with every zero field set to its default.
func (c Config) withDefaults() Config {
	c.Lanes = cmp.Or(c.Lanes, DefaultLanes)
	c.Driver = cmp.Or(c.Driver, DefaultDriver)
	c.Version = cmp.Or(c.Version, DefaultVersion)
	c.HeartbeatInterval = cmp.Or(c.HeartbeatInterval, DefaultHeartbeatInterval)
	c.PingInterval = cmp.Or(c.PingInterval, DefaultPingInterval)
	c.StopTimeout = cmp.Or(c.StopTimeout, DefaultStopTimeout)
	c.FlushTimeout = cmp.Or(c.FlushTimeout, DefaultFlushTimeout)
	c.RestartJitter = cmp.Or(c.RestartJitter, DefaultRestartJitter)
	c.WorkDir = cmp.Or(c.WorkDir, ".")
	c.Logger = cmp.Or(c.Logger, slog.Default())
	return c
}

// parseHubURL parses a hub base URL, which may be given as http(s) or
// ws(s), and sets its scheme to plain, or to tls for https and wss: the
// link wants ws/wss, the asset upload http/https.
func parseHubURL(base, plain, tls string) (*url.URL, error) {
	u, err := url.Parse(base)
	if err != nil {
		return nil, fmt.Errorf("parse hub URL %q: %w", base, err)
	}
	switch u.Scheme {
	case "http", "ws":
		u.Scheme = plain
	case "https", "wss":
		u.Scheme = tls
	default:
		return nil, fmt.Errorf("hub URL %q: scheme must be http or https", base)
	}
	return u, nil
}

// linkURL turns a hub base URL into the WebSocket URL of a worker's link.
func linkURL(base, id string) (string, error) { return hubWSURL(base, "/workers/"+id+"/link") }

// tunnelURL is the hub's WebSocket URL for one CDP tunnel of worker id.
func tunnelURL(base, id, tunnelID string) (string, error) {
	return hubWSURL(base, "/workers/"+id+"/tunnels/"+tunnelID)
}

// hubWSURL is the ws:// or wss:// URL of path on the hub at base.
func hubWSURL(base, rel string) (string, error) {
	u, err := parseHubURL(base, "ws", "wss")
	if err != nil {
		return "", err
	}
	if u.Host == "" {
		return "", fmt.Errorf("hub URL %q: host missing", base)
	}
	path := u.Path
	for len(path) > 0 && path[len(path)-1] == '/' {
		path = path[:len(path)-1]
	}
	u.Path = path + rel
	u.RawPath = ""
	u.RawQuery = ""
	u.Fragment = ""
	return u.String(), nil
}
