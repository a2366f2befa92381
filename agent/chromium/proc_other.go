//go:build !linux

package chromium

import "os/exec"

// prepareCmd leaves the command as it is: process groups and the parent
// death signal are set up on Linux only.
func prepareCmd(*exec.Cmd) {}

// killLeftovers does nothing outside Linux; chromedp kills the main process.
func killLeftovers(int, string) int { return 0 }

// processesUsing is not implemented outside Linux.
func processesUsing(string) []int { return nil }

// processTree is not implemented outside Linux.
func processTree(pid int) []int { return []int{pid} }

// memoryKB is not implemented outside Linux.
func memoryKB([]int) (rss, pss int64) { return 0, 0 }
