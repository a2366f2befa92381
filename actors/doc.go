// Package actors holds the hub's actors: the worker, job and scheduler
// grains (virtual, addressed by identity anywhere in the cluster), the
// WorkerConn that owns one worker socket, the LogStream per job log with its
// hub-wide flusher, and the timers of the recovery layers. Each actor owns its
// state; nothing outside touches it. DESIGN.md ("Actors") is the map.
package actors
