package persistence

import (
	"net/url"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNewJobID(t *testing.T) {
	t.Parallel()
	const n = 10_000
	ids := make([]string, n)
	seen := make(map[string]bool, n)
	for i := range ids {
		id := NewJobID()
		require.Len(t, id, JobIDLen)
		require.Equal(t, url.PathEscape(id), id)
		require.False(t, seen[id], "duplicate id %s", id)
		seen[id] = true
		ids[i] = id
	}
	require.True(t, sort.StringsAreSorted(ids), "ids from one process sort in creation order")
}

func TestEncodeCrockford(t *testing.T) {
	t.Parallel()
	require.Equal(t, "01ARZ3NDEK", encodeCrockford([16]byte{0x01, 0x56, 0x3E, 0x3A, 0xB5, 0xD3})[:10],
		"the ULID spec's example time 1469922850259 (01ARZ3NDEKTSV4RRFFQ69G5FAV)")
	var maxTime [16]byte
	for i := range 6 {
		maxTime[i] = 0xFF
	}
	id := encodeCrockford(maxTime)
	require.Equal(t, "7ZZZZZZZZZ0000000000000000", id, "2^48-1 ms is the last ULID time")
	require.False(t, strings.ContainsAny(NewJobID(), "ILOU"))
}

func TestIncrementWraps(t *testing.T) {
	t.Parallel()
	b := [10]byte{9: 0xFE}
	require.True(t, increment(&b))
	require.Equal(t, byte(0xFF), b[9])
	b = [10]byte{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}
	require.False(t, increment(&b))
	require.Equal(t, [10]byte{}, b)
}
