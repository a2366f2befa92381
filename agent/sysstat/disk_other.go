//go:build !linux

package sysstat

// diskPct is not measured off Linux.
func diskPct(string) (float64, error) { return 0, ErrUnsupported }
