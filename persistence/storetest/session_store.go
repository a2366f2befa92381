package storetest

import (
	"errors"
	"fmt"
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
		{"ListPages", testSessionListPages},
		{"ListEmpty", testSessionListEmpty},
		{"ListLeavesOutEnded", testSessionListLeavesOutEnded},
		{"ListDefaultLimit", testSessionListDefaultLimit},
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

// listSessions walks every page of s with limit, failing on a walk longer
// than maxPages (a cursor that does not advance).
func listSessions(t *testing.T, s persistence.SessionStore, limit, maxPages int) (recs []persistence.SessionRecord, pages [][]string) {
	t.Helper()
	cursor := ""
	for range maxPages {
		page, next, err := s.List(t.Context(), persistence.SessionListQuery{Limit: limit, Cursor: cursor})
		require.NoError(t, err)
		require.LessOrEqual(t, len(page), limit, "page over its limit")
		ids := make([]string, len(page))
		for i, r := range page {
			ids[i] = r.ID
		}
		recs, pages = append(recs, page...), append(pages, ids)
		if next == "" {
			return recs, pages
		}
		require.Greater(t, next, cursor, "the cursor advances")
		cursor = next
	}
	t.Fatalf("List walk did not end in %d pages: %v", maxPages, pages)
	return nil, nil
}

func testSessionListPages(t *testing.T, s persistence.SessionStore) {
	ctx := t.Context()
	// Written out of order: List orders by id, not by write.
	want := map[string]persistence.SessionRecord{}
	for _, id := range []string{"s-05", "s-01", "s-07", "s-03", "s-02", "s-06", "s-04"} {
		r := newSession(id)
		r.WorkerID = "w-" + id
		want[id] = r
		require.NoError(t, s.Put(ctx, r, longTTL))
	}
	recs, pages := listSessions(t, s, 3, 10)
	require.Equal(t, [][]string{{"s-01", "s-02", "s-03"}, {"s-04", "s-05", "s-06"}, {"s-07"}}, pages)
	for _, r := range recs {
		requireSession(t, want[r.ID], r)
	}

	// A page that ends at the last record says so: no empty page after it.
	_, pages = listSessions(t, s, 7, 3)
	require.Len(t, pages, 1)
	require.Len(t, pages[0], 7)

	// A cursor past the last id is an empty last page; one between ids
	// starts after it.
	page, next, err := s.List(ctx, persistence.SessionListQuery{Limit: 3, Cursor: "s-99"})
	require.NoError(t, err)
	require.Empty(t, page)
	require.Empty(t, next)
	page, _, err = s.List(ctx, persistence.SessionListQuery{Limit: 2, Cursor: "s-035"})
	require.NoError(t, err)
	require.Equal(t, []string{"s-04", "s-05"}, []string{page[0].ID, page[1].ID})

	// The records listed are the caller's to change.
	page[0].Labels["team"] = "changed"
	got, err := s.Get(ctx, "s-04")
	require.NoError(t, err)
	require.Equal(t, "qa", got.Labels["team"])
}

func testSessionListEmpty(t *testing.T, s persistence.SessionStore) {
	page, next, err := s.List(t.Context(), persistence.SessionListQuery{})
	require.NoError(t, err)
	require.Empty(t, page)
	require.Empty(t, next)
}

func testSessionListLeavesOutEnded(t *testing.T, s persistence.SessionStore) {
	ctx := t.Context()
	for _, id := range []string{"a", "b", "c", "d", "e"} {
		require.NoError(t, s.Put(ctx, newSession(id), longTTL))
	}
	require.NoError(t, s.Put(ctx, newSession("b"), 200*time.Millisecond))
	require.NoError(t, s.Put(ctx, newSession("d"), 200*time.Millisecond))
	require.NoError(t, s.Delete(ctx, "c"))
	WaitFor(t, "two session records to expire", func() bool {
		_, errB := s.Get(ctx, "b")
		_, errD := s.Get(ctx, "d")
		return errors.Is(errB, persistence.ErrNotFound) && errors.Is(errD, persistence.ErrNotFound)
	})
	// Whatever the page size, a walk yields exactly the live records.
	for _, limit := range []int{1, 2, 5} {
		recs, _ := listSessions(t, s, limit, 10)
		ids := make([]string, len(recs))
		for i, r := range recs {
			ids[i] = r.ID
		}
		require.Equal(t, []string{"a", "e"}, ids, "limit %d", limit)
	}
	// A record written again after it expired is listed again.
	require.NoError(t, s.Put(ctx, newSession("b"), longTTL))
	recs, _ := listSessions(t, s, 10, 2)
	require.Len(t, recs, 3)
}

func testSessionListDefaultLimit(t *testing.T, s persistence.SessionStore) {
	ctx := t.Context()
	n := persistence.DefaultSessionListLimit + 1
	for i := range n {
		require.NoError(t, s.Put(ctx, newSession(fmt.Sprintf("s-%03d", i)), longTTL))
	}
	page, next, err := s.List(ctx, persistence.SessionListQuery{})
	require.NoError(t, err)
	require.Len(t, page, persistence.DefaultSessionListLimit, "limit 0 is the default page")
	require.Equal(t, page[len(page)-1].ID, next)
	page, next, err = s.List(ctx, persistence.SessionListQuery{Cursor: next, Limit: persistence.MaxSessionListLimit + 5})
	require.NoError(t, err)
	require.Len(t, page, 1)
	require.Empty(t, next)
	require.Equal(t, persistence.MaxSessionListLimit, persistence.SessionListQuery{Limit: 1 << 30}.PageLimit())
}
