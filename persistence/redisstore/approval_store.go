package redisstore

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/paprika-hub/paprika/persistence"
)

var _ persistence.ApprovalStore = (*ApprovalStore)(nil)

// ApprovalStore is the Redis persistence.ApprovalStore: one key per
// approved worker, without expiry (layout in the package doc), so every hub
// of a fleet sees the same approvals and none lapses with the worker's
// registry record. Every operation is one command. It is safe for
// concurrent use.
type ApprovalStore struct {
	client *redis.Client
	keys   keys
}

// NewApprovalStore returns an ApprovalStore on client. Options: WithPrefix.
func NewApprovalStore(client *redis.Client, opts ...Option) *ApprovalStore {
	cfg := newConfig(opts)
	return &ApprovalStore{client: client, keys: keys{cfg.prefix}}
}

// Approve records workerID as approved (SET, no expiry).
func (s *ApprovalStore) Approve(ctx context.Context, workerID string) error {
	op := "approve worker " + workerID
	if workerID == "" {
		return fmt.Errorf("approve worker: %w", persistence.ErrEmptyWorkerID)
	}
	at := time.Now().UTC().Format(time.RFC3339)
	return wrapErr(ctx, op, s.client.Set(ctx, s.keys.approval(workerID), at, 0).Err())
}

// Revoke withdraws workerID's approval (DEL; an absent key is no error).
func (s *ApprovalStore) Revoke(ctx context.Context, workerID string) error {
	if workerID == "" {
		return fmt.Errorf("revoke worker: %w", persistence.ErrEmptyWorkerID)
	}
	return wrapErr(ctx, "revoke worker "+workerID, s.client.Del(ctx, s.keys.approval(workerID)).Err())
}

// Approved reports whether workerID is approved (EXISTS).
func (s *ApprovalStore) Approved(ctx context.Context, workerID string) (bool, error) {
	if workerID == "" {
		return false, fmt.Errorf("read approval of worker: %w", persistence.ErrEmptyWorkerID)
	}
	n, err := s.client.Exists(ctx, s.keys.approval(workerID)).Result()
	if err != nil {
		return false, wrapErr(ctx, "read approval of worker "+workerID, err)
	}
	return n == 1, nil
}
