package hub

import (
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/agent"
	"github.com/paprika-hub/paprika/messages"
	"github.com/paprika-hub/paprika/persistence"
)

// TestUnhealthyWorkersGetNoJobs: of three linked workers, one reports a
// both lanes with too many renderer crashes, one /dev/shm under the
// minimum; every job goes to the healthy one (all three tie on load and
// capacity: without the filter a third each), GET /workers shows which
// lane or worker is skipped and why, and the skip metric counts them. When
// the crashy worker reports one lane healthy again, it takes one job (its
// unhealthy lane counts as taken) and no second.
func TestUnhealthyWorkersGetNoJobs(t *testing.T) {
	cfg := testConfig(t)
	require.NoError(t, cfg.Set("scheduler.max_lane_crashes_10m", "2"))
	require.NoError(t, cfg.Set("scheduler.min_shm_free_mb", "64"))
	h := startTestHub(t, cfg)
	url := h.URL()
	hello := func(id string, lanes []messages.LaneHealth, shm int64) messages.Frame {
		return messages.Frame{Type: messages.TypeHello, WorkerID: id, LanIP: "127.0.0.1", Version: "test",
			Capabilities: &messages.Capabilities{MaxConcurrent: len(lanes), LaneURLs: laneURLs(id, len(lanes)), Drivers: []string{"simulated"}},
			Stats:        &messages.Stats{ShmFreeMB: &shm}, LaneHealth: lanes}
	}
	crashy := dialRawLinkHello(t, url, "w-crashy", "", hello("w-crashy", []messages.LaneHealth{{RSSMB: 300, Crashes10m: 2}, {Crashes10m: 3}}, 512))
	shmLow := dialRawLinkHello(t, url, "w-shm", "", hello("w-shm", []messages.LaneHealth{{RSSMB: 300}, {RSSMB: 280}}, 10))
	good := dialRawLinkHello(t, url, "w-good", "", hello("w-good", []messages.LaneHealth{{RSSMB: 300, Crashes10m: 1}, {RSSMB: 290}}, 512))

	w := waitWorker(t, url, "w-crashy", "its lane skipped", func(w persistence.WorkerInfo) bool {
		return len(w.Lanes) == 2 && w.Lanes[0].Skipped == persistence.HealthSkipCrashes && w.Lanes[1].Skipped == persistence.HealthSkipCrashes
	})
	require.Equal(t, 2, w.Lanes[0].Health.Crashes10m)
	require.Empty(t, w.Skipped)
	w = waitWorker(t, url, "w-shm", "the worker skipped", func(w persistence.WorkerInfo) bool {
		return w.Skipped == persistence.HealthSkipShm
	})
	require.EqualValues(t, 10, *w.ShmFreeMB)
	w = waitWorker(t, url, "w-good", "its health", func(w persistence.WorkerInfo) bool {
		return len(w.Lanes) == 2 && w.Lanes[0].Health != nil
	})
	require.Empty(t, w.Skipped)
	require.Empty(t, w.Lanes[0].Skipped, "one crash is under the threshold of 2")
	// The crashy worker is told its skipped lanes; the others, with none,
	// get no lane_skip.
	require.Equal(t, []messages.LaneSkip{{Lane: 0, Reason: persistence.HealthSkipCrashes}, {Lane: 1, Reason: persistence.HealthSkipCrashes}},
		crashy.nextSkip(5*time.Second).SkipLanes)
	require.Equal(t, "", good.nextSkip(100*time.Millisecond).Type, "a worker with no lane skipped was told of skips")
	require.Equal(t, "", shmLow.nextSkip(100*time.Millisecond).Type, "a worker skipped whole has no lane skipped")

	for i := 0; i < 6; i++ {
		j := submit(t, url, `{"mode":"noop"}`)
		f := nextAssign(good, 5*time.Second)
		require.Equal(t, messages.TypeAssignJob, f.Type, "job %d went nowhere", i)
		require.Equal(t, j.ID, f.JobID)
		good.send(messages.Frame{Type: messages.TypeJobDone, JobID: j.ID, Attempt: f.Attempt, Result: []byte(`{}`)})
	}
	require.Equal(t, "", crashy.next(300*time.Millisecond).Type, "the crashy lane got work")
	require.Equal(t, "", shmLow.next(300*time.Millisecond).Type, "the worker short of /dev/shm got work")
	_, m := do(t, "GET", url+"/metrics", "")
	require.Contains(t, string(m), `paprika_sched_health_skips_total{reason="lane_crashes"}`)
	require.NotContains(t, string(m), `paprika_sched_health_skips_total{reason="lane_crashes"} 0`)
	require.NotContains(t, string(m), `paprika_sched_health_skips_total{reason="shm_low"} 0`)

	// One lane's crashes age out (the worker says so, only what changed):
	// that lane takes work again. The healthy worker holds one job of two
	// lanes (placed while it was the only one eligible: idle, the two
	// would tie), so the crashy one, idle, is the least loaded; its second
	// job would need the unhealthy lane and goes to the healthy worker.
	hold := submit(t, url, `{"mode":"noop"}`)
	f := nextAssign(good, 5*time.Second)
	require.Equal(t, hold.ID, f.JobID)
	crashy.send(messages.Frame{Type: messages.TypeHeartbeat, Stats: &messages.Stats{},
		LaneHealth: []messages.LaneHealth{{RSSMB: 300}, {Crashes10m: 3}}})
	waitWorker(t, url, "w-crashy", "one lane healthy again", func(w persistence.WorkerInfo) bool {
		return len(w.Lanes) == 2 && w.Lanes[0].Skipped == "" && w.Lanes[1].Skipped == persistence.HealthSkipCrashes
	})
	require.Equal(t, []messages.LaneSkip{{Lane: 1, Reason: persistence.HealthSkipCrashes}}, crashy.nextSkip(5*time.Second).SkipLanes)
	j := submit(t, url, `{"mode":"noop"}`)
	f = nextAssign(crashy, 5*time.Second)
	require.Equal(t, messages.TypeAssignJob, f.Type, "the lane healthy again got no work")
	require.Equal(t, j.ID, f.JobID)
	k := submit(t, url, `{"mode":"noop"}`)
	f = nextAssign(good, 5*time.Second)
	require.Equal(t, k.ID, f.JobID, "the crashy worker's unhealthy lane took a job")
	_, b := do(t, "GET", url+"/workers", "")
	require.True(t, strings.Contains(string(b), `"skipped":"shm_low"`), string(b))
}

// TestChromiumWorkerReportsLaneHealth, with a real agent and Chromium: once
// a session starts the lane's browser, GET /workers shows the lane's RSS
// (sent by the agent's 2-s health check, not a regular heartbeat) and the
// worker's /dev/shm free space, and neither is skipped at the defaults.
func TestChromiumWorkerReportsLaneHealth(t *testing.T) {
	if testing.Short() {
		t.Skip("drives Chromium; skipped with -short")
	}
	h := startTestHub(t, testConfig(t))
	startChromiumAgent(t, h.URL(), "wh", 1)
	waitWorker(t, h.URL(), "wh", "its /dev/shm", func(w persistence.WorkerInfo) bool { return w.ShmFreeMB != nil })
	st, b := do(t, "POST", h.URL()+"/sessions", `{"idle_timeout_s":30}`)
	require.Equal(t, 201, st, string(b))
	w := waitWorker(t, h.URL(), "wh", "the lane's RSS", func(w persistence.WorkerInfo) bool {
		return len(w.Lanes) == 1 && w.Lanes[0].Health != nil && w.Lanes[0].Health.RSSMB > 0
	})
	require.Empty(t, w.Lanes[0].Skipped)
	require.Empty(t, w.Skipped)
}

// sickLaneDriver is the simulated driver with health: lane 0 reports
// renderer crashes until healed, and every job records its lane.
type sickLaneDriver struct {
	agent.SimulatedDriver
	lanes  int
	healed atomic.Bool
	mu     sync.Mutex
	ran    []int // the lane of each job, in start order
}

func (d *sickLaneDriver) Health() agent.DriverHealth {
	h := make([]messages.LaneHealth, d.lanes)
	if !d.healed.Load() {
		h[0].Crashes10m = 5
	}
	return agent.DriverHealth{Lanes: h}
}

func (d *sickLaneDriver) Run(ctx context.Context, lane int, job agent.Job, emit func(string) error) (agent.Result, error) {
	d.mu.Lock()
	d.ran = append(d.ran, lane)
	d.mu.Unlock()
	return d.SimulatedDriver.Run(ctx, lane, job, emit)
}

func (d *sickLaneDriver) lanesRun() []int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.ran)
}

// TestWorkerAvoidsSkippedLane, with a real agent: a worker of three lanes
// reports lane 0 crashing; the hub skips it and tells the worker, whose
// jobs then run on lanes 1 and 2 only (lane 0, never used, is the
// agent's lane free the longest, where the first job would land). Once
// lane 0 reports healthy, the hub says so and the next job runs there.
func TestWorkerAvoidsSkippedLane(t *testing.T) {
	cfg := testConfig(t)
	require.NoError(t, cfg.Set("scheduler.max_lane_crashes_10m", "2"))
	h := startTestHub(t, cfg)
	url := h.URL()
	drv := &sickLaneDriver{lanes: 3}
	a, err := agent.New(agent.Config{HubURLs: []string{url}, ID: "wsick", Lanes: drv.lanes, DriverImpl: drv, Logger: testLogger(t)})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = a.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	waitWorker(t, url, "wsick", "lane 0 skipped", func(w persistence.WorkerInfo) bool {
		return w.Alive && len(w.Lanes) == 3 && w.Lanes[0].Skipped == persistence.HealthSkipCrashes
	})

	var ids []string
	for range 6 {
		ids = append(ids, submit(t, url, `{"mode":"noop","params":{"sleep_ms":150}}`).ID)
	}
	for _, id := range ids {
		j := waitFinal(t, url, id, 20*time.Second)
		require.Equal(t, persistence.StatusSucceeded, j.Status, "job %s: %s %s", id, j.Reason, j.Error)
		require.NotEqual(t, drv.LaneURL("wsick", 0), j.Lane, "job %s ran on the skipped lane", id)
	}
	ran := drv.lanesRun()
	require.Len(t, ran, len(ids))
	require.NotContains(t, ran, 0, "lanes run: %v", ran)

	drv.healed.Store(true) // the agent's next health check (2 s) reports it
	waitWorker(t, url, "wsick", "lane 0 healthy again", func(w persistence.WorkerInfo) bool {
		return len(w.Lanes) == 3 && w.Lanes[0].Health != nil && w.Lanes[0].Skipped == ""
	})
	j := waitFinal(t, url, submit(t, url, `{"mode":"noop"}`).ID, 20*time.Second)
	require.Equal(t, persistence.StatusSucceeded, j.Status, "%s %s", j.Reason, j.Error)
	require.Equal(t, drv.LaneURL("wsick", 0), j.Lane, "a lane healthy again, free the longest (never used), takes the next job")
}
