package bolt

import (
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	bbolt "go.etcd.io/bbolt"

	"github.com/paprika-hub/paprika/persistence"
)

// fullJob has every stored field set, times at nanosecond precision and
// one before 1970.
func fullJob() persistence.Job {
	at := time.Date(2026, 12, 1, 18, 0, 0, 123456789, time.UTC)
	return persistence.Job{
		ID: "01JABCDEFGHJKMNPQRSTVWXYZ0", Mode: "fetch", Params: json.RawMessage(`{"url":"https://x"}`),
		Status: persistence.StatusFailed, Reason: persistence.ReasonJobError, Error: "boom ünïcode",
		WorkerID: "w1", Lane: "lane-2", Attempts: 2, MaxAttempts: 3, Priority: 9, Tenant: "acme",
		TimeoutS: 180, RunAt: at.Add(time.Minute), RetryBackoff: &persistence.RetryBackoff{BaseS: 0.25, MaxS: 60},
		AttemptsLog: []persistence.Attempt{
			{Attempt: 1, WorkerID: "w0", Lane: "lane-0", Hub: "", QueuedAt: time.Date(1969, 7, 20, 20, 17, 0, 1, time.UTC),
				StartedAt: at, FinishedAt: at.Add(time.Second), Status: persistence.StatusFailed, Reason: persistence.ReasonWorkerLost},
			{Attempt: 2, WorkerID: "w1", Lane: "lane-2", Hub: "hub-1", StartedAt: at, FinishedAt: at.Add(2 * time.Second),
				Status: persistence.StatusFailed, Reason: persistence.ReasonJobError, Error: "boom"},
		},
		CreatedAt: at, StartedAt: at.Add(time.Second), FinishedAt: at.Add(2 * time.Second),
		Result: json.RawMessage(`{"status":500}`), Assets: []string{"a.png", "b.html"},
		Labels: map[string]string{"team": "qa", "": "empty key"}, IdempotencyKey: "key-1",
	}
}

// TestCodecRoundTrip: a record decodes to the job it was made of, and to
// what the JSON record of the same job decodes to, so a store that has
// both kinds serves them alike.
func TestCodecRoundTrip(t *testing.T) {
	for name, j := range map[string]persistence.Job{
		"full":    fullJob(),
		"minimal": {ID: "x", Mode: "noop", Status: persistence.StatusQueued, CreatedAt: time.Unix(1, 0).UTC()},
		"zero":    {},
		"nullParams": {ID: "n", Params: json.RawMessage(`null`), Result: json.RawMessage(`null`),
			Labels: map[string]string{}, Assets: []string{}},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := decodeJob(encodeJob(&j))
			require.NoError(t, err)
			data, err := json.Marshal(j)
			require.NoError(t, err)
			legacy, err := decodeJob(data)
			require.NoError(t, err)
			require.Equal(t, legacy, got)
			if name == "full" || name == "minimal" {
				require.Equal(t, j, got)
			}
		})
	}
}

// TestCodecOwnsMemory: the decoded job shares nothing with the record
// (bbolt's memory is valid only inside its transaction).
func TestCodecOwnsMemory(t *testing.T) {
	j := fullJob()
	rec := encodeJob(&j)
	got, err := decodeJob(rec)
	require.NoError(t, err)
	for i := range rec {
		rec[i] = 0xff
	}
	require.Equal(t, fullJob(), got)
	got.Params = append(got.Params, '!')
	require.Equal(t, fullJob().Result, got.Result, "params and result share a buffer but not its tail")
}

// TestCodecTruncated: every prefix of a record is refused with an error,
// never a panic or a half job.
func TestCodecTruncated(t *testing.T) {
	j := fullJob()
	rec := encodeJob(&j)
	for n := 1; n < len(rec); n++ {
		_, err := decodeJob(rec[:n])
		require.Error(t, err, "prefix of %d bytes", n)
	}
}

// TestLegacyJSONRecords: a file written before the binary record (jobs
// stored as JSON) is read as it was, and its jobs still move; what they
// are then written as is the binary record; its by_created index is
// dropped and listing still finds them.
func TestLegacyJSONRecords(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "jobs.db")
	s, err := Open(path)
	require.NoError(t, err)
	j, _, err := s.Create(ctx, persistence.Job{Mode: "noop", Params: json.RawMessage(`{"lines":2}`), MaxAttempts: 1, TimeoutS: 60})
	require.NoError(t, err)
	require.NoError(t, s.Close())

	// Rewrite the record as the JSON of before, without the priority
	// older files lack.
	db, err := bbolt.Open(path, 0o600, nil)
	require.NoError(t, err)
	require.NoError(t, db.Update(func(tx *bbolt.Tx) error {
		var m map[string]any
		data, _ := json.Marshal(j)
		_ = json.Unmarshal(data, &m)
		delete(m, "priority")
		data, _ = json.Marshal(m)
		if err := tx.Bucket(bucketJobs).Put([]byte(j.ID), data); err != nil {
			return err
		}
		// Older files also had a listing index of their own.
		old, err := tx.CreateBucket(bucketByCreatedOld)
		if err != nil {
			return err
		}
		return old.Put(appendOrderKey(nil, j.CreatedAt, j.ID), []byte{})
	}))
	require.NoError(t, db.Close())

	s, err = Open(path)
	require.NoError(t, err)
	defer s.Close()
	got, err := s.Get(ctx, j.ID)
	require.NoError(t, err)
	j.Priority = persistence.DefaultPriority
	require.Equal(t, j, got)
	claimed, err := s.Claim(ctx, j.ID, "w1", time.Now())
	require.NoError(t, err)
	require.Equal(t, persistence.DefaultPriority, claimed.Priority)
	require.NoError(t, s.db.View(func(tx *bbolt.Tx) error {
		require.Equal(t, recordV1, tx.Bucket(bucketJobs).Get([]byte(j.ID))[0])
		return nil
	}))
	running, _, err := s.List(ctx, persistence.ListQuery{Status: persistence.StatusRunning})
	require.NoError(t, err)
	require.Len(t, running, 1)
	all, _, err := s.List(ctx, persistence.ListQuery{})
	require.NoError(t, err)
	require.Equal(t, running, all)
	require.NoError(t, s.db.View(func(tx *bbolt.Tx) error {
		require.Nil(t, tx.Bucket(bucketByCreatedOld), "the old listing index is dropped at open")
		return nil
	}))
}

func BenchmarkCodec(b *testing.B) {
	j := fullJob()
	j.AttemptsLog = j.AttemptsLog[:1]
	b.Run("encode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = encodeJob(&j)
		}
	})
	rec := encodeJob(&j)
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = decodeJob(rec)
		}
	})
	data, _ := json.Marshal(j)
	b.Run("decodeJSON", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = decodeJob(data)
		}
	})
	b.Run("encodeJSON", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = json.Marshal(j)
		}
	})
}
