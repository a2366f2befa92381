package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// clockTicks is USER_HZ, 100 on every Linux this runs on (sysconf needs cgo).
const clockTicks = 100

// cpuSeconds is utime+stime of one process from /proc/<pid>/stat.
func cpuSeconds(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command may hold spaces and parentheses: fields start after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return float64(u+s) / clockTicks
}

// peakRSSMiB is a process's peak resident set (VmHWM), 0 when unknown.
func peakRSSMiB(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb >> 10
		}
	}
	return 0
}

// pidsNamed lists the processes whose comm is name (a service's own
// processes, e.g. every postgres backend).
func pidsNamed(name string) []int {
	var pids []int
	dirs, _ := filepath.Glob("/proc/[0-9]*/comm")
	for _, d := range dirs {
		b, err := os.ReadFile(d)
		if err != nil || strings.TrimSpace(string(b)) != name {
			continue
		}
		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(d)))
		if err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// serviceCPU sums the CPU seconds of every process named name. Backends
// that exit during a run take their seconds with them; pools keep theirs
// open, so the loss is small.
func serviceCPU(name string) float64 {
	t := 0.0
	for _, p := range pidsNamed(name) {
		t += cpuSeconds(p)
	}
	return t
}

// selfCPU is this process's CPU seconds (the bench's producers, and for
// Asynq and River their in-process workers too).
func selfCPU() float64 { return cpuSeconds(os.Getpid()) }
