//go:build !race

// Several cluster members in one process trip an upstream data race in
// protoactor (see multi_member_test.go): built without -race.

package hub

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestMultiMemberGrainMessagesNoJobLookup: with two hubs, jobs submitted
// through one and run by a worker linked to the other are never looked up
// — the wake goes to the job's owner in one message, the scheduler's hub
// and the link's use the PID handed on — and every placement is settled
// (none left for the placement timeout).
func TestMultiMemberGrainMessagesNoJobLookup(t *testing.T) {
	cfgA, cfgB := sharedStoreConfigs(t)
	a := startTestHub(t, cfgA)
	b := startTestHub(t, cfgB)
	require.Eventually(t, func() bool {
		return a.member.Cluster.MemberList.Length() == 2 && b.member.Cluster.MemberList.Length() == 2
	}, 10*time.Second, 20*time.Millisecond, "the hubs meet")
	startAgent(t, b.URL(), "wm2", 2)
	require.Eventually(t, func() bool { ws, err := a.Workers(t.Context()); return err == nil && len(ws) == 1 && ws[0].Alive },
		10*time.Second, 10*time.Millisecond)
	const n = 20
	runJobs(t, a, n)
	require.Zero(t, jobLookups(a)+jobLookups(b), "no lookup: the wake goes through the job's owner")
	require.Eventually(t, func() bool { return placementsPending(t, a) == 0 }, 2*time.Second, 10*time.Millisecond)
}
