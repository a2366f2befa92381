package mysql

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/persistence"
)

// TestEncodeAttemptsLogAsEncodingJSON: the attempts log is written byte
// for byte as encoding/json writes it — plain values, escapes, HTML
// characters, control characters, invalid UTF-8, zero and sub-second
// times, a time zone — and refused where it is refused.
func TestEncodeAttemptsLogAsEncodingJSON(t *testing.T) {
	at := time.Date(2026, 12, 7, 10, 11, 12, 123456000, time.UTC)
	logs := [][]persistence.Attempt{
		{{Attempt: 1, WorkerID: "w50150", Lane: "0", Hub: "hub-a", QueuedAt: at, StartedAt: at.Add(time.Millisecond),
			FinishedAt: at.Add(time.Second), Status: persistence.StatusSucceeded}},
		{
			{Attempt: 1, WorkerID: `w"1\`, Lane: "<lane>&", Hub: "", Status: persistence.StatusFailed, Reason: "crashed",
				Error: "line one\nline two\ttab \x01 \u2028 é ☃"},
			{Attempt: 2, WorkerID: "w\xff\xfe", Lane: "1", QueuedAt: at.In(time.FixedZone("x", 9*3600)), StartedAt: at.Truncate(time.Second),
				Status: persistence.StatusCanceled, Error: string(make([]byte, 40))},
		},
	}
	for _, log := range logs {
		got, err := encodeAttemptsLog(log)
		require.NoError(t, err)
		want, err := json.Marshal(log)
		require.NoError(t, err)
		require.Equal(t, string(want), got)
		var back []persistence.Attempt
		require.NoError(t, json.Unmarshal([]byte(got.(string)), &back))
	}
	got, err := encodeAttemptsLog(nil)
	require.NoError(t, err)
	require.Nil(t, got, "an empty log is NULL")

	_, err = encodeAttemptsLog([]persistence.Attempt{{Attempt: 1, FinishedAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}})
	require.Error(t, err)
	_, want := json.Marshal([]persistence.Attempt{{Attempt: 1, FinishedAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}})
	require.Error(t, want)
}

func BenchmarkEncodeAttemptsLog(b *testing.B) {
	at := time.Date(2026, 12, 7, 10, 11, 12, 123456000, time.UTC)
	log := []persistence.Attempt{{Attempt: 1, WorkerID: "w50150", Lane: "0", Hub: "hub-a", QueuedAt: at, StartedAt: at,
		FinishedAt: at, Status: persistence.StatusSucceeded}}
	b.Run("hand", func(b *testing.B) {
		for b.Loop() {
			_, _ = encodeAttemptsLog(log)
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		for b.Loop() {
			_, _ = encodeJSON(log, false)
		}
	})
}
