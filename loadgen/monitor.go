package loadgen

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Monitor timings.
const (
	// monitorEvery is how often the monitor reads the hub's RSS and its
	// stored-lines counter.
	monitorEvery = time.Second
	// monitorScrapeTimeout bounds one /metrics read of the monitor, so a
	// stuck hub does not stop the RSS samples.
	monitorScrapeTimeout = 2 * time.Second
)

// monitor samples the hub every second over the whole run — RSS, and the
// backlog of lines sent but not yet stored — and writes a progress line
// every ProgressEvery. Its goroutine is owned by the run: stop ends it; its
// fields are read only after that.
type monitor struct {
	r      *runner
	base   snapshot // the run's baseline, for the backlog
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once

	// owned by the monitor goroutine until done is closed
	rssMin, rssMax, rssLast int64
	rssSamples              int
	maxBacklog              int64
	scrapeErrs              int
	prev                    *snapshot // the reading of the last progress line
}

func startMonitor(r *runner, base snapshot) *monitor {
	ctx, cancel := context.WithCancel(context.Background())
	m := &monitor{r: r, base: base, cancel: cancel, done: make(chan struct{})}
	go m.loop(ctx)
	return m
}

func (m *monitor) stop() {
	m.once.Do(func() {
		m.cancel()
		<-m.done
	})
}

func (m *monitor) loop(ctx context.Context) {
	defer close(m.done)
	t := time.NewTicker(monitorEvery)
	defer t.Stop()
	m.prev = m.sample(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s := m.sample(ctx)
		if s == nil || m.r.o.Progress == nil {
			continue
		}
		if m.prev == nil {
			m.prev = s
			continue
		}
		if s.at.Sub(m.prev.at) >= m.r.o.ProgressEvery-monitorEvery/2 {
			m.progress(m.prev, s)
			m.prev = s
		}
	}
}

// sample reads RSS and the hub's counters; nil when /metrics failed.
func (m *monitor) sample(ctx context.Context) *snapshot {
	var st *procStat
	if m.r.hubProc != nil {
		if p, err := m.r.hubProc.read(); err == nil { // a hub gone: the snapshots will say so
			st = &p
			if m.rssSamples == 0 || p.rssBytes < m.rssMin {
				m.rssMin = p.rssBytes
			}
			m.rssMax = max(m.rssMax, p.rssBytes)
			m.rssLast = p.rssBytes
			m.rssSamples++
		}
	}
	sctx, cancel := context.WithTimeout(ctx, monitorScrapeTimeout)
	mt, err := m.r.hub.metrics(sctx)
	cancel()
	if err != nil {
		if ctx.Err() == nil {
			m.scrapeErrs++
		}
		return nil
	}
	s := &snapshot{at: time.Now(), send: m.r.fleet.sendStats(), stored: mt[metricLinesStored], writes: mt[metricLogWrites], hub: st}
	backlog := (s.send.lines - m.base.send.lines) - int64(s.stored-m.base.stored)
	m.maxBacklog = max(m.maxBacklog, backlog)
	return s
}

// progress writes one line about the interval from a to b.
func (m *monitor) progress(a, b *snapshot) {
	secs := b.at.Sub(a.at).Seconds()
	phase, _ := m.r.phase.Load().(string)
	line := fmt.Sprintf("[%6.1fs] %-7s sent %8.0f/s  ingested %8.0f/s  writes %7.1f/s  backlog %7d  stalls %5d  latency samples %d",
		time.Since(m.r.begun).Seconds(), phase,
		float64(b.send.lines-a.send.lines)/secs, (b.stored-a.stored)/secs, (b.writes-a.writes)/secs,
		(b.send.lines-m.base.send.lines)-int64(b.stored-m.base.stored),
		b.send.stalls-a.send.stalls, m.r.samples.Load())
	if a.hub != nil && b.hub != nil {
		cpu := m.r.hubProc.cpuSeconds(b.hub.cpuTicks - a.hub.cpuTicks)
		line += fmt.Sprintf("  hub cpu %5.1f%%  rss %s", 100*cpu/secs, mib(b.hub.rssBytes))
	}
	if b.stored < a.stored {
		line += "  (hub counters went backwards: did it restart?)"
	}
	fmt.Fprintln(m.r.o.Progress, line)
}

// fill copies the monitor's figures into the report.
func (m *monitor) fill(rep *Report) {
	rep.Backpressure.MaxBacklog = m.maxBacklog
	if m.scrapeErrs > 0 {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("%d of the monitor's /metrics reads failed or took over %s (a stalled hub?)",
			m.scrapeErrs, monitorScrapeTimeout))
	}
	if rep.Hub == nil || m.rssSamples == 0 {
		return
	}
	rep.Hub.RSSMin, rep.Hub.RSSMax, rep.Hub.RSSLast, rep.Hub.RSSSamples = m.rssMin, m.rssMax, m.rssLast, m.rssSamples
}
