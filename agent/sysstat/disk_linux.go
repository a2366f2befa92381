//go:build linux

package sysstat

import (
	"fmt"
	"syscall"
)

// diskPct measures the file system holding dir like df(1) does.
func diskPct(dir string) (float64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, fmt.Errorf("statfs %s: %w", dir, err)
	}
	used := st.Blocks - st.Bfree
	denom := used + st.Bavail
	if denom == 0 {
		return 0, nil
	}
	return clampPct(float64(used) / float64(denom) * 100), nil
}
