//go:build !race

// Several cluster members in one process trip an upstream data race in
// protoactor (see multi_member_test.go): built without -race.

package hub

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/actors/grains"
	"github.com/paprika-hub/paprika/membership"
)

// TestMultiMemberWorkerLinksWhereItsGrainLives: a worker given both hubs
// that dials the one that does not own its grain is sent on (relink) to
// the one that does, and its jobs, submitted through either hub, reach
// its link without crossing the cluster (no remote request to a link). A
// worker given only the other hub stays there: it was not given the
// owner's URL.
func TestMultiMemberWorkerLinksWhereItsGrainLives(t *testing.T) {
	a, b := twoHubs(t)
	lookup := a.member.Cluster.Config.IdentityLookup.(*membership.Lookup)
	ownedBy := func(h *Hub, prefix string) string {
		for i := range 1000 {
			id := fmt.Sprintf("%s%d", prefix, i)
			if lookup.OwnerOf(id, grains.KindWorker) == h.member.Cluster.ActorSystem.Address() {
				return id
			}
		}
		t.Fatalf("no worker id of %s among 1000", h.ID())
		return ""
	}
	linkedTo := func(id string) string {
		ws, err := a.Workers(t.Context())
		require.NoError(t, err)
		for _, w := range ws {
			if w.ID == id && w.Alive {
				return w.Hub
			}
		}
		return ""
	}

	home := ownedBy(b, "wh")
	t.Cleanup(startAgentHubs(t, []string{a.URL(), b.URL()}, home, 2))
	require.Eventually(t, func() bool { return linkedTo(home) == b.ID() }, 10*time.Second, 10*time.Millisecond,
		"the worker links to its grain's hub")
	require.Equal(t, int64(1), a.Metrics().Get("paprika_links_relinked_total"), "the first hub sent it on")
	require.Zero(t, b.Metrics().Get("paprika_links_relinked_total"))

	runJobs(t, a, 10)
	runJobs(t, b, 10)
	for _, h := range []*Hub{a, b} {
		require.Zero(t, h.Metrics().Get("paprika_grain_messages_total", "kind=link", "op=request", "to=remote"),
			"the grain's assignments reach a link on its own hub")
	}
	require.Positive(t, b.Metrics().Get("paprika_grain_messages_total", "kind=link", "op=request", "to=local"))

	away := ownedBy(b, "wx")
	t.Cleanup(startAgentHubs(t, []string{a.URL()}, away, 2))
	require.Eventually(t, func() bool { return linkedTo(away) == a.ID() }, 10*time.Second, 10*time.Millisecond,
		"a worker not given the owner's URL stays")
	require.Equal(t, int64(1), a.Metrics().Get("paprika_links_relinked_total"))
}
