//go:build !linux

package chromium

// treeRSSKB measures nothing off Linux (no /proc): every lane reports 0.
func treeRSSKB(roots []int) []int64 { return make([]int64, len(roots)) }

// shmFreeMB is unknown off Linux.
func shmFreeMB() (int64, bool) { return 0, false }
