// Package sysstat reads the host figures a worker reports in its heartbeat:
// CPU busy percentage from /proc/stat deltas, memory in use from
// /proc/meminfo (MemTotal − MemAvailable), and disk use of the working
// directory's file system from statfs(2). It needs no module outside the
// standard library. Off Linux, Sample returns zeros and ErrUnsupported.
package sysstat
