//go:build unix

package loadgen

import "syscall"

// childProcAttr puts the hub in its own process group: a Ctrl-C meant for
// the bench reaches the hub only through Stop, after the bench has read its
// last figures.
func childProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
