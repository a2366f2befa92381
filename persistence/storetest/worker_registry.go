package storetest

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/messages"
	"github.com/paprika-hub/paprika/persistence"
)

// RunWorkerRegistry runs the WorkerRegistry conformance suite. newRegistry
// must return a fresh, empty, isolated registry and release it in
// t.Cleanup.
func RunWorkerRegistry(t *testing.T, newRegistry func(t *testing.T) persistence.WorkerRegistry) {
	t.Helper()
	runSuite(t, newRegistry, []subtest[persistence.WorkerRegistry]{
		{"PutGetList", testWorkerPutGetList},
		{"NotFound", testWorkerNotFound},
		{"TTLExpiry", testWorkerTTL},
		{"ClaimID", testWorkerClaimID},
		{"ClaimIDConcurrent", testWorkerClaimIDConcurrent},
		{"ReleaseOwner", testWorkerReleaseOwner},
		{"DeclaredModes", testWorkerDeclaredModes},
	})
}

// longTTL keeps a record for the whole test.
const longTTL = time.Minute

func newWorker(id, hub string) persistence.WorkerInfo {
	return persistence.WorkerInfo{
		ID:            id,
		Hub:           hub,
		Status:        persistence.WorkerActive,
		Alive:         true,
		Connected:     true,
		InFlight:      1,
		MaxConcurrent: 4,
		Lanes:         []persistence.LaneStatus{{Lane: 0, State: messages.LaneJob}, {Lane: 1, State: messages.LaneIdle}},
		Drivers:       []string{messages.DriverChromium},
		CPUPct:        12.5,
		MemPct:        40,
		DiskPct:       71.25,
		LanIP:         "10.0.0.1",
		Version:       "v1.2.3",
		Running:       []string{"job-1"},
		LastSeen:      time.Now().In(zone),
	}
}

func requireWorker(t *testing.T, want, got persistence.WorkerInfo) {
	t.Helper()
	requireTime(t, want.LastSeen, got.LastSeen, "last_seen")
	want.LastSeen, got.LastSeen = time.Time{}, time.Time{}
	require.Equal(t, want, got)
}

func testWorkerPutGetList(t *testing.T, r persistence.WorkerRegistry) {
	ctx := t.Context()
	w1, w2 := newWorker("w1", "hub-a"), newWorker("w2", "hub-b")
	w2.Lanes, w2.Running, w2.BrowserURL = []persistence.LaneStatus{{Lane: 0, State: "session"}, {Lane: 1, State: "idle"}}, nil, "ws://b/browser"
	require.NoError(t, r.Put(ctx, w1, longTTL))
	require.NoError(t, r.Put(ctx, w2, longTTL))

	got, err := r.Get(ctx, "w1")
	require.NoError(t, err)
	requireWorker(t, w1, got)

	list, err := r.List(ctx)
	require.NoError(t, err)
	slices.SortFunc(list, func(a, b persistence.WorkerInfo) int { return cmp.Compare(a.ID, b.ID) })
	require.Len(t, list, 2)
	requireWorker(t, w1, list[0])
	requireWorker(t, w2, list[1])

	// A later Put replaces the record.
	w1.InFlight, w1.Status = 3, persistence.WorkerDrain
	require.NoError(t, r.Put(ctx, w1, longTTL))
	got, err = r.Get(ctx, "w1")
	require.NoError(t, err)
	requireWorker(t, w1, got)
}

func testWorkerNotFound(t *testing.T, r persistence.WorkerRegistry) {
	_, err := r.Get(t.Context(), "nobody")
	require.ErrorIs(t, err, persistence.ErrNotFound)
	list, err := r.List(t.Context())
	require.NoError(t, err)
	require.Empty(t, list)
}

func testWorkerTTL(t *testing.T, r persistence.WorkerRegistry) {
	ctx := t.Context()
	require.NoError(t, r.Put(ctx, newWorker("stays", "hub-a"), longTTL))
	require.NoError(t, r.Put(ctx, newWorker("expires", "hub-a"), 200*time.Millisecond))

	WaitFor(t, "worker record to expire", func() bool {
		_, err := r.Get(ctx, "expires")
		return errors.Is(err, persistence.ErrNotFound)
	})
	list, err := r.List(ctx)
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.Equal(t, "stays", list[0].ID)

	// A refresh (the next heartbeat) brings it back.
	require.NoError(t, r.Put(ctx, newWorker("expires", "hub-a"), longTTL))
	_, err = r.Get(ctx, "expires")
	require.NoError(t, err)
}

func testWorkerClaimID(t *testing.T, r persistence.WorkerRegistry) {
	ctx := t.Context()
	holder, err := r.ClaimID(ctx, "w50150", "10.10.50.150")
	require.NoError(t, err)
	require.Equal(t, "10.10.50.150", holder)

	holder, err = r.ClaimID(ctx, "w50150", "10.10.50.150")
	require.NoError(t, err)
	require.Equal(t, "10.10.50.150", holder, "the holder claims again after a restart")

	holder, err = r.ClaimID(ctx, "w50150", "10.10.5.150")
	require.NoError(t, err)
	require.Equal(t, "10.10.50.150", holder, "another IP learns who holds the id")

	holder, err = r.ClaimID(ctx, "w10-10-5-150", "10.10.5.150")
	require.NoError(t, err)
	require.Equal(t, "10.10.5.150", holder)
}

func testWorkerClaimIDConcurrent(t *testing.T, r persistence.WorkerRegistry) {
	const n = 8
	holders, errs := AtOnce(n, func(i int) (string, error) {
		return r.ClaimID(t.Context(), "w1", fmt.Sprintf("10.0.0.%d", i+1))
	})
	winners := 0
	for i := range n {
		require.NoError(t, errs[i])
		require.Equal(t, holders[0], holders[i], "every claimer sees the same holder")
		if holders[i] == fmt.Sprintf("10.0.0.%d", i+1) {
			winners++
		}
	}
	require.Equal(t, 1, winners)
}

func testWorkerReleaseOwner(t *testing.T, r persistence.WorkerRegistry) {
	ctx := t.Context()
	w := newWorker("w1", "hub-a")
	require.NoError(t, r.Put(ctx, w, longTTL))

	// A release by a hub that does not own the worker changes nothing.
	require.NoError(t, r.ReleaseOwner(ctx, "w1", "hub-b"))
	got, err := r.Get(ctx, "w1")
	require.NoError(t, err)
	require.Equal(t, "hub-a", got.Hub)

	// The owner's release clears the owner; the record stays until its TTL.
	require.NoError(t, r.ReleaseOwner(ctx, "w1", "hub-a"))
	got, err = r.Get(ctx, "w1")
	require.NoError(t, err)
	require.Empty(t, got.Hub)
	require.Equal(t, w.MaxConcurrent, got.MaxConcurrent)

	// The worker reconnects to hub-b; hub-a's late release must not erase
	// that fresh ownership.
	w.Hub = "hub-b"
	require.NoError(t, r.Put(ctx, w, longTTL))
	require.NoError(t, r.ReleaseOwner(ctx, "w1", "hub-a"))
	got, err = r.Get(ctx, "w1")
	require.NoError(t, err)
	require.Equal(t, "hub-b", got.Hub)

	require.NoError(t, r.ReleaseOwner(ctx, "unknown", "hub-a"), "release of an unknown worker")
	_, err = r.Get(ctx, "unknown")
	require.ErrorIs(t, err, persistence.ErrNotFound)
}

// testWorkerDeclaredModes: the modes a worker declared (with their
// schemas) come back from Get and List as put, so every hub places and
// validates by them.
func testWorkerDeclaredModes(t *testing.T, r persistence.WorkerRegistry) {
	ctx := t.Context()
	w := newWorker("w1", "hub-a")
	w.Modes = []persistence.WorkerMode{
		{Name: "pdf-diff", Lane: messages.LaneNeedChromium, Schema: []byte(`{"type":"object","required":["a"]}`)},
		{Name: "http-check"},
	}
	require.NoError(t, r.Put(ctx, w, longTTL))
	got, err := r.Get(ctx, "w1")
	require.NoError(t, err)
	requireWorker(t, w, got)
	list, err := r.List(ctx)
	require.NoError(t, err)
	require.Len(t, list, 1)
	requireWorker(t, w, list[0])

	w.Modes = nil // a worker that reconnects declaring none
	require.NoError(t, r.Put(ctx, w, longTTL))
	got, err = r.Get(ctx, "w1")
	require.NoError(t, err)
	require.Empty(t, got.Modes)
}
