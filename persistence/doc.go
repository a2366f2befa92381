// Package persistence defines the store contracts of the hub — jobs, logs,
// the worker and hub registries, session records, worker approvals, assets —
// and the errors callers branch on.
// Each contract has an embedded implementation (subpackages bolt, memory,
// assetdir) and a real one (mysql, redis, minio); storetest holds the one
// conformance suite every implementation must pass.
//
// The job state machine the stores share (PrepareNew, the Apply* functions,
// NewJobID) lives here too, so a store needs nothing but this package to
// agree with the others. The package imports the standard library only:
// the client SDK shares its Job type, and must not pull in store drivers.
package persistence
