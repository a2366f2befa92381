// Package persistence defines the store contracts of the hub — jobs, logs,
// the worker and hub registries, session records, assets — and the errors
// callers branch on.
// Each contract has an embedded implementation (subpackages bolt, memory,
// assetdir) and a real one (mysql, redis, minio); storetest holds the one
// conformance suite every implementation must pass.
package persistence
