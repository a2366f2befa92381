package logpipe

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/persistence"
)

func TestCoalesceMergesContiguousBatchesOfAJob(t *testing.T) {
	req := func(job string, from int64, n int, done bool) *flushReq {
		lines := make([]string, n)
		return &flushReq{hasBatch: true, batch: persistence.LogBatch{JobID: job, From: from, Lines: lines, Done: done}}
	}
	out := coalesce([]*flushReq{
		req("a", 0, 50, false), req("b", 0, 3, false), req("a", 50, 0, true), // full batch + done sentinel
		{notify: nil},                               // a notification only
		req("b", 10, 2, false),                      // not contiguous with b's first batch: kept apart
		req("c", 0, 1, true), req("c", 1, 1, false), // after done: never merged
	})
	require.Len(t, out, 5)
	require.Equal(t, "a", out[0].JobID)
	require.Len(t, out[0].Lines, 50)
	require.True(t, out[0].Done)
	require.Equal(t, int64(10), out[2].From)
	require.True(t, out[3].Done)
	require.Equal(t, int64(1), out[4].From)
}
