package loadgen

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Report is the outcome of one run. Rates are per second of the measured
// window; totals run from before the first link opened to after the last
// job was acknowledged. Durations encode as nanoseconds in JSON.
type Report struct {
	// HubURL is the hub that was measured.
	HubURL string `json:"hub_url"`
	// Workers is the number of simulated workers.
	Workers int `json:"workers"`
	// Lanes is each worker's max_concurrent (one job per lane).
	Lanes int `json:"lanes"`
	// Rate is lines/s per worker; 0 when FlatOut.
	Rate float64 `json:"rate_per_worker"`
	// FlatOut is true when lines went as fast as the links took them.
	FlatOut bool `json:"flat_out"`
	// Followers is the number of SSE followers.
	Followers int `json:"followers"`
	// LineBytes is the padding of each line's text.
	LineBytes int `json:"line_bytes"`
	// Warmup is the time every lane was busy before the window.
	Warmup time.Duration `json:"warmup_ns"`
	// Window is the measured window, as it really lasted.
	Window time.Duration `json:"window_ns"`
	// ConnectTime is how long opening every link (hello → welcome) took.
	ConnectTime time.Duration `json:"connect_ns"`
	// StartTime is from the first submission until every lane was busy.
	StartTime time.Duration `json:"start_ns"`

	// Lines is lines sent and stored, and log-store round trips.
	Lines LineFigures `json:"lines"`
	// Latency is line-to-follower latency.
	Latency LatencyFigures `json:"latency"`
	// Backpressure is how much the hub slowed the workers.
	Backpressure BackpressureFigures `json:"backpressure"`
	// Jobs accounts for every job submitted.
	Jobs JobFigures `json:"jobs"`
	// Hub is the hub process's CPU and memory; nil without a hub pid.
	Hub *ProcessFigures `json:"hub,omitempty"`
	// Loadgen is this process's CPU over the window (it shares the machine
	// with the hub); nil when the hub runs in this process.
	Loadgen *ProcessFigures `json:"loadgen,omitempty"`
	// Machine is the whole machine's CPU over the window; nil without
	// /proc/stat.
	Machine *MachineFigures `json:"machine,omitempty"`
	// Redis is the Redis command counters; nil without a Redis URL.
	Redis *RedisFigures `json:"redis,omitempty"`
	// Warnings are conditions that make the figures less trustworthy.
	Warnings []string `json:"warnings,omitempty"`
}

// LineFigures are the log lines sent and stored.
type LineFigures struct {
	// SentPerSec is job_log frames written to the links per second.
	SentPerSec float64 `json:"sent_per_sec"`
	// IngestedPerSec is lines the hub persisted per second
	// (paprika_log_lines_stored_total).
	IngestedPerSec float64 `json:"ingested_per_sec"`
	// WindowSent and WindowIngested are the counts behind the two rates.
	WindowSent     int64 `json:"window_sent"`
	WindowIngested int64 `json:"window_ingested"`
	// LogWrites is log-store round trips in the window
	// (paprika_log_writes_total); LogWritesPerSec the rate.
	LogWrites       int64   `json:"log_writes"`
	LogWritesPerSec float64 `json:"log_writes_per_sec"`
	// LinesPerWrite is WindowIngested / LogWrites.
	LinesPerWrite float64 `json:"lines_per_write"`
	// TotalSent and TotalIngested cover the whole run; after the final
	// drain they are equal unless the hub lost lines.
	TotalSent     int64 `json:"total_sent"`
	TotalIngested int64 `json:"total_ingested"`
	// Missing is TotalSent - TotalIngested.
	Missing int64 `json:"missing"`
}

// LatencyFigures are line-to-subscriber latencies seen by the followers:
// from the line being handed to the worker's socket to an SSE follower
// reading it. Only lines stamped inside the window count.
type LatencyFigures struct {
	// Samples is the lines measured.
	Samples int64 `json:"samples"`
	// P50 and P99 are quantiles (within 2 %: a log-bucket histogram);
	// Max is exact.
	P50 time.Duration `json:"p50_ns"`
	P99 time.Duration `json:"p99_ns"`
	Max time.Duration `json:"max_ns"`
	// Streams is SSE streams opened; Errors those that failed.
	Streams int `json:"streams"`
	Errors  int `json:"errors"`
}

// BackpressureFigures count how often the hub slowed the workers, in the
// window.
type BackpressureFigures struct {
	// Stalls is socket writes that found the kernel send buffer full and
	// waited (EAGAIN).
	Stalls int64 `json:"stalls"`
	// StallTime is their total wait.
	StallTime time.Duration `json:"stall_ns"`
	// MaxStall is the longest single wait of the run.
	MaxStall time.Duration `json:"max_stall_ns"`
	// QueueWaits is how often a job found its worker's send queue full
	// (always high when flat out: the queue is what paces the job).
	QueueWaits int64 `json:"queue_waits"`
	// TotalStalls covers the whole run.
	TotalStalls int64 `json:"total_stalls"`
	// MaxBacklog is the most lines sent but not yet stored, sampled every
	// second over the run: what sits in socket buffers and the hub's
	// queues. Bounded when backpressure works.
	MaxBacklog int64 `json:"max_backlog"`
}

// JobFigures account for the jobs the bench submitted.
type JobFigures struct {
	// Submitted is jobs created with POST /jobs.
	Submitted int `json:"submitted"`
	// Started is jobs a simulated worker began; Acked those whose job_done
	// the hub acknowledged; Lost those whose link failed first.
	Started int `json:"started"`
	Acked   int `json:"acked"`
	Lost    int `json:"lost"`
	// Succeeded, Failed, Canceled and Other are the jobs' statuses read
	// back from the hub at the end (Canceled includes jobs never started,
	// which the bench cancels; Other is any status not final yet).
	Succeeded int `json:"succeeded"`
	Failed    int `json:"failed"`
	Canceled  int `json:"canceled"`
	Other     int `json:"other"`
	// Rejected is assign_job frames a worker refused (no free lane).
	Rejected int `json:"rejected"`
	// ErrorFrames is error frames from the hub.
	ErrorFrames int `json:"error_frames"`
	// LinkFailures is simulated workers' links that failed during the run
	// (the bench does not reconnect them).
	LinkFailures int `json:"link_failures"`
}

// ProcessFigures are one process's CPU over the window and its memory over
// the run, from /proc.
type ProcessFigures struct {
	// PID is the process measured.
	PID int `json:"pid"`
	// InProcess is true when the hub runs inside the load generator: the
	// CPU then includes the load generator's own.
	InProcess bool `json:"in_process,omitempty"`
	// CPUSeconds is user+system time in the window; CPUPercent the same
	// per wall second (100 = one core).
	CPUSeconds float64 `json:"cpu_seconds"`
	CPUPercent float64 `json:"cpu_percent"`
	// CPUMicrosPerLine is CPU time per line ingested in the window.
	CPUMicrosPerLine float64 `json:"cpu_us_per_line,omitempty"`
	// ClockTicks is USER_HZ from getconf CLK_TCK; ClockTicksAssumed is
	// true when getconf failed and 100 was assumed.
	ClockTicks        int64 `json:"clock_ticks"`
	ClockTicksAssumed bool  `json:"clock_ticks_assumed,omitempty"`
	// RSSMin, RSSMax and RSSLast are VmRSS in bytes, sampled every second
	// over the whole run (hub only), RSSSamples times.
	RSSMin     int64 `json:"rss_min_bytes,omitempty"`
	RSSMax     int64 `json:"rss_max_bytes,omitempty"`
	RSSLast    int64 `json:"rss_last_bytes,omitempty"`
	RSSSamples int   `json:"rss_samples,omitempty"`
}

// MachineFigures are the whole machine's CPU over the window, in percent
// of one core (Cores × 100 at most).
type MachineFigures struct {
	// Cores is the number of CPUs.
	Cores int `json:"cores"`
	// CPUPercent is the CPU every process used together.
	CPUPercent float64 `json:"cpu_percent"`
	// OthersPercent is what neither the hub nor the load generator used;
	// -1 when unknown (no hub pid).
	OthersPercent float64 `json:"others_cpu_percent"`
}

// RedisFigures are deltas of Redis's INFO counters over the window.
type RedisFigures struct {
	// Commands is total_commands_processed; CommandsPerSec its rate.
	Commands       int64   `json:"commands"`
	CommandsPerSec float64 `json:"commands_per_sec"`
	// Calls is the calls of every command that ran in the window
	// (commandstats), rpush and publish among them.
	Calls map[string]int64 `json:"calls"`
}

// WriteText prints the report as an aligned table.
func (r *Report) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	row := func(k, format string, args ...any) { fmt.Fprintf(tw, "%s\t"+format+"\n", append([]any{k}, args...)...) }
	rate := fmt.Sprintf("%g lines/s per worker", r.Rate)
	if r.FlatOut {
		rate = "flat out"
	}
	row("hub", "%s", r.HubURL)
	row("load", "%d workers × %d lanes, %s, %d followers, line ≥ %d B", r.Workers, r.Lanes, rate, r.Followers, r.LineBytes)
	row("window", "%s (after %s warmup; links up in %s, lanes busy in %s)",
		r.Window.Round(time.Millisecond), r.Warmup, r.ConnectTime.Round(time.Millisecond), r.StartTime.Round(time.Millisecond))
	row("lines sent", "%.0f /s  (%d)", r.Lines.SentPerSec, r.Lines.WindowSent)
	row("lines ingested", "%.0f /s  (%d persisted)", r.Lines.IngestedPerSec, r.Lines.WindowIngested)
	row("log-store round trips", "%.1f /s  (%d; %.1f lines each)", r.Lines.LogWritesPerSec, r.Lines.LogWrites, r.Lines.LinesPerWrite)
	row("run totals", "%d sent, %d ingested, %d missing", r.Lines.TotalSent, r.Lines.TotalIngested, r.Lines.Missing)
	if p := r.Hub; p != nil {
		note := ""
		if p.InProcess {
			note = "  [hub in this process: includes the load generator]"
		}
		row("hub cpu", "%.1f%% of a core, %.2f µs/line%s", p.CPUPercent, p.CPUMicrosPerLine, note)
		row("hub rss", "min %s, max %s, last %s (%d samples)", mib(p.RSSMin), mib(p.RSSMax), mib(p.RSSLast), p.RSSSamples)
		if p.ClockTicksAssumed {
			row("", "(CLK_TCK unknown: assumed %d)", p.ClockTicks)
		}
	} else {
		row("hub cpu/rss", "not measured (no hub pid: --spawn-hub or --hub-pid)")
	}
	if p := r.Loadgen; p != nil {
		row("loadgen cpu", "%.1f%% of a core (same machine)", p.CPUPercent)
	}
	if m := r.Machine; m != nil {
		others := "unknown without a hub pid"
		if m.OthersPercent >= 0 {
			others = fmt.Sprintf("%.1f%% of a core", m.OthersPercent)
		}
		row("machine cpu", "%.1f%% of %d cores; other processes %s", m.CPUPercent, m.Cores, others)
	}
	if rd := r.Redis; rd != nil {
		row("redis commands", "%.1f /s  (%d)", rd.CommandsPerSec, rd.Commands)
		row("redis rpush/publish", "%d / %d", rd.Calls["rpush"], rd.Calls["publish"])
		row("redis by command", "%s", formatCalls(rd.Calls))
	} else {
		row("redis", "not measured (no --redis-url)")
	}
	row("latency to follower", "p50 %s, p99 %s, max %s  (%d lines, %d streams, %d errors)",
		ms(r.Latency.P50), ms(r.Latency.P99), ms(r.Latency.Max), r.Latency.Samples, r.Latency.Streams, r.Latency.Errors)
	bp := r.Backpressure
	row("backpressure", "%d stalled writes, %s waiting, longest %s; %d queue waits; %d stalls in the run",
		bp.Stalls, bp.StallTime.Round(time.Millisecond), ms(bp.MaxStall), bp.QueueWaits, bp.TotalStalls)
	row("backlog", "at most %d lines sent but not yet stored", bp.MaxBacklog)
	j := r.Jobs
	row("jobs", "%d submitted, %d started, %d acked, %d succeeded, %d failed, %d canceled, %d other, %d lost",
		j.Submitted, j.Started, j.Acked, j.Succeeded, j.Failed, j.Canceled, j.Other, j.Lost)
	if j.Rejected+j.ErrorFrames+j.LinkFailures > 0 {
		row("", "%d assignments rejected, %d error frames, %d links failed", j.Rejected, j.ErrorFrames, j.LinkFailures)
	}
	for _, warn := range r.Warnings {
		row("warning", "%s", warn)
	}
	return tw.Flush()
}

// OK reports whether the run lost nothing: every line sent was stored and
// every job succeeded.
func (r *Report) OK() bool {
	return r.Lines.Missing == 0 && r.Jobs.Succeeded == r.Jobs.Submitted && r.Jobs.Submitted > 0
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }

func formatCalls(calls map[string]int64) string {
	names := make([]string, 0, len(calls))
	for k := range calls {
		names = append(names, k)
	}
	slices.SortFunc(names, func(a, b string) int {
		if calls[a] != calls[b] {
			return cmp.Compare(calls[b], calls[a])
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, 0, len(names))
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("%s=%d", n, calls[n]))
	}
	if len(parts) == 0 {
		return "(none)"
	}
	return strings.Join(parts, " ")
}
