//go:build linux

package chromium

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// treeRSSKB is, for each root pid (0 = none), the resident memory in KiB of
// it and all its live descendants, from one pass over /proc (statm: cheap,
// unlike smaps_rollup; shared pages count in each process, as "RSS" does).
func treeRSSKB(roots []int) []int64 {
	out := make([]int64, len(roots))
	want := map[int]int{} // root pid → index
	for i, p := range roots {
		if p > 0 {
			want[p] = i
		}
	}
	if len(want) == 0 {
		return out
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return out
	}
	parent := make(map[int]int, len(entries))
	rss := make(map[int]int64, len(entries))
	page := int64(os.Getpagesize() / 1024)
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(stat)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		// state, ppid, …; field 24 of stat (index 21 after the name) is rss
		// in pages.
		if len(f) < 22 || f[0] == "Z" {
			continue
		}
		pp, err1 := strconv.Atoi(f[1])
		pages, err2 := strconv.ParseInt(f[21], 10, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		parent[p], rss[p] = pp, pages*page
	}
	for p, kb := range rss {
		for q, hops := p, 0; q > 0 && hops < 64; q, hops = parent[q], hops+1 {
			if i, ok := want[q]; ok {
				out[i] += kb
				break
			}
		}
	}
	return out
}

// shmFreeMB is /dev/shm's space free to unprivileged users, in MiB.
func shmFreeMB() (int64, bool) {
	var st syscall.Statfs_t
	if err := syscall.Statfs("/dev/shm", &st); err != nil {
		return 0, false
	}
	return int64(st.Bavail) * int64(st.Bsize) / (1 << 20), true
}
