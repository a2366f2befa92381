package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/persistence"
)

// RunHubRegistry runs the HubRegistry conformance suite. newRegistry must
// return a fresh, empty, isolated registry and release it in t.Cleanup.
func RunHubRegistry(t *testing.T, newRegistry func(t *testing.T) persistence.HubRegistry) {
	t.Helper()
	runSuite(t, newRegistry, []subtest[persistence.HubRegistry]{
		{"BeatList", testHubBeatList},
		{"DeadHubStaysListed", testHubDeadStaysListed},
		{"Remove", testHubRemove},
	})
}

func newHub(id string) persistence.HubInfo {
	now := time.Now().In(zone)
	return persistence.HubInfo{
		ID:        id,
		Address:   "10.0.0.9:8080",
		Member:    "10.0.0.9:7946",
		Alive:     true,
		Local:     true,
		StartedAt: now.Add(-time.Hour),
		LastSeen:  now,
	}
}

// hubByID lists r and returns the hubs by id.
func hubByID(t *testing.T, r persistence.HubRegistry) map[string]persistence.HubInfo {
	t.Helper()
	list, err := r.List(t.Context())
	require.NoError(t, err)
	out := make(map[string]persistence.HubInfo, len(list))
	for _, h := range list {
		require.NotContains(t, out, h.ID, "hub listed twice")
		out[h.ID] = h
	}
	return out
}

func testHubBeatList(t *testing.T, r persistence.HubRegistry) {
	ctx := t.Context()
	list, err := r.List(ctx)
	require.NoError(t, err)
	require.Empty(t, list)

	a, b := newHub("hub-a"), newHub("hub-b")
	b.Address, b.Member = "10.0.0.10:8080", ""
	require.NoError(t, r.Beat(ctx, a, longTTL))
	require.NoError(t, r.Beat(ctx, b, longTTL))

	hubs := hubByID(t, r)
	require.Len(t, hubs, 2)
	for _, want := range []persistence.HubInfo{a, b} {
		got := hubs[want.ID]
		require.Equal(t, want.Address, got.Address)
		require.Equal(t, want.Member, got.Member, "the cluster address, empty when the beat had none")
		require.True(t, got.Alive)
		require.False(t, got.Local, "Local is the caller's to set")
		requireTime(t, want.StartedAt, got.StartedAt, "started_at")
		requireTime(t, want.LastSeen, got.LastSeen, "last_seen")
	}

	// The next beat refreshes last_seen.
	a.LastSeen = a.LastSeen.Add(15 * time.Second)
	require.NoError(t, r.Beat(ctx, a, longTTL))
	requireTime(t, a.LastSeen, hubByID(t, r)["hub-a"].LastSeen, "last_seen")
}

func testHubDeadStaysListed(t *testing.T, r persistence.HubRegistry) {
	ctx := t.Context()
	require.NoError(t, r.Beat(ctx, newHub("hub-a"), longTTL))
	require.NoError(t, r.Beat(ctx, newHub("hub-b"), longTTL))
	require.True(t, hubByID(t, r)["hub-b"].Alive)

	require.NoError(t, r.Beat(ctx, newHub("hub-b"), 200*time.Millisecond))
	WaitFor(t, "hub-b to be shown dead", func() bool { return !hubByID(t, r)["hub-b"].Alive })
	hubs := hubByID(t, r)
	require.Len(t, hubs, 2, "a dead hub is still listed")
	require.True(t, hubs["hub-a"].Alive)
	require.Equal(t, "10.0.0.9:8080", hubs["hub-b"].Address)

	// It comes back with its next beat.
	require.NoError(t, r.Beat(ctx, newHub("hub-b"), longTTL))
	require.True(t, hubByID(t, r)["hub-b"].Alive)
}

func testHubRemove(t *testing.T, r persistence.HubRegistry) {
	ctx := t.Context()
	require.NoError(t, r.Beat(ctx, newHub("hub-a"), longTTL))
	require.NoError(t, r.Beat(ctx, newHub("hub-b"), longTTL))
	require.NoError(t, r.Remove(ctx, "hub-a"))
	hubs := hubByID(t, r)
	require.Len(t, hubs, 1)
	require.Contains(t, hubs, "hub-b")
	require.NoError(t, r.Remove(ctx, "hub-a"), "second remove")
	require.NoError(t, r.Remove(ctx, "never-seen"))
}
