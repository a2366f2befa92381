package bolt

import (
	"context"
	"fmt"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/paprika-hub/paprika/persistence"
)

var _ persistence.ApprovalStore = (*ApprovalStore)(nil)

// bucketApprovals maps an approved worker id to when it was approved
// (RFC 3339, for whoever inspects the file).
var bucketApprovals = []byte("approvals")

// ApprovalStore is the embedded persistence.ApprovalStore: the approved
// worker ids in a bbolt file of their own (by default ./data/approvals.db),
// so approvals outlive a hub restart whichever job store the hub uses. It
// is safe for concurrent use.
type ApprovalStore struct {
	db   *bbolt.DB
	path string
}

// OpenApprovals opens (creating it and its directory if needed) the
// approval file at path.
func OpenApprovals(path string, opts ...Option) (*ApprovalStore, error) {
	db, _, err := openDB(path, "approval store", opts, bucketApprovals)
	if err != nil {
		return nil, err
	}
	return &ApprovalStore{db: db, path: path}, nil
}

// Approve records workerID as approved.
func (s *ApprovalStore) Approve(ctx context.Context, workerID string) error {
	if err := checkApproval(ctx, "approve worker", workerID); err != nil {
		return err
	}
	at := []byte(time.Now().UTC().Format(time.RFC3339))
	if err := s.db.Update(func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketApprovals).Put([]byte(workerID), at)
	}); err != nil {
		return fmt.Errorf("approve worker %s: %w", workerID, err)
	}
	return nil
}

// Revoke withdraws workerID's approval.
func (s *ApprovalStore) Revoke(ctx context.Context, workerID string) error {
	if err := checkApproval(ctx, "revoke worker", workerID); err != nil {
		return err
	}
	if err := s.db.Update(func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketApprovals).Delete([]byte(workerID))
	}); err != nil {
		return fmt.Errorf("revoke worker %s: %w", workerID, err)
	}
	return nil
}

// Approved reports whether workerID is approved.
func (s *ApprovalStore) Approved(ctx context.Context, workerID string) (bool, error) {
	if err := checkApproval(ctx, "read approval of worker", workerID); err != nil {
		return false, err
	}
	var ok bool
	if err := s.db.View(func(tx *bbolt.Tx) error {
		ok = tx.Bucket(bucketApprovals).Get([]byte(workerID)) != nil
		return nil
	}); err != nil {
		return false, fmt.Errorf("read approval of worker %s: %w", workerID, err)
	}
	return ok, nil
}

// Close closes the file; safe twice.
func (s *ApprovalStore) Close() error {
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("close approval store %s: %w", s.path, err)
	}
	return nil
}

func checkApproval(ctx context.Context, op, workerID string) error {
	if workerID == "" {
		return fmt.Errorf("%s: %w", op, persistence.ErrEmptyWorkerID)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s %s: %w", op, workerID, err)
	}
	return nil
}
