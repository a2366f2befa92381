package bolt_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/persistence"
	"github.com/paprika-hub/paprika/persistence/bolt"
	"github.com/paprika-hub/paprika/persistence/storetest"
)

func TestApprovalStore(t *testing.T) {
	t.Parallel()
	storetest.RunApprovalStore(t, func(t *testing.T) (persistence.ApprovalStore, func() persistence.ApprovalStore) {
		path := filepath.Join(t.TempDir(), "data", "approvals.db")
		s, err := bolt.OpenApprovals(path)
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, s.Close()) })
		reopen := func() persistence.ApprovalStore {
			require.NoError(t, s.Close()) // the file lock: one handle at a time, as across a restart
			again, err := bolt.OpenApprovals(path)
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, again.Close()) })
			return again
		}
		return s, reopen
	})
}
