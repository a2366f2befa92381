package storetest

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/persistence"
)

// ApprovalOpener returns a fresh, empty, isolated ApprovalStore, and a
// function that opens the same store again — a new client, or the file
// reopened after closing the first handle — as a hub restart would. Both
// are released in t.Cleanup.
type ApprovalOpener func(t *testing.T) (s persistence.ApprovalStore, reopen func() persistence.ApprovalStore)

// RunApprovalStore runs the ApprovalStore conformance suite.
func RunApprovalStore(t *testing.T, open ApprovalOpener) {
	t.Helper()
	type opened struct {
		s      persistence.ApprovalStore
		reopen func() persistence.ApprovalStore
	}
	runSuite(t, func(t *testing.T) opened {
		s, reopen := open(t)
		return opened{s, reopen}
	}, []subtest[opened]{
		{"ApproveRevoke", func(t *testing.T, o opened) { testApproveRevoke(t, o.s) }},
		{"Idempotent", func(t *testing.T, o opened) { testApprovalIdempotent(t, o.s) }},
		{"EmptyID", func(t *testing.T, o opened) { testApprovalEmptyID(t, o.s) }},
		{"Concurrent", func(t *testing.T, o opened) { testApprovalConcurrent(t, o.s) }},
		{"OutlivesReopen", func(t *testing.T, o opened) { testApprovalOutlivesReopen(t, o.s, o.reopen) }},
	})
}

func requireApproved(t *testing.T, s persistence.ApprovalStore, id string, want bool) {
	t.Helper()
	got, err := s.Approved(t.Context(), id)
	require.NoError(t, err, id)
	require.Equal(t, want, got, id)
}

func testApproveRevoke(t *testing.T, s persistence.ApprovalStore) {
	ctx := t.Context()
	requireApproved(t, s, "w1", false)
	require.NoError(t, s.Approve(ctx, "w1"))
	requireApproved(t, s, "w1", true)
	requireApproved(t, s, "w2", false)
	requireApproved(t, s, "w", false) // no prefix matching
	requireApproved(t, s, "w10", false)
	require.NoError(t, s.Revoke(ctx, "w1"))
	requireApproved(t, s, "w1", false)
}

func testApprovalIdempotent(t *testing.T, s persistence.ApprovalStore) {
	ctx := t.Context()
	require.NoError(t, s.Revoke(ctx, "never-approved"), "revoking what is not approved is not an error")
	require.NoError(t, s.Approve(ctx, "w1"))
	require.NoError(t, s.Approve(ctx, "w1"))
	requireApproved(t, s, "w1", true)
	require.NoError(t, s.Revoke(ctx, "w1"))
	require.NoError(t, s.Revoke(ctx, "w1"))
	requireApproved(t, s, "w1", false)
}

func testApprovalEmptyID(t *testing.T, s persistence.ApprovalStore) {
	ctx := t.Context()
	require.ErrorIs(t, s.Approve(ctx, ""), persistence.ErrEmptyWorkerID)
	require.ErrorIs(t, s.Revoke(ctx, ""), persistence.ErrEmptyWorkerID)
	_, err := s.Approved(ctx, "")
	require.ErrorIs(t, err, persistence.ErrEmptyWorkerID)
}

// Approvals of distinct ids do not interfere.
func testApprovalConcurrent(t *testing.T, s persistence.ApprovalStore) {
	ctx := t.Context()
	const n = 32
	_, errs := AtOnce(n, func(i int) (struct{}, error) {
		return struct{}{}, s.Approve(ctx, fmt.Sprintf("w%d", i))
	})
	for _, err := range errs {
		require.NoError(t, err)
	}
	_, errs = AtOnce(n/2, func(i int) (struct{}, error) {
		return struct{}{}, s.Revoke(ctx, fmt.Sprintf("w%d", 2*i))
	})
	for _, err := range errs {
		require.NoError(t, err)
	}
	for i := range n {
		requireApproved(t, s, fmt.Sprintf("w%d", i), i%2 == 1)
	}
}

// An approval is durable: a store opened again (a restarted hub) still
// has it, and a revocation too.
func testApprovalOutlivesReopen(t *testing.T, s persistence.ApprovalStore, reopen func() persistence.ApprovalStore) {
	ctx := t.Context()
	require.NoError(t, s.Approve(ctx, "kept"))
	require.NoError(t, s.Approve(ctx, "revoked"))
	require.NoError(t, s.Revoke(ctx, "revoked"))
	again := reopen()
	requireApproved(t, again, "kept", true)
	requireApproved(t, again, "revoked", false)
	requireApproved(t, again, "never", false)
}
