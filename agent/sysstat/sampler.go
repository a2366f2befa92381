package sysstat

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// ErrUnsupported is returned on systems without /proc or statfs(2).
var ErrUnsupported = errors.New("host statistics not supported on this system")

// Reading is one sample of the host, each figure a percentage in 0..100.
type Reading struct {
	// CPUPct is the share of CPU time not idle since the previous sample.
	CPUPct float64
	// MemPct is the share of memory not available to new programs.
	MemPct float64
	// DiskPct is the share of the working directory's file system in use,
	// counted like df(1): used / (used + available to unprivileged users).
	DiskPct float64
}

// Sampler takes Readings. CPU use is a delta, so the Sampler remembers the
// counters of its previous sample. It is safe for concurrent use.
type Sampler struct {
	procDir string // fixed: "/proc", replaced in tests
	dir     string // fixed: the directory whose file system DiskPct measures

	mu      sync.Mutex
	prev    cpuTimes
	havePrv bool
	lastCPU float64
}

// NewSampler returns a Sampler measuring the file system holding dir. It
// reads the CPU counters once, so the first Sample already reports a delta.
func NewSampler(dir string) *Sampler {
	s := &Sampler{procDir: "/proc", dir: dir}
	if t, err := s.readCPU(); err == nil {
		s.prev, s.havePrv = t, true
	}
	return s
}

// Sample reads the host. Each figure that could be read is set even when
// another failed; the error joins every failure.
func (s *Sampler) Sample() (Reading, error) {
	var r Reading
	var errs []error
	cpu, err := s.cpuPct()
	if err != nil {
		errs = append(errs, err)
	}
	r.CPUPct = cpu
	if r.MemPct, err = s.memPct(); err != nil {
		errs = append(errs, err)
	}
	if r.DiskPct, err = diskPct(s.dir); err != nil {
		errs = append(errs, err)
	}
	return r, errors.Join(errs...)
}

// cpuPct is the busy share since the previous call. When no CPU time passed
// (two calls in the same tick) it repeats the last figure.
func (s *Sampler) cpuPct() (float64, error) {
	t, err := s.readCPU()
	if err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	prev, had := s.prev, s.havePrv
	s.prev, s.havePrv = t, true
	if !had {
		return 0, nil
	}
	total := t.total - prev.total
	idle := t.idle - prev.idle
	if t.total < prev.total || t.idle < prev.idle || total == 0 {
		return s.lastCPU, nil
	}
	s.lastCPU = clampPct(float64(total-idle) / float64(total) * 100)
	return s.lastCPU, nil
}

func (s *Sampler) readCPU() (cpuTimes, error) {
	f, err := os.Open(filepath.Join(s.procDir, "stat"))
	if err != nil {
		return cpuTimes{}, fmt.Errorf("read cpu counters: %w", errors.Join(ErrUnsupported, err))
	}
	defer f.Close()
	return parseCPU(f)
}

func (s *Sampler) memPct() (float64, error) {
	f, err := os.Open(filepath.Join(s.procDir, "meminfo"))
	if err != nil {
		return 0, fmt.Errorf("read meminfo: %w", errors.Join(ErrUnsupported, err))
	}
	defer f.Close()
	return parseMeminfo(f)
}

// cpuTimes are the aggregate counters of /proc/stat's "cpu" line, in ticks.
type cpuTimes struct {
	total uint64 // user+nice+system+idle+iowait+irq+softirq+steal
	idle  uint64 // idle+iowait
}

// parseCPU reads the aggregate "cpu" line of /proc/stat. guest and
// guest_nice are left out of the total: the kernel already counts them in
// user and nice.
func parseCPU(r io.Reader) (cpuTimes, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || fields[0] != "cpu" {
			continue
		}
		if len(fields) < 5 {
			return cpuTimes{}, fmt.Errorf("parse /proc/stat: cpu line has %d fields", len(fields))
		}
		var t cpuTimes
		for i, f := range fields[1:min(len(fields), 9)] {
			v, err := strconv.ParseUint(f, 10, 64)
			if err != nil {
				return cpuTimes{}, fmt.Errorf("parse /proc/stat field %d: %w", i+1, err)
			}
			t.total += v
			if i == 3 || i == 4 { // idle, iowait
				t.idle += v
			}
		}
		return t, nil
	}
	if err := sc.Err(); err != nil {
		return cpuTimes{}, fmt.Errorf("read /proc/stat: %w", err)
	}
	return cpuTimes{}, errors.New("parse /proc/stat: no cpu line")
}

// parseMeminfo computes (MemTotal − MemAvailable) / MemTotal from
// /proc/meminfo.
func parseMeminfo(r io.Reader) (float64, error) {
	var total, avail uint64
	var haveTotal, haveAvail bool
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		var dst *uint64
		switch fields[0] {
		case "MemTotal:":
			dst, haveTotal = &total, true
		case "MemAvailable:":
			dst, haveAvail = &avail, true
		default:
			continue
		}
		v, err := strconv.ParseUint(fields[1], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("parse /proc/meminfo %s: %w", fields[0], err)
		}
		*dst = v
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("read /proc/meminfo: %w", err)
	}
	if !haveTotal || !haveAvail || total == 0 {
		return 0, errors.New("parse /proc/meminfo: MemTotal or MemAvailable missing")
	}
	if avail > total {
		avail = total
	}
	return clampPct(float64(total-avail) / float64(total) * 100), nil
}

func clampPct(v float64) float64 {
	switch {
	case v != v || v < 0: // NaN or negative
		return 0
	case v > 100:
		return 100
	default:
		return v
	}
}
