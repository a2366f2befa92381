package mysql_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/persistence"
)

// TestRowsReadTogetherKeepTheirOwnFields: the rows of one query are read
// through one set of scan destinations; a row read after a fuller one
// carries none of its fields (labels, key, worker, times, result,
// assets), and each listed job is what a read of it alone gives.
func TestRowsReadTogetherKeepTheirOwnFields(t *testing.T) {
	s, _ := openStore(t)
	ctx := t.Context()
	plain, _, err := s.Create(ctx, persistence.Job{Mode: "noop", MaxAttempts: 1, TimeoutS: 60})
	require.NoError(t, err)
	time.Sleep(2 * time.Millisecond) // newest first: the fuller job is read before the plain one
	full, _, err := s.Create(ctx, persistence.Job{Mode: "fetch", MaxAttempts: 3, TimeoutS: 30, Priority: 7,
		Params: json.RawMessage(`{"url":"https://example.com/"}`), Labels: map[string]string{"team": "a"},
		IdempotencyKey: "pk-row-test"})
	require.NoError(t, err)
	_, err = s.Claim(ctx, full.ID, "w1", time.Now())
	require.NoError(t, err)
	_, err = s.Finish(ctx, full.ID, 1, persistence.Finish{Status: persistence.StatusSucceeded,
		Result: json.RawMessage(`{"ok":true}`), Assets: []string{"page.html"}, Lane: "lane-0"})
	require.NoError(t, err)

	page, _, err := s.List(ctx, persistence.ListQuery{Limit: 10})
	require.NoError(t, err)
	require.Len(t, page, 2)
	require.Equal(t, full.ID, page[0].ID, "newest first")
	for _, listed := range page {
		alone, err := s.Get(ctx, listed.ID)
		require.NoError(t, err)
		require.Equal(t, alone, listed)
	}
	got := page[1]
	require.Equal(t, plain.ID, got.ID)
	require.Empty(t, got.Labels)
	require.Empty(t, got.IdempotencyKey)
	require.Empty(t, got.WorkerID)
	require.True(t, got.StartedAt.IsZero())
	require.True(t, got.FinishedAt.IsZero())
	require.Nil(t, got.Result)
	require.Nil(t, got.Assets)
	require.Nil(t, got.Params)
	require.Equal(t, persistence.StatusQueued, got.Status)
	require.Equal(t, map[string]string{"team": "a"}, page[0].Labels)
	require.Equal(t, []string{"page.html"}, page[0].Assets)
}
