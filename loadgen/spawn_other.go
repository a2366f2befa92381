//go:build !unix

package loadgen

import "syscall"

// childProcAttr leaves the child in the bench's process group.
func childProcAttr() *syscall.SysProcAttr { return nil }
