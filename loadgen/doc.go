// Package loadgen is Paprika's load generator, the engine of `paprika
// bench`. It owns a fleet of simulated workers that speak the worker link
// (messages/link.go) to a hub and stream job_log lines at a set rate, the
// HTTP clients that submit their jobs and follow their logs over SSE, and
// the probes that read the hub's /metrics, /proc/<pid> and Redis INFO. Run
// drives one measured run and returns a Report; SpawnHub starts a hub as a
// child process so its CPU and memory can be read.
//
// What it measures, and how (DESIGN.md, "Targets"):
//
//   - lines/s sent: job_log frames written to the sockets by the simulated
//     workers; lines/s ingested: the delta of the hub's
//     paprika_log_lines_stored_total over the same window (persisted lines);
//   - log-store round trips: the delta of paprika_log_writes_total;
//   - hub CPU per line and RSS: /proc/<pid>/stat (utime+stime) and
//     /proc/<pid>/status (VmRSS) of the hub process;
//   - Redis commands/s and per-command calls: INFO stats / commandstats
//     deltas, when a Redis URL is given;
//   - line-to-subscriber latency: every line carries the time it was handed
//     to the socket ("t=<unix ns> seq=<n>"); SSE followers subtract it from
//     the time they read it;
//   - backpressure: socket writes that found the kernel buffer full (EAGAIN)
//     and how long they waited for room, plus how often a job found its
//     worker's send queue full.
//
// Every goroutine it starts belongs to Run (or to a SpawnedHub) and has
// ended when Run returns (or Stop returns).
package loadgen
