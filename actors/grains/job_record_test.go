package grains

import (
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/persistence"
)

func newJobRecordJob() persistence.Job {
	at := time.Date(2026, 12, 1, 10, 0, 0, 123456789, time.UTC)
	return persistence.Job{ID: "j1", Mode: "noop", Params: []byte(`{"lines":1}`), Status: persistence.StatusScheduled,
		MaxAttempts: 3, Priority: 7, Tenant: "acme", TimeoutS: 60, RunAt: at.Add(time.Minute),
		RetryBackoff: &persistence.RetryBackoff{BaseS: 2, MaxS: 90}, CreatedAt: at,
		Labels: map[string]string{"team": "a"}, IdempotencyKey: "k1"}
}

// TestJobRecordRoundTrip: a new job's record carries every field a new job
// has, so the grain that takes it holds what a read would have given.
func TestJobRecordRoundTrip(t *testing.T) {
	j := newJobRecordJob()
	got, ok := jobOfRecord(j.ID, recordOf(j))
	require.True(t, ok)
	require.Equal(t, j, got)

	j.Status, j.RunAt, j.RetryBackoff, j.Labels, j.Params = persistence.StatusQueued, time.Time{}, nil, nil, nil
	got, ok = jobOfRecord(j.ID, recordOf(j))
	require.True(t, ok)
	require.Equal(t, j, got)

	// A persistence.Job field this file does not know of would be lost
	// on the way: recordOf and jobOfRecord must learn it first.
	require.Equal(t, 24, reflect.TypeOf(persistence.Job{}).NumField(), "persistence.Job changed: update job_record.go")
}

// TestJobRecordOnlyFresh: only a new job's record is carried, and only to
// its own grain; anything else goes without and the grain reads the store.
func TestJobRecordOnlyFresh(t *testing.T) {
	for name, change := range map[string]func(*persistence.Job){
		"attempted": func(j *persistence.Job) { j.Attempts = 1 },
		"running":   func(j *persistence.Job) { j.Status, j.WorkerID = persistence.StatusRunning, "w1" },
		"final":     func(j *persistence.Job) { j.Status, j.FinishedAt = persistence.StatusSucceeded, time.Now() },
		"laned":     func(j *persistence.Job) { j.Lane = "l" },
		"result":    func(j *persistence.Job) { j.Result = []byte(`{}`) },
		"logged":    func(j *persistence.Job) { j.AttemptsLog = []persistence.Attempt{{Attempt: 1}} },
	} {
		j := newJobRecordJob()
		change(&j)
		require.Nil(t, recordOf(j), name)
	}
	j := newJobRecordJob()
	_, ok := jobOfRecord("other", recordOf(j))
	require.False(t, ok, "another job's record")
	_, ok = jobOfRecord(j.ID, nil)
	require.False(t, ok, "no record")
	r := recordOf(j)
	r.Attempts = 2
	_, ok = jobOfRecord(j.ID, r)
	require.False(t, ok, "a record that is no new job's")
	r = recordOf(j)
	r.CreatedAtUnixNs = 0
	_, ok = jobOfRecord(j.ID, r)
	require.False(t, ok, "a record with no creation time")
}
