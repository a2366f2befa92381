//go:build !race

// Several cluster members in one process trip an upstream data race in
// protoactor (see multi_member_test.go): built without -race.

package hub

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/config"
)

// TestMultiMemberTenantQuotaAcrossHubs: two hubs of one cluster count one
// tenant's queue together (the scheduler grain is one per cluster): jobs
// submitted through hub A fill the tenant's max_queued, and hub B refuses
// the next one, its /pressure counting the same queue.
func TestMultiMemberTenantQuotaAcrossHubs(t *testing.T) {
	cfgA, cfgB := sharedStoreConfigs(t)
	for _, cfg := range []*config.Config{cfgA, cfgB} {
		require.NoError(t, cfg.Set("scheduler.tenant_quotas", "acme=queued:3"))
	}
	a := startTestHub(t, cfgA)
	b := startTestHub(t, cfgB)
	require.Eventually(t, func() bool {
		return a.member.Cluster.MemberList.Length() == 2 && b.member.Cluster.MemberList.Length() == 2
	}, 10*time.Second, 20*time.Millisecond, "the hubs meet")
	for range 3 {
		submit(t, a.URL(), `{"mode":"noop","tenant":"acme"}`)
	}
	// Both hubs see the one queue (the scheduler grain, wherever it
	// lives); B's read is then at most a second old, and B refuses.
	queued := func(h *Hub) int {
		st, body := do(t, "GET", h.URL()+"/pressure", "")
		var p struct{ Queued int }
		if st != http.StatusOK || json.Unmarshal(body, &p) != nil {
			return -1
		}
		return p.Queued
	}
	require.Eventually(t, func() bool { return queued(a) == 3 && queued(b) == 3 }, 10*time.Second, 100*time.Millisecond)
	st, body := do(t, "POST", b.URL()+"/jobs", `{"mode":"noop","tenant":"acme"}`)
	require.Equal(t, http.StatusTooManyRequests, st, string(body))
	require.Contains(t, string(body), "tenant_quota")
	submit(t, b.URL(), `{"mode":"noop","tenant":"other"}`)
	require.Eventually(t, func() bool { return queued(a) == 4 && queued(b) == 4 }, 10*time.Second, 100*time.Millisecond)
}
