package loadgen

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"strings"
	"time"
)

// Defaults of Options (and of the `paprika bench` flags).
const (
	DefaultHubURL        = "http://127.0.0.1:8080" // Options.HubURL
	DefaultWorkers       = 200                     // Options.Workers
	DefaultLanes         = 1                       // Options.Lanes
	DefaultRate          = 25.0                    // Options.Rate, lines/s per worker
	DefaultDuration      = 30 * time.Second        // Options.Duration
	DefaultWarmup        = 3 * time.Second         // Options.Warmup
	DefaultFollowers     = 10                      // Options.Followers
	DefaultWorkerPrefix  = "bench-"                // Options.WorkerPrefix
	DefaultStartTimeout  = 60 * time.Second        // Options.StartTimeout
	DefaultDrainTimeout  = 60 * time.Second        // Options.DrainTimeout
	DefaultProgressEvery = 5 * time.Second         // Options.ProgressEvery
	// MaxJobLines is the hub's bound on params.lines of a noop job.
	MaxJobLines = 1_000_000
)

// Options describe one run. The zero value of each field means its default.
type Options struct {
	// HubURL is the hub's base URL. Default DefaultHubURL.
	HubURL string
	// Token is the API bearer token (auth.api_token); "" for an open hub.
	Token string
	// WorkerToken is the worker-link token (auth.worker_token); "" for an
	// open hub.
	WorkerToken string
	// HubPID is the hub's process id, for its CPU time and RSS from /proc;
	// 0 leaves those figures out. The caller's own pid is allowed (a hub in
	// this process): the CPU figure then includes the load generator, and
	// the report says so.
	HubPID int
	// RedisURL names the Redis the hub uses, for INFO deltas; "" leaves the
	// Redis figures out.
	RedisURL string

	// Workers is the number of simulated workers. Default DefaultWorkers.
	Workers int
	// Lanes is each worker's max_concurrent; the bench keeps every lane
	// busy with one job. Default DefaultLanes.
	Lanes int
	// Rate is log lines per second per worker, spread over its lanes.
	// Default DefaultRate.
	Rate float64
	// FlatOut sends lines as fast as the links take them; Rate is ignored.
	FlatOut bool
	// Duration is the measured window. Default DefaultDuration.
	Duration time.Duration
	// Warmup runs before the window, with every lane busy, and is left out
	// of the figures. Default DefaultWarmup; negative means none.
	Warmup time.Duration
	// Followers is the number of SSE followers of random running jobs.
	// Default DefaultFollowers; negative means none.
	Followers int
	// LineBytes pads each line's text to at least this many bytes
	// (0: no padding; the bare line is about 30 bytes).
	LineBytes int

	// SendBuffer sets SO_SNDBUF of each simulated worker's socket, in
	// bytes; 0 keeps the kernel's autotuned buffer (megabytes on loopback,
	// which hides a slow hub for a long time before a write blocks).
	SendBuffer int

	// WorkerPrefix prefixes the simulated worker ids. Default
	// DefaultWorkerPrefix ("bench-1", "bench-2", …).
	WorkerPrefix string
	// StartTimeout bounds the wait for every lane to be busy. Default
	// DefaultStartTimeout.
	StartTimeout time.Duration
	// DrainTimeout bounds the wait, after the window, for every job to be
	// acknowledged. Default DefaultDrainTimeout.
	DrainTimeout time.Duration
	// Progress receives a line every ProgressEvery; nil for none.
	Progress io.Writer
	// ProgressEvery is the progress period. Default DefaultProgressEvery.
	ProgressEvery time.Duration
	// Logger receives the run's events; nil discards them.
	Logger *slog.Logger
}

// withDefaults returns o with every zero field set to its default.
func (o Options) withDefaults() Options {
	o.HubURL = cmp.Or(o.HubURL, DefaultHubURL)
	o.Workers = cmp.Or(o.Workers, DefaultWorkers)
	o.Lanes = cmp.Or(o.Lanes, DefaultLanes)
	if o.Rate == 0 && !o.FlatOut {
		o.Rate = DefaultRate
	}
	o.Duration = cmp.Or(o.Duration, DefaultDuration)
	// For these two, negative means none: zero is taken for the default.
	o.Warmup = max(cmp.Or(o.Warmup, DefaultWarmup), 0)
	o.Followers = max(cmp.Or(o.Followers, DefaultFollowers), 0)
	o.WorkerPrefix = cmp.Or(o.WorkerPrefix, DefaultWorkerPrefix)
	o.StartTimeout = cmp.Or(o.StartTimeout, DefaultStartTimeout)
	o.DrainTimeout = cmp.Or(o.DrainTimeout, DefaultDrainTimeout)
	o.ProgressEvery = cmp.Or(o.ProgressEvery, DefaultProgressEvery)
	o.Logger = cmp.Or(o.Logger, slog.New(slog.DiscardHandler))
	return o
}

// validate names every bad field at once.
func (o *Options) validate() error {
	var errs []error
	u, err := url.Parse(o.HubURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("hub URL %q: want http://host:port", o.HubURL))
	}
	if o.Workers < 0 || o.Workers > 100_000 {
		errs = append(errs, fmt.Errorf("workers %d: want 1..100000", o.Workers))
	}
	if o.Lanes < 0 || o.Lanes > 10_000 {
		errs = append(errs, fmt.Errorf("lanes %d: want 1..10000", o.Lanes))
	}
	if o.Rate < 0 {
		errs = append(errs, fmt.Errorf("rate %g: want > 0 lines/s per worker (or flat out)", o.Rate))
	}
	if o.Duration < 0 {
		errs = append(errs, fmt.Errorf("duration %s: want > 0", o.Duration))
	}
	if o.LineBytes < 0 || o.LineBytes > 64<<10 {
		errs = append(errs, fmt.Errorf("line bytes %d: want 0..65536", o.LineBytes))
	}
	if o.SendBuffer < 0 {
		errs = append(errs, fmt.Errorf("send buffer %d: want bytes >= 0 (0 = kernel default)", o.SendBuffer))
	}
	if o.HubPID < 0 {
		errs = append(errs, fmt.Errorf("hub pid %d: want > 0, or 0 for none", o.HubPID))
	}
	if strings.ContainsAny(o.WorkerPrefix, "/ ?#") {
		errs = append(errs, fmt.Errorf("worker prefix %q: use letters, digits, _ and -", o.WorkerPrefix))
	}
	return errors.Join(errs...)
}

// linkURL is the worker-link URL of a worker id on the hub.
func (o *Options) linkURL(id string) string {
	base := strings.TrimRight(o.HubURL, "/")
	switch {
	case strings.HasPrefix(base, "https://"):
		base = "wss://" + strings.TrimPrefix(base, "https://")
	default:
		base = "ws://" + strings.TrimPrefix(base, "http://")
	}
	return base + "/workers/" + url.PathEscape(id) + "/link"
}

// perJobRate is the lines/s of one job (one lane); 0 when flat out.
func (o *Options) perJobRate() float64 {
	if o.FlatOut {
		return 0
	}
	return o.Rate / float64(o.Lanes)
}

// jobLines is params.lines of each job: enough for the job to outlast the
// start ramp, the warmup and the window at its rate (the window's end then
// finishes it), or the hub's maximum when flat out.
func (o *Options) jobLines(perJobRate float64) int {
	if perJobRate <= 0 {
		return MaxJobLines
	}
	span := o.StartTimeout + o.Warmup + o.Duration
	return min(int(perJobRate*span.Seconds())+1, MaxJobLines)
}
