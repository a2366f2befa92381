package memory

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/persistence"
)

// TestLogStoreDoneAlone: a log that is its done marker alone reads as
// done and empty; a late line, a subscriber and the retention treat it as
// they treat any log; a marker written again lives from its last write.
func TestLogStoreDoneAlone(t *testing.T) {
	ctx := t.Context()
	now := time.Unix(1_000_000, 0)
	s := NewLogStore(WithRetention(time.Minute))
	s.now = func() time.Time { return now }
	done := func(id string) {
		require.NoError(t, s.Write(ctx, []persistence.LogBatch{{JobID: id, Done: true}}))
	}
	read := func(id string) ([]string, bool) {
		lines, d, err := s.Read(ctx, id, 0, 0)
		require.NoError(t, err)
		return lines, d
	}

	done("a")
	lines, d := read("a")
	require.Empty(t, lines)
	require.True(t, d, "done, no lines")
	n, err := s.Len(ctx, "a")
	require.NoError(t, err)
	require.Zero(t, n)
	require.Contains(t, s.ended, "a", "kept as a marker")
	_, d = read("unknown")
	require.False(t, d)

	// A late line is appended at index 0 and the log stays done.
	require.NoError(t, s.Write(ctx, []persistence.LogBatch{{JobID: "a", From: 0, Lines: []string{"late"}}}))
	lines, d = read("a")
	require.Equal(t, []string{"late"}, lines)
	require.True(t, d)
	require.NotContains(t, s.ended, "a")

	// A subscriber of a marker's job gets a full log, done.
	done("b")
	sub, err := s.Subscribe(ctx, "b")
	require.NoError(t, err)
	_, d = read("b")
	require.True(t, d)
	require.NoError(t, s.Write(ctx, []persistence.LogBatch{{JobID: "b", Done: true}}))
	ev := <-sub.C()
	require.True(t, ev.Done, "a subscribed job's done is published")
	require.NoError(t, sub.Close())

	// The retention counts from a marker's last write.
	done("c")
	now = now.Add(40 * time.Second)
	done("c") // written again (a retried flush)
	done("d")
	now = now.Add(30 * time.Second) // 70 s after c's first write, 30 s after its last
	done("e")                       // drives the pruning
	_, d = read("c")
	require.True(t, d, "kept: its last write is within the retention")
	now = now.Add(31 * time.Second)
	done("e")
	_, d = read("c")
	require.False(t, d, "dropped a retention after its last write")
	_, d = read("d")
	require.False(t, d)
	_, d = read("e")
	require.True(t, d)
	require.Equal(t, 1, len(s.ended))
}

// TestLogStoreDoneAloneCompacts: the marker's queue does not keep its
// dead front.
func TestLogStoreDoneAloneCompacts(t *testing.T) {
	ctx := t.Context()
	now := time.Unix(1_000_000, 0)
	s := NewLogStore(WithRetention(time.Second))
	s.now = func() time.Time { return now }
	for i := range 10_000 {
		now = now.Add(time.Millisecond)
		require.NoError(t, s.Write(ctx, []persistence.LogBatch{{JobID: fmt.Sprint(i), Done: true}}))
	}
	// A second's worth is kept: the writes of the last 1,000 ms and the
	// one exactly a retention old.
	require.Equal(t, 1001, len(s.ended))
	require.LessOrEqual(t, len(s.endedOrder)-s.endedHead, 1001)
	require.LessOrEqual(t, len(s.endedOrder), 4096, "the dead front is dropped")
}

// TestLogStoreDoneAloneIsSmall: a marker costs well under the log it
// replaces (measured against the same jobs' logs made full by a
// subscriber that came and went).
func TestLogStoreDoneAloneIsSmall(t *testing.T) {
	ctx := t.Context()
	const n = 50_000
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("01JOB%021d", i)
	}
	heap := func() uint64 {
		var m runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	s := NewLogStore(WithRetention(time.Hour))
	h0 := heap()
	for _, id := range ids {
		require.NoError(t, s.Write(ctx, []persistence.LogBatch{{JobID: id, Done: true}}))
	}
	marker := heap() - h0
	full := NewLogStore(WithRetention(time.Hour))
	h1 := heap()
	for _, id := range ids {
		sub, err := full.Subscribe(ctx, id)
		require.NoError(t, err)
		require.NoError(t, sub.Close())
		require.NoError(t, full.Write(ctx, []persistence.LogBatch{{JobID: id, Done: true}}))
	}
	whole := heap() - h1
	t.Logf("bytes per done-only log: %d as a marker, %d as a full log", marker/n, whole/n)
	require.Less(t, float64(marker), 0.6*float64(whole))
	runtime.KeepAlive(s)
	runtime.KeepAlive(full)
}
