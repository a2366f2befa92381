// Package grains holds a job's life in the cluster: the job, worker,
// scheduler and session grains (virtual, addressed by identity on any
// hub), the placement rule they share (pick_worker), the recovery timers
// (reconciler, hub beat), the grain-call helpers (calls.go), and Front,
// what the HTTP API asks of them. Each actor owns its state; nothing
// outside touches it. DESIGN.md ("Actors") is the map; the README walks one
// job through the files.
package grains
