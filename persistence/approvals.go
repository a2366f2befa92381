package persistence

import (
	"context"
	"errors"
)

// ApprovalStore records which worker ids an operator approved
// (auth.worker_approval). A worker's registry record expires while it is
// away; an approval never does — only Revoke ends it — so a worker once
// approved stays approved across reconnects, hub restarts and registry
// expiry, and a new id is never mistaken for an approved one because its
// record happened to lapse.
type ApprovalStore interface {
	// Approve records workerID as approved; approving it again is not an
	// error.
	Approve(ctx context.Context, workerID string) error
	// Revoke withdraws an approval; revoking an id that is not approved is
	// not an error.
	Revoke(ctx context.Context, workerID string) error
	// Approved reports whether workerID is approved.
	Approved(ctx context.Context, workerID string) (bool, error)
}

// ErrEmptyWorkerID is the error every ApprovalStore returns for an empty
// worker id, which no worker can link under.
var ErrEmptyWorkerID = errors.New("empty worker id")
