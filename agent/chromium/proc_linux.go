//go:build linux

package chromium

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// prepareCmd makes the browser the leader of a process group of its own, so
// that its helpers (zygote, renderers, utilities) can be killed together,
// and makes the kernel kill it if the thread that started it dies (chromedp
// starts it from a goroutine locked to its thread for the browser's life).
func prepareCmd(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = new(syscall.SysProcAttr)
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}

// killLeftovers kills what may remain of a browser after its main process
// ended: its process group, and every process whose command line names the
// lane's profile directory (Chromium passes --user-data-dir to each helper;
// a helper that left the group is still found). It looks again until a few
// passes in a row find nothing, since a helper can fork while the browser
// dies. It returns how many processes it killed.
func killLeftovers(pgid int, dir string) int {
	const (
		quietPasses = 3
		pause       = 10 * time.Millisecond
		limit       = 2 * time.Second
	)
	killed := 0
	if pgid > 0 && syscall.Kill(-pgid, syscall.SIGKILL) == nil {
		killed++
	}
	deadline := time.Now().Add(limit)
	for quiet := 0; quiet < quietPasses && time.Now().Before(deadline); time.Sleep(pause) {
		n := 0
		for _, pid := range processesUsing(dir) {
			if syscall.Kill(pid, syscall.SIGKILL) == nil {
				n++
			}
		}
		killed += n
		if n == 0 {
			quiet++
		} else {
			quiet = 0
		}
	}
	return killed
}

// processesUsing lists the live processes whose command line has the
// argument --user-data-dir=dir (zombies excluded).
func processesUsing(dir string) []int {
	want := []byte("--user-data-dir=" + dir)
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || len(cmdline) == 0 {
			continue // gone, or a zombie (empty command line)
		}
		for arg := range bytes.SplitSeq(cmdline, []byte{0}) {
			if bytes.Equal(arg, want) {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}

// procStat is what /proc/<pid>/stat says of a live process: its parent
// and its resident set in KiB.
type procStat struct {
	ppid  int
	rssKB int64
}

// readProcs reads every live (not zombie) process's stat in one pass over
// /proc.
func readProcs() map[int]procStat {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	page := int64(os.Getpagesize() / 1024)
	out := make(map[int]procStat, len(entries))
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// The command name (field 2) may hold spaces and parentheses; the
		// fields after its closing parenthesis are state, ppid, …, and
		// field 24 of stat (index 21 after the name) is rss in pages.
		s := string(stat)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 22 || f[0] == "Z" {
			continue
		}
		pp, err1 := strconv.Atoi(f[1])
		pages, err2 := strconv.ParseInt(f[21], 10, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		out[p] = procStat{ppid: pp, rssKB: pages * page}
	}
	return out
}

// rootOf is the first of p and its ancestors (at most 64 hops up) for
// which want says yes, or 0.
func rootOf(procs map[int]procStat, p int, want func(int) bool) int {
	for q, hops := p, 0; q > 0 && hops < 64; q, hops = procs[q].ppid, hops+1 {
		if want(q) {
			return q
		}
	}
	return 0
}

// processTree returns pid and all its live descendants.
func processTree(pid int) []int {
	procs := readProcs()
	var out []int
	for p := range procs {
		if rootOf(procs, p, func(q int) bool { return q == pid }) != 0 {
			out = append(out, p)
		}
	}
	return out
}

// memoryKB sums the resident set size (Rss) and the proportional set size
// (Pss: shared pages divided among their users, so summing it over
// processes does not count a shared page twice) of the processes, in KiB.
func memoryKB(pids []int) (rss, pss int64) {
	for _, p := range pids {
		data, err := os.ReadFile("/proc/" + strconv.Itoa(p) + "/smaps_rollup")
		if err != nil {
			continue
		}
		for line := range strings.SplitSeq(string(data), "\n") {
			f := strings.Fields(line)
			if len(f) < 2 {
				continue
			}
			v, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				continue
			}
			switch f[0] {
			case "Rss:":
				rss += v
			case "Pss:":
				pss += v
			}
		}
	}
	return rss, pss
}
