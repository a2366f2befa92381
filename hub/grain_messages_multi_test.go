//go:build !race

// Several cluster members in one process trip an upstream data race in
// protoactor (see multi_member_test.go): built without -race.

package hub

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/cluster"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/actors/grains"
	"github.com/paprika-hub/paprika/config"
	"github.com/paprika-hub/paprika/membership"
	"github.com/paprika-hub/paprika/persistence"
)

// TestMultiMemberGrainMessagesNoJobLookup: with two hubs, jobs submitted
// through one and run by a worker linked to the other are never looked up
// — the wake goes to the job's owner in one message, the scheduler's hub
// and the link's use the PID handed on — and every placement is settled
// (none left for the placement timeout).
func TestMultiMemberGrainMessagesNoJobLookup(t *testing.T) {
	a, b := twoHubs(t)
	startAgent(t, b.URL(), "wm2", 2)
	require.Eventually(t, func() bool { ws, err := a.Workers(t.Context()); return err == nil && len(ws) == 1 && ws[0].Alive },
		10*time.Second, 10*time.Millisecond)
	const n = 20
	runJobs(t, a, n)
	require.Zero(t, jobLookups(a)+jobLookups(b), "no lookup: the wake goes through the job's owner")
	require.Eventually(t, func() bool { return placementsPending(t, a) == 0 }, 2*time.Second, 10*time.Millisecond)
}

// TestMultiMemberJobsLiveOnTheSubmittingHub: a job submitted through a hub
// gets an id whose grain that hub owns (grains.mintLocal), through either
// hub, so its wake is a local message; and the jobs still run on a worker
// linked to the other hub. Without the preference half the ids would be
// the other hub's.
func TestMultiMemberJobsLiveOnTheSubmittingHub(t *testing.T) {
	a, b := twoHubs(t)
	startAgent(t, b.URL(), "wm3", 2)
	require.Eventually(t, func() bool { ws, err := a.Workers(t.Context()); return err == nil && len(ws) == 1 && ws[0].Alive },
		10*time.Second, 10*time.Millisecond)

	const n = 40
	for _, via := range []*Hub{a, b} {
		lookup := via.member.Cluster.Config.IdentityLookup.(*membership.Lookup)
		self := via.member.Cluster.ActorSystem.Address()
		ids := make([]string, 0, n)
		owned := 0
		for range n {
			id := submit(t, via.URL(), `{"mode":"noop"}`).ID
			ids = append(ids, id)
			if lookup.OwnerOf(id, grains.KindJob) == self {
				owned++
			}
		}
		// Each id misses with chance 2^-8 (mintTries draws on two
		// members): more than 3 misses in 40 is a 1-in-50,000 event.
		require.GreaterOrEqual(t, owned, n-3, "jobs submitted through %s are owned by it", self)
		for _, id := range ids {
			require.Eventually(t, func() bool { return getJob(t, via.URL(), id).Status == persistence.StatusSucceeded },
				20*time.Second, 10*time.Millisecond, id)
		}
	}
}

// TestMultiMemberIdleJobGoesToItsHubsWorker: with a worker linked to each
// of two hubs and both idle, a job runs on the worker whose socket is on
// the hub that took it (the job grain's; PickWorkerNear), so its
// job_started and job_done stay on that hub. Without the preference half
// would go to the other hub's worker.
func TestMultiMemberIdleJobGoesToItsHubsWorker(t *testing.T) {
	a, b := twoHubs(t)
	startAgent(t, a.URL(), "wna", 2)
	startAgent(t, b.URL(), "wnb", 2)
	idle := func() bool {
		st, ok := schedStats(t, a)
		return ok && st.WorkersAlive == 2 && st.LanesBusy == 0 && st.Pending == 0 && st.Queued == 0
	}
	const n = 12
	for _, tc := range []struct {
		via    *Hub
		worker string
	}{{a, "wna"}, {b, "wnb"}} {
		near := 0
		for range n {
			require.Eventually(t, idle, 10*time.Second, 5*time.Millisecond, "both workers idle before the next job")
			id := submit(t, tc.via.URL(), `{"mode":"noop"}`).ID
			var j persistence.Job
			require.Eventually(t, func() bool { j = getJob(t, tc.via.URL(), id); return j.Status == persistence.StatusSucceeded },
				20*time.Second, 5*time.Millisecond, id)
			if j.WorkerID == tc.worker {
				near++
			}
		}
		// A miss needs the id draw to miss (2^-8 a job on two hubs): more
		// than one in 12 is a 1-in-2,000 event; without the preference
		// the count is about 6.
		require.GreaterOrEqual(t, near, n-1, "jobs through %s ran on %s", tc.via.URL(), tc.worker)
	}
}

// TestMultiMemberSchedulerHandsOverOnATopologyChange: when a hub joins and
// the scheduler grain is now its, the activation on the first hub hands
// its queued job over at the topology change itself — the periodic
// ownership check is off here (an hour), so only the placement's Moved,
// read before the stop, can do it — and the job runs once.
func TestMultiMemberSchedulerHandsOverOnATopologyChange(t *testing.T) {
	cfgA, cfgB := sharedStoreConfigs(t)
	noPeriodicCheck := func(cfg *config.Config) *Hub {
		h, err := New(cfg, testLogger(t))
		require.NoError(t, err)
		h.deps.Timing.OwnerCheckEvery = time.Hour
		require.NoError(t, h.Start(context.Background()))
		t.Cleanup(func() { _ = h.Stop(context.Background()) })
		return h
	}
	a := noPeriodicCheck(cfgA)
	id := submit(t, a.URL(), `{"mode":"noop"}`).ID
	require.Eventually(t, func() bool { st, ok := schedStats(t, a); return ok && st.Queued == 1 }, 10*time.Second, 10*time.Millisecond,
		"the job waits in the scheduler on the only hub")

	// B listens where the rendezvous hash gives it the scheduler.
	host, portA, err := net.SplitHostPort(a.member.Cluster.ActorSystem.Address())
	require.NoError(t, err)
	pa, err := strconv.Atoi(portA)
	require.NoError(t, err)
	require.NoError(t, cfgB.Set("cluster.port", strconv.Itoa(portTakingScheduler(t, host, pa))))
	b := noPeriodicCheck(cfgB)
	require.Eventually(t, func() bool {
		return a.member.Cluster.MemberList.Length() == 2 && b.member.Cluster.MemberList.Length() == 2
	}, 10*time.Second, 20*time.Millisecond, "the hubs meet")
	lookup := a.member.Cluster.Config.IdentityLookup.(*membership.Lookup)
	require.Equal(t, b.member.Cluster.ActorSystem.Address(), lookup.OwnerOf(grains.SchedulerID, grains.KindScheduler))

	stale := func() float64 {
		var m dto.Metric
		require.NoError(t, a.deps.Metrics.SchedStaleActivations.Write(&m))
		return m.GetCounter().GetValue()
	}
	require.Eventually(t, func() bool { return stale() == 1 },
		10*time.Second, 10*time.Millisecond, "the first hub's activation handed over at the topology change")
	startAgent(t, b.URL(), "wmove", 1)
	var j persistence.Job
	require.Eventually(t, func() bool { j = getJob(t, b.URL(), id); return j.Status == persistence.StatusSucceeded },
		20*time.Second, 10*time.Millisecond)
	require.Equal(t, 1, j.Attempts, "run once")
}

// portTakingScheduler returns a free port on host at which a second member
// would own the scheduler grain against the member at portA (protoactor's
// rendezvous hash of the member's address and the identity).
func portTakingScheduler(t *testing.T, host string, portA int) int {
	id := &cluster.ClusterIdentity{Identity: grains.SchedulerID, Kind: grains.KindScheduler}
	kinds := []string{grains.KindScheduler}
	// Each drawn port is held until the search ends: closed at once, the
	// kernel may hand the same port back on the next draw, and 64 draws
	// were once one (CI).
	var held []net.Listener
	defer func() {
		for _, l := range held {
			_ = l.Close()
		}
	}()
	for range 64 {
		l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		require.NoError(t, err)
		held = append(held, l)
		p := l.Addr().(*net.TCPAddr).Port
		rdv := cluster.NewRendezvous()
		rdv.UpdateMembers(cluster.Members{{Host: host, Port: int32(portA), Id: "a", Kinds: kinds}, {Host: host, Port: int32(p), Id: "b", Kinds: kinds}})
		if rdv.GetByClusterIdentity(id) == net.JoinHostPort(host, strconv.Itoa(p)) {
			return p
		}
	}
	t.Fatal("no free port in 64 draws takes the scheduler (each draw is even odds)")
	return 0
}
