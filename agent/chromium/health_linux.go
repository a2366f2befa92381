//go:build linux

package chromium

import (
	"syscall"
)

// treeRSSKB is, for each root pid (0 = none), the resident memory in KiB of
// it and all its live descendants, from one pass over /proc (stat's rss field: cheap,
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
	procs := readProcs()
	isRoot := func(q int) bool { _, ok := want[q]; return ok }
	for p, st := range procs {
		if r := rootOf(procs, p, isRoot); r != 0 {
			out[want[r]] += st.rssKB
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
