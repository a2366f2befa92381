package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/persistence"
)

// RunSessionStore runs the SessionStore conformance suite. newStore must
// return a fresh, empty, isolated store and release it in t.Cleanup.
func RunSessionStore(t *testing.T, newStore func(t *testing.T) persistence.SessionStore) {
	t.Helper()
	runSuite(t, newStore, []subtest[persistence.SessionStore]{
		{"PutGetDelete", testSessionPutGetDelete},
		{"NotFound", testSessionNotFound},
		{"TTLExpiry", testSessionTTL},
		{"PutRefreshesTTL", testSessionPutRefreshesTTL},
		{"BadInput", testSessionBadInput},
	})
}

func newSession(id string) persistence.SessionRecord {
	created := time.Now().Add(-time.Minute).In(zone)
	return persistence.SessionRecord{
		ID:           id,
		WorkerID:     "w50150",
		Lane:         "chromium://w50150/lane/0",
		IdleTimeoutS: 300,
		Labels:       map[string]string{"team": "qa"},
		State:        "open",
		CreatedAt:    created,
		LastUsed:     created.Add(30 * time.Second),
	}
}

// requireSession checks got equals want, tolerating the time zone and
// sub-millisecond precision, and nil versus empty labels.
func requireSession(t *testing.T, want, got persistence.SessionRecord) {
	t.Helper()
	requireTime(t, want.CreatedAt, got.CreatedAt, "created_at")
	requireTime(t, want.LastUsed, got.LastUsed, "last_used")
	if len(want.Labels) == 0 {
		require.Empty(t, got.Labels, "labels")
		want.Labels, got.Labels = nil, nil
	}
	want.CreatedAt, got.CreatedAt, want.LastUsed, got.LastUsed = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	require.Equal(t, want, got)
}

func testSessionPutGetDelete(t *testing.T, s persistence.SessionStore) {
	ctx := t.Context()
	a, b := newSession("s-a"), newSession("s-b")
	b.WorkerID, b.Labels, b.Lane = "w2", nil, ""
	require.NoError(t, s.Put(ctx, a, longTTL))
	require.NoError(t, s.Put(ctx, b, longTTL))

	got, err := s.Get(ctx, "s-a")
	require.NoError(t, err)
	requireSession(t, a, got)
	got, err = s.Get(ctx, "s-b")
	require.NoError(t, err)
	requireSession(t, b, got)

	// The caller's record is not shared with the store.
	a.Labels["team"] = "changed"
	got, err = s.Get(ctx, "s-a")
	require.NoError(t, err)
	require.Equal(t, "qa", got.Labels["team"])

	// A later Put replaces the record (a touch of last_used).
	a = newSession("s-a")
	a.LastUsed = a.LastUsed.Add(time.Minute)
	require.NoError(t, s.Put(ctx, a, longTTL))
	got, err = s.Get(ctx, "s-a")
	require.NoError(t, err)
	requireSession(t, a, got)

	// Delete removes one record only.
	require.NoError(t, s.Delete(ctx, "s-a"))
	_, err = s.Get(ctx, "s-a")
	require.ErrorIs(t, err, persistence.ErrNotFound)
	got, err = s.Get(ctx, "s-b")
	require.NoError(t, err)
	requireSession(t, b, got)
}

func testSessionNotFound(t *testing.T, s persistence.SessionStore) {
	_, err := s.Get(t.Context(), "nobody")
	require.ErrorIs(t, err, persistence.ErrNotFound)
	require.NoError(t, s.Delete(t.Context(), "nobody"), "deleting an absent record")
}

func testSessionTTL(t *testing.T, s persistence.SessionStore) {
	ctx := t.Context()
	require.NoError(t, s.Put(ctx, newSession("stays"), longTTL))
	require.NoError(t, s.Put(ctx, newSession("expires"), 200*time.Millisecond))
	WaitFor(t, "session record to expire", func() bool {
		_, err := s.Get(ctx, "expires")
		return errors.Is(err, persistence.ErrNotFound)
	})
	_, err := s.Get(ctx, "stays")
	require.NoError(t, err)
}

func testSessionPutRefreshesTTL(t *testing.T, s persistence.SessionStore) {
	ctx := t.Context()
	const short = 300 * time.Millisecond
	require.NoError(t, s.Put(ctx, newSession("s1"), short))
	// A touch within the TTL pushes the expiry out: a session in use
	// never loses its record.
	require.NoError(t, s.Put(ctx, newSession("s1"), longTTL))
	time.Sleep(2 * short)
	_, err := s.Get(ctx, "s1")
	require.NoError(t, err)

	// And a shorter TTL shortens it again.
	require.NoError(t, s.Put(ctx, newSession("s1"), short))
	WaitFor(t, "session record to expire after a shorter Put", func() bool {
		_, err := s.Get(ctx, "s1")
		return errors.Is(err, persistence.ErrNotFound)
	})
}

func testSessionBadInput(t *testing.T, s persistence.SessionStore) {
	ctx := t.Context()
	require.Error(t, s.Put(ctx, newSession(""), longTTL), "empty id")
	require.Error(t, s.Put(ctx, newSession("s1"), 0), "zero ttl")
	require.Error(t, s.Put(ctx, newSession("s1"), -time.Second), "negative ttl")
	_, err := s.Get(ctx, "s1")
	require.ErrorIs(t, err, persistence.ErrNotFound, "a refused Put stores nothing")
}
