// Package storetest is the conformance suite of the persistence contracts:
// one Run function per store interface, run unchanged against the embedded
// implementations (bolt, memory, assetdir) and the real ones (MariaDB,
// Redis, MinIO).
//
// Each Run function takes a factory that must return a fresh, empty store
// isolated from every other call (its own file, database, key prefix or
// bucket) and register its own cleanup with t.Cleanup. Subtests run in
// parallel, one store each, and check only what the interface promises.
//
// Contract points the interfaces leave open are fixed here (and so for
// every implementation):
//
//   - JobStore.Create keeps a caller's non-empty ID and CreatedAt, assigns
//     both otherwise, and always stores status queued; a duplicate id is
//     ErrConflict. List's limit outside 0..1000 is an error. Cursors are
//     positions, not offsets. Finish with a real attempt needs the job
//     running at that attempt; AnyAttempt ends any non-final job. Times come
//     back in UTC, to the millisecond at least.
//   - WorkerRegistry.ReleaseOwner clears WorkerInfo.Hub when it still names
//     the releasing hub; the rest of the record stays until its TTL. A
//     release by another hub, or of an unknown worker, changes nothing and
//     is not an error. ClaimID returns the IP bound after the call (the
//     caller's own IP when it won or already held the id).
//   - HubRegistry does not store Alive or Local: List computes Alive from
//     the TTL and returns Local=false for the caller to set.
//   - SessionStore.Put with an empty id or a TTL that is not positive is an
//     error and stores nothing; every Put resets the TTL. Labels come back
//     as stored (nil and empty alike), times in UTC to the millisecond.
//   - ApprovalStore: approving twice and revoking what is not approved are
//     not errors; an empty worker id is ErrEmptyWorkerID; an approval
//     never expires and survives the store being opened again.
//   - AssetStore names and job ids are single path elements: empty, ".",
//     "..", names starting with "." and names with "/" or "\" are errors.
//     An empty content type reads back as application/octet-stream. A
//     reader shorter or longer than a known size is an error and stores
//     nothing.
package storetest
