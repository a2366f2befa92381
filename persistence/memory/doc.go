// Package memory holds in-process implementations of the persistence
// contracts that need no disk: a JobStore for tests, and the LogStore,
// WorkerRegistry, HubRegistry and SessionStore of the embedded single-hub
// mode. Each is a plain mutex-guarded store (not an actor) and starts no
// goroutines.
//
// Its JobStore runs the job state machine of package persistence
// (persistence.Apply*, persistence.NewJobID), the one the bbolt and MySQL
// stores run too, so no two stores can disagree on a transition.
package memory
