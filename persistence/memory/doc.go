// Package memory holds in-process implementations of the persistence
// contracts that need no disk: a JobStore for tests, and the LogStore,
// WorkerRegistry, HubRegistry and SessionStore of the embedded single-hub
// mode. Each is a plain mutex-guarded store (not an actor) and starts no
// goroutines.
//
// It also owns the pieces the embedded stores share: the job id generator
// (NewJobID) and the job state machine (the Apply* functions), so the bbolt
// JobStore and this one cannot disagree on a transition.
package memory
