package hub

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/actors/grains"
	"github.com/paprika-hub/paprika/messages"
	"github.com/paprika-hub/paprika/persistence"
)

// jobLookups is how many identity lookups of job grains h made: each is
// a round trip to the job's owner hub before a message can go.
func jobLookups(h *Hub) int64 {
	m := h.Metrics()
	return m.Get("paprika_grain_messages_total", "kind=job", "op=lookup", "to=local") +
		m.Get("paprika_grain_messages_total", "kind=job", "op=lookup", "to=remote")
}

// schedStats is the scheduler's state as seen through h; false when it
// does not answer.
func schedStats(t *testing.T, h *Hub) (grains.SchedStats, bool) {
	var st grains.SchedStats
	r, err := grains.Call(h.member.Cluster, grains.SchedulerID, grains.KindScheduler, &messages.SchedGetStats{}, 5*time.Second)
	if err != nil || !r.Ok {
		return st, false
	}
	require.NoError(t, json.Unmarshal(r.Json, &st))
	return st, true
}

// placementsPending is the scheduler's count of placements not settled
// yet (-1 when it does not answer).
func placementsPending(t *testing.T, h *Hub) int {
	if st, ok := schedStats(t, h); ok {
		return st.Pending
	}
	return -1
}

// runJobs submits n no-op jobs through via and waits until each succeeded.
func runJobs(t *testing.T, via *Hub, n int) {
	ids := make([]string, 0, n)
	for range n {
		ids = append(ids, submit(t, via.URL(), `{"mode":"noop"}`).ID)
	}
	for _, id := range ids {
		require.Eventually(t, func() bool { return getJob(t, via.URL(), id).Status == persistence.StatusSucceeded },
			20*time.Second, 10*time.Millisecond, id)
	}
}

// TestGrainMessagesNoJobLookup: a job's grain is never looked up: the hub
// that wakes it hands the wake to the placement actor of its owner
// (membership.Lookup.Deliver), and the scheduler and the worker's link reach
// it by the PID it hands on (SchedEnqueue.job, ConnSend.job).
func TestGrainMessagesNoJobLookup(t *testing.T) {
	h := hubWithWorker(t, "wm", 2)
	const n = 20
	runJobs(t, h, n)
	require.Zero(t, jobLookups(h), "no lookup: the wake goes through the job's owner")
	// The worker grain's state push settled each placement (no
	// SchedPlaced): none waits for its placement timeout.
	require.Eventually(t, func() bool { return placementsPending(t, h) == 0 }, 2*time.Second, 10*time.Millisecond)
}

// hubWithWorker starts a hub and a worker agent of lanes lanes linked to it.
func hubWithWorker(t *testing.T, worker string, lanes int) *Hub {
	h := startTestHub(t, testConfig(t))
	startAgent(t, h.URL(), worker, lanes)
	require.Eventually(t, func() bool { ws, err := h.Workers(t.Context()); return err == nil && len(ws) == 1 && ws[0].Alive },
		10*time.Second, 10*time.Millisecond)
	return h
}

// schedulerSends is how many one-way messages h sent to the scheduler.
func schedulerSends(h *Hub) int64 {
	m := h.Metrics()
	return m.Get("paprika_grain_messages_total", "kind=scheduler", "op=send", "to=local") +
		m.Get("paprika_grain_messages_total", "kind=scheduler", "op=send", "to=remote")
}

// TestGrainMessagesJobEndRidesRelease: a finished job's SchedRemove goes
// in the worker grain's state push that frees its slot, so a job costs the
// scheduler at most three messages (enqueue, the push that settles its
// placement, the push that frees its slot; two pushes of one mailbox round
// go as one), not four; heartbeats add a few.
func TestGrainMessagesJobEndRidesRelease(t *testing.T) {
	h := hubWithWorker(t, "wr", 2)
	const n = 40
	before := schedulerSends(h)
	runJobs(t, h, n)
	sent := schedulerSends(h) - before
	require.GreaterOrEqual(t, sent, int64(n+1), "every job is enqueued, and pushes settle and free them")
	require.Less(t, sent, int64(3*n+n/2), "one message per job fewer than a SchedRemove of its own would cost")
	// The removals reached the scheduler: nothing is left queued, pending
	// or counted.
	require.Eventually(t, func() bool { return placementsPending(t, h) == 0 }, 2*time.Second, 10*time.Millisecond)
}

// TestGrainMessagesFinalReleaseNotHeld: a final release reaching a worker
// grain that holds no such attempt (a fresh activation after its hub
// died, a release that overtook the assignment) still ends the job at the
// scheduler: its profile lock frees and it leaves the queue.
func TestGrainMessagesFinalReleaseNotHeld(t *testing.T) {
	h := startTestHub(t, testConfig(t)) // no worker: the job stays queued
	cl := h.member.Cluster
	stats := func() grains.SchedStats {
		r, err := grains.Call(cl, grains.SchedulerID, grains.KindScheduler, &messages.SchedGetStats{}, 5*time.Second)
		require.NoError(t, err)
		var st grains.SchedStats
		require.NoError(t, json.Unmarshal(r.Json, &st))
		return st
	}
	j := submit(t, h.URL(), `{"mode":"fetch","params":{"url":"http://127.0.0.1:1/","profile":"p-unheld"}}`)
	require.Eventually(t, func() bool { st := stats(); return st.ProfilesInUse["p-unheld"] == j.ID && st.Queued == 1 },
		5*time.Second, 10*time.Millisecond)
	grains.Send(cl.ActorSystem.Root, cl, "w-never-seen", grains.KindWorker,
		&messages.WorkerRelease{JobId: j.ID, Attempt: 1, Final: true, Lane: "0"})
	require.Eventually(t, func() bool { st := stats(); return len(st.ProfilesInUse) == 0 && st.Queued == 0 },
		5*time.Second, 10*time.Millisecond)
}
