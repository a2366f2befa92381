package loadgen

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// assumedClockTicks is USER_HZ when `getconf CLK_TCK` cannot be run: 100 on
// every Linux architecture Paprika runs on.
const assumedClockTicks = 100

// procStat is one reading of a process's CPU time and resident memory.
type procStat struct {
	at       time.Time
	cpuTicks int64 // utime + stime, in clock ticks
	rssBytes int64 // VmRSS
}

// procProbe reads /proc/<pid> of one process (Linux).
type procProbe struct {
	pid          int
	clockTicks   int64
	ticksAssumed bool // getconf failed: clockTicks is assumedClockTicks
}

// newProcProbe checks that /proc/<pid> is readable and learns the clock
// tick rate from getconf.
func newProcProbe(pid int) (*procProbe, error) {
	p := &procProbe{pid: pid, clockTicks: assumedClockTicks, ticksAssumed: true}
	if out, err := exec.Command("getconf", "CLK_TCK").Output(); err == nil {
		if n, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64); err == nil && n > 0 {
			p.clockTicks, p.ticksAssumed = n, false
		}
	}
	if _, err := p.read(); err != nil {
		return nil, err
	}
	return p, nil
}

// read takes one reading.
func (p *procProbe) read() (procStat, error) {
	st := procStat{at: time.Now()}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.pid))
	if err != nil {
		return st, fmt.Errorf("read CPU time of pid %d: %w", p.pid, err)
	}
	if st.cpuTicks, err = parseStatTicks(b); err != nil {
		return st, fmt.Errorf("pid %d: %w", p.pid, err)
	}
	b, err = os.ReadFile(fmt.Sprintf("/proc/%d/status", p.pid))
	if err != nil {
		return st, fmt.Errorf("read memory of pid %d: %w", p.pid, err)
	}
	if st.rssBytes, err = parseStatusRSS(b); err != nil {
		return st, fmt.Errorf("pid %d: %w", p.pid, err)
	}
	return st, nil
}

// cpuSeconds converts a tick count.
func (p *procProbe) cpuSeconds(ticks int64) float64 { return float64(ticks) / float64(p.clockTicks) }

// parseStatTicks returns utime+stime from /proc/<pid>/stat. The command
// name (field 2) is in parentheses and may hold spaces, so fields are
// counted from the last ')': state is field 3, utime 14, stime 15.
func parseStatTicks(b []byte) (int64, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("malformed /proc stat: no command name")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("malformed /proc stat: %d fields after the command name", len(f))
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("malformed /proc stat utime/stime: %w", err)
	}
	return utime + stime, nil
}

// parseStatusRSS returns VmRSS from /proc/<pid>/status, in bytes.
func parseStatusRSS(b []byte) (int64, error) {
	for line := range strings.SplitSeq(string(b), "\n") {
		v, ok := strings.CutPrefix(line, "VmRSS:")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("malformed VmRSS line %q", line)
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("malformed VmRSS line %q: %w", line, err)
		}
		return kb << 10, nil
	}
	return 0, errors.New("no VmRSS in /proc status (a zombie process?)")
}

// machineStat is one reading of the whole machine's CPU time (/proc/stat).
type machineStat struct {
	busy, total int64 // clock ticks over all CPUs; busy excludes idle and iowait
}

// readMachine reads the aggregate "cpu" line of /proc/stat.
func readMachine() (machineStat, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return machineStat{}, fmt.Errorf("read machine CPU time: %w", err)
	}
	return parseMachineStat(b)
}

// parseMachineStat reads "cpu  user nice system idle iowait irq softirq
// steal guest guest_nice"; guest time is already inside user and nice.
func parseMachineStat(b []byte) (machineStat, error) {
	line, _, _ := bytes.Cut(b, []byte("\n"))
	f := strings.Fields(string(line))
	if len(f) < 5 || f[0] != "cpu" {
		return machineStat{}, errors.New("malformed /proc/stat: no aggregate cpu line")
	}
	var st machineStat
	for i, v := range f[1:min(len(f), 9)] { // up to steal
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return machineStat{}, fmt.Errorf("malformed /proc/stat: %w", err)
		}
		st.total += n
		if i != 3 && i != 4 { // idle, iowait
			st.busy += n
		}
	}
	return st, nil
}
