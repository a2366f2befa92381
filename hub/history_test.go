package hub

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/persistence"
)

// TestStatsHistoryCountsTheFleet: a sample counts what finished since the
// previous one (by status and reason) and the worker's heartbeat, and
// GET /stats/history serves them.
func TestStatsHistoryCountsTheFleet(t *testing.T) {
	h := startTestHub(t, testConfig(t))
	startAgent(t, h.URL(), "wh", 2)
	ok := submit(t, h.URL(), `{"mode":"noop","params":{"lines":1}}`)
	bad := submit(t, h.URL(), `{"mode":"noop","params":{"fail":true}}`)
	for _, id := range []string{ok.ID, bad.ID} {
		require.Eventually(t, func() bool {
			st, b := do(t, "GET", h.URL()+"/jobs/"+id, "")
			var j persistence.Job
			return st == http.StatusOK && json.Unmarshal(b, &j) == nil && j.Status.Final()
		}, 10*time.Second, 20*time.Millisecond)
	}
	h.history.sample()
	st, b := do(t, "GET", h.URL()+"/stats/history", "")
	require.Equal(t, http.StatusOK, st, string(b))
	var got struct {
		IntervalS int           `json:"interval_s"`
		Samples   []fleetSample `json:"samples"`
		Workers   map[string][]heartbeat
	}
	require.NoError(t, json.Unmarshal(b, &got))
	require.Equal(t, 10, got.IntervalS)
	require.NotEmpty(t, got.Samples)
	var succeeded, failed int
	reasons := map[string]int{}
	for _, s := range got.Samples {
		succeeded += s.Succeeded
		failed += s.Failed
		for r, n := range s.FailedByReason {
			reasons[r] += n
		}
	}
	require.Equal(t, 1, succeeded, "each finished job is counted once over the samples")
	require.Equal(t, 1, failed)
	require.Equal(t, map[string]int{persistence.ReasonJobError: 1}, reasons)
	last := got.Samples[len(got.Samples)-1]
	require.Equal(t, 1, last.WorkersAlive)
	require.Equal(t, 2, last.LanesFree)
	require.NotEmpty(t, got.Workers["wh"], "the worker's heartbeat ring")

	st, b = do(t, "GET", h.URL()+"/stats/history?workers=0", "")
	require.Equal(t, http.StatusOK, st)
	require.NotContains(t, string(b), `"workers"`)
}

// TestStatsHistoryIsBounded: an hour of samples and 60 heartbeats per
// worker at most; a heartbeat is kept once, and a worker that left the
// registry loses its ring.
func TestStatsHistoryIsBounded(t *testing.T) {
	hi := newHistory(nil)
	t0 := time.Now()
	for i := range historySamples + 50 {
		at := t0.Add(time.Duration(i) * time.Second)
		ws := []persistence.WorkerInfo{{ID: "a", LastSeen: at, CPUPct: float64(i % 100)}, {ID: "b", LastSeen: t0}}
		hi.record(fleetSample{T: at, Queued: i}, ws, true)
	}
	require.Len(t, hi.ring, historySamples)
	require.Equal(t, 50, hi.ring[0].Queued, "the oldest samples went first")
	require.Equal(t, historySamples+49, hi.ring[historySamples-1].Queued)
	require.Len(t, hi.hbs["a"], heartbeatSamples)
	require.Len(t, hi.hbs["b"], 1, "one heartbeat seen in many samples is kept once")
	hi.record(fleetSample{T: time.Now()}, []persistence.WorkerInfo{{ID: "a", LastSeen: time.Now()}}, false)
	require.Contains(t, hi.hbs, "b", "a failed registry read drops no ring")
	hi.record(fleetSample{T: time.Now()}, []persistence.WorkerInfo{{ID: "a", LastSeen: time.Now()}}, true)
	require.NotContains(t, hi.hbs, "b")
}
