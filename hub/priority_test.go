package hub

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/actors/grains"
	"github.com/paprika-hub/paprika/messages"
	"github.com/paprika-hub/paprika/persistence"
)

type apiError struct {
	Error struct {
		Code       string `json:"code"`
		Message    string `json:"message"`
		Field      string `json:"field"`
		WaitingFor string `json:"waiting_for"`
	} `json:"error"`
}

func decodeAPIError(t *testing.T, b []byte) apiError {
	t.Helper()
	var e apiError
	require.NoError(t, json.Unmarshal(b, &e), string(b))
	return e
}

// waitAliveWorkers waits until the fleet lists n alive workers.
func waitAliveWorkers(t *testing.T, h *Hub, n int) {
	t.Helper()
	require.Eventually(t, func() bool {
		ws, err := h.Workers(context.Background())
		if err != nil {
			return false
		}
		alive := 0
		for _, w := range ws {
			if w.Alive && len(w.Lanes) > 0 {
				alive++
			}
		}
		return alive == n
	}, 10*time.Second, 10*time.Millisecond)
}

func TestPriorityValidation(t *testing.T) {
	h := startTestHub(t, testConfig(t))
	for _, body := range []string{`{"mode":"noop","priority":10}`, `{"mode":"noop","priority":-1}`} {
		st, b := do(t, "POST", h.URL()+"/jobs", body)
		require.Equal(t, http.StatusBadRequest, st, string(b))
		e := decodeAPIError(t, b)
		require.Equal(t, "bad_priority", e.Error.Code)
		require.Equal(t, "priority", e.Error.Field)
		require.Contains(t, e.Error.Message, "priority")
		require.Contains(t, e.Error.Message, "0..9")
	}
	for _, body := range []string{`{"mode":"noop","priority":"high"}`, `{"mode":"noop","priority":2.5}`,
		`{"mode":"noop","require_capacity":"yes"}`} {
		st, b := do(t, "POST", h.URL()+"/jobs", body)
		require.Equal(t, http.StatusBadRequest, st, string(b))
		require.Equal(t, "bad_json", decodeAPIError(t, b).Error.Code)
	}
	def := submit(t, h.URL(), `{"mode":"noop"}`)
	require.Equal(t, persistence.DefaultPriority, def.Priority)
	require.Equal(t, persistence.DefaultPriority, getJob(t, h.URL(), def.ID).Priority)
	for _, p := range []int{0, 9} {
		j := submit(t, h.URL(), `{"mode":"noop","priority":`+string(rune('0'+p))+`}`)
		require.Equal(t, p, j.Priority)
		require.Equal(t, p, getJob(t, h.URL(), j.ID).Priority, "stored")
	}
}

// TestWaitingForAndRequireCapacity: with only a simulated (noop) worker
// alive, a fetch job shows what it waits for and require_capacity refuses
// one; a noop job queued behind a busy lane is taken (capacity exists,
// only busy); once a chromium worker is alive the fetch jobs run.
func TestWaitingForAndRequireCapacity(t *testing.T) {
	h := startTestHub(t, testConfig(t))
	page := serveFormPage(t)
	fetch := `{"mode":"fetch","params":{"url":"` + page.URL + `","screenshot":false}}`

	// No worker at all: even a noop job has nowhere to go.
	st, b := do(t, "POST", h.URL()+"/jobs", `{"mode":"noop","require_capacity":true}`)
	require.Equal(t, http.StatusServiceUnavailable, st, string(b))
	require.Equal(t, "no_capacity", decodeAPIError(t, b).Error.Code)
	require.Equal(t, "a worker with a lane", decodeAPIError(t, b).Error.WaitingFor)

	startAgent(t, h.URL(), "wa", 1)
	waitAliveWorkers(t, h, 1)
	// The cache of the fleet's view lives a second: poll past it.
	var queued persistence.Job
	require.Eventually(t, func() bool {
		st, b = do(t, "POST", h.URL()+"/jobs", `{"mode":"noop","params":{"sleep_ms":60000},"require_capacity":true}`)
		if st != http.StatusCreated {
			return false
		}
		require.NoError(t, json.Unmarshal(b, &queued))
		return true
	}, 5*time.Second, 50*time.Millisecond, "noop with a noop worker alive: %d %s", st, b)
	blocker := queued
	require.Eventually(t, func() bool { return getJob(t, h.URL(), blocker.ID).Status == persistence.StatusRunning },
		10*time.Second, 10*time.Millisecond)

	// The one lane is busy: a noop job still queues, waiting for nothing new.
	st, b = do(t, "POST", h.URL()+"/jobs", `{"mode":"noop","require_capacity":true}`)
	require.Equal(t, http.StatusCreated, st, string(b))
	require.NoError(t, json.Unmarshal(b, &queued))
	j := getJob(t, h.URL(), queued.ID)
	require.Equal(t, persistence.StatusQueued, j.Status)
	require.Empty(t, j.WaitingFor)

	waiting := submit(t, h.URL(), fetch)
	j = getJob(t, h.URL(), waiting.ID)
	require.Equal(t, persistence.StatusQueued, j.Status)
	require.Equal(t, "a worker with a chromium lane", j.WaitingFor)
	st, b = do(t, "POST", h.URL()+"/jobs", `{"mode":"fetch","params":{"url":"`+page.URL+`"},"require_capacity":true}`)
	require.Equal(t, http.StatusServiceUnavailable, st, string(b))
	e := decodeAPIError(t, b)
	require.Equal(t, "no_capacity", e.Error.Code)
	require.Equal(t, "a worker with a chromium lane", e.Error.WaitingFor)

	// A chromium worker comes: the waiting job runs, and a new one is taken.
	startChromiumAgent(t, h.URL(), "wc", 1)
	waitAliveWorkers(t, h, 2)
	require.Equal(t, persistence.StatusSucceeded, waitFinal(t, h.URL(), waiting.ID, 60*time.Second).Status)
	require.Eventually(t, func() bool {
		st, b = do(t, "POST", h.URL()+"/jobs", `{"mode":"fetch","params":{"url":"`+page.URL+`","screenshot":false},"require_capacity":true}`)
		return st == http.StatusCreated
	}, 5*time.Second, 50*time.Millisecond, "fetch with a chromium worker alive: %d %s", st, b)
	require.NoError(t, json.Unmarshal(b, &j))
	require.Equal(t, persistence.StatusSucceeded, waitFinal(t, h.URL(), j.ID, 60*time.Second).Status)
	// Free the noop lane so the worker stops at once.
	st, b = do(t, "POST", h.URL()+"/jobs/"+blocker.ID+"/cancel", "")
	require.Equal(t, http.StatusOK, st, string(b))
}

// queueFivesThenANine queues three priority-5 jobs, then a priority-9
// one, behind a running blocker, and waits until the scheduler holds all
// five. A submit is answered once the job is stored; its grain tells the
// scheduler a moment later. The lane must free only once the scheduler
// holds all five (the blocker's enqueue included), else on a loaded
// machine it places a five before it has heard of the nine.
func queueFivesThenANine(t *testing.T, h *Hub) (fives []string, nine string) {
	t.Helper()
	for range 3 {
		fives = append(fives, submit(t, h.URL(), `{"mode":"noop","params":{"lines":1}}`).ID)
	}
	nine = submit(t, h.URL(), `{"mode":"noop","priority":9,"params":{"lines":1}}`).ID
	require.Eventually(t, func() bool { return metricValue(h.deps.Metrics.SchedEnqueues) >= 5 },
		10*time.Second, 5*time.Millisecond, "the scheduler heard of the queued jobs")
	return fives, nine
}

// TestPriorityJumpsTheQueue: one lane, busy; three priority-5 jobs queue,
// then a priority-9 one. When the lane frees, the 9 runs first, then the
// 5s oldest first.
//
// The blocker ends on its own rather than by a cancel: a cancel frees the
// hub's slot before the worker's lane (the worker hears the cancel after),
// so the 9 could be placed on a lane still busy and rejected by the worker
// — what TestRejectedJobKeepsItsPlace is about, not this test.
func TestPriorityJumpsTheQueue(t *testing.T) {
	h := startTestHub(t, testConfig(t))
	startAgent(t, h.URL(), "wa", 1)
	blocker := submit(t, h.URL(), `{"mode":"noop","params":{"sleep_ms":4000}}`)
	require.Eventually(t, func() bool { return getJob(t, h.URL(), blocker.ID).Status == persistence.StatusRunning },
		10*time.Second, 10*time.Millisecond)
	fives, nine := queueFivesThenANine(t, h)
	require.Equal(t, persistence.StatusRunning, getJob(t, h.URL(), blocker.ID).Status,
		"the blocker ended before the scheduler heard of every queued job: nothing was tested")

	order := append([]string{nine}, fives...)
	var started []time.Time
	for _, id := range order {
		j := waitFinal(t, h.URL(), id, 20*time.Second)
		require.Equal(t, persistence.StatusSucceeded, j.Status)
		started = append(started, j.StartedAt)
	}
	for i := 1; i < len(started); i++ {
		require.True(t, started[i-1].Before(started[i]), "job %s started at %v, before %s at %v",
			order[i], started[i], order[i-1], started[i-1])
	}
}

// TestPrioritiesSurviveAHubRestart: jobs queued with no worker are in the
// store only when the hub stops; the next hub's scheduler rebuilds its
// queue from the store and places them by priority, oldest first within
// one.
func TestPrioritiesSurviveAHubRestart(t *testing.T) {
	cfg := testConfig(t)
	h1 := startTestHub(t, cfg)
	var order []string // the order they must run in
	five1 := submit(t, h1.URL(), `{"mode":"noop","params":{"lines":1}}`).ID
	zero := submit(t, h1.URL(), `{"mode":"noop","priority":0,"params":{"lines":1}}`).ID
	five2 := submit(t, h1.URL(), `{"mode":"noop","params":{"lines":1}}`).ID
	nine := submit(t, h1.URL(), `{"mode":"noop","priority":9,"params":{"lines":1}}`).ID
	order = append(order, nine, five1, five2, zero)
	require.NoError(t, h1.Stop(context.Background()))

	h2 := startTestHub(t, cfg)
	startAgent(t, h2.URL(), "wa", 1)
	var started []time.Time
	for _, id := range order {
		j := waitFinal(t, h2.URL(), id, 20*time.Second)
		require.Equal(t, persistence.StatusSucceeded, j.Status)
		started = append(started, j.StartedAt)
	}
	for i := 1; i < len(started); i++ {
		require.True(t, started[i-1].Before(started[i]), "job %s started at %v, before %s at %v",
			order[i], started[i], order[i-1], started[i-1])
	}
}

// TestRejectedJobKeepsItsPlace: a worker that rejects an assignment (no
// lane free after all, by its own count) gets no other job until it
// reports again — a lane that stays busy costs one rejection per report,
// not one per placement — and then that job again, queued before its slot
// went, not a queued job of lower priority.
func TestRejectedJobKeepsItsPlace(t *testing.T) {
	h := startTestHub(t, testConfig(t))
	l := dialRawLink(t, h.URL(), "w-rej", 1)
	waitAliveWorkers(t, h, 1)
	const lane = "sim://w-rej/lane/0"

	blocker := submit(t, h.URL(), `{"mode":"noop","params":{"lines":1}}`)
	a := nextAssign(l, 5*time.Second)
	require.Equal(t, blocker.ID, a.JobID)
	l.send(messages.Frame{Type: messages.TypeJobStarted, JobID: a.JobID, Attempt: a.Attempt, Lane: lane})
	fives, nine := queueFivesThenANine(t, h)

	l.send(messages.Frame{Type: messages.TypeJobDone, JobID: a.JobID, Attempt: a.Attempt, Result: []byte(`{}`)})
	const rejections = 3
	for i := range rejections {
		f := nextAssign(l, 5*time.Second)
		require.Equal(t, nine, f.JobID, "assignment %d after %d rejections of the nine", i+1, i)
		l.send(messages.Frame{Type: messages.TypeJobFailed, JobID: f.JobID, Attempt: f.Attempt,
			Reason: persistence.ReasonRejected, Error: "no free lane (1 of 1 busy)"})
		// The slot went (the worker's in_flight is 0), yet nothing is
		// placed there until the worker reports: its lane may still be
		// busy.
		waitWorker(t, h.URL(), "w-rej", "the rejected job's slot freed", func(w persistence.WorkerInfo) bool { return w.InFlight == 0 })
		require.Empty(t, nextAssign(l, 300*time.Millisecond).JobID, "a job placed on a worker that said it has no lane free")
		l.send(messages.Frame{Type: messages.TypeHeartbeat, Stats: &messages.Stats{}})
	}
	order := append([]string{nine}, fives...)
	for _, id := range order {
		f := nextAssign(l, 5*time.Second)
		require.Equal(t, id, f.JobID, "assignments in priority order, then oldest first")
		l.send(messages.Frame{Type: messages.TypeJobStarted, JobID: f.JobID, Attempt: f.Attempt, Lane: lane})
		l.send(messages.Frame{Type: messages.TypeJobDone, JobID: f.JobID, Attempt: f.Attempt, Result: []byte(`{}`)})
	}
	for _, id := range order {
		j := waitFinal(t, h.URL(), id, 10*time.Second)
		require.Equal(t, persistence.StatusSucceeded, j.Status)
		require.Equal(t, 1, j.Attempts, "a rejection returns its attempt")
	}
	require.Equal(t, float64(rejections), metricValue(h.deps.Metrics.AssignmentsRejected))
}

// TestCanceledJobHoldsItsSlotUntilTheLaneFrees: a job the hub ends while
// the worker runs it (a cancel; a deadline alike) keeps its worker slot
// until the worker reports the attempt's end, or stops listing it: the
// lane is busy until the job stops, and a job placed on it meanwhile would
// only be rejected — again and again while the lane takes to stop.
func TestCanceledJobHoldsItsSlotUntilTheLaneFrees(t *testing.T) {
	h := startTestHub(t, testConfig(t))
	l := dialRawLink(t, h.URL(), "w-stop", 1)
	waitAliveWorkers(t, h, 1)
	const lane = "sim://w-stop/lane/0"
	run := func(id string) messages.Frame {
		t.Helper()
		a := nextAssign(l, 5*time.Second)
		require.Equal(t, id, a.JobID)
		l.send(messages.Frame{Type: messages.TypeJobStarted, JobID: a.JobID, Attempt: a.Attempt, Lane: lane})
		return a
	}
	// queued submits a job and waits until the scheduler has heard of
	// enqueues jobs in all.
	queued := func(enqueues float64) string {
		t.Helper()
		id := submit(t, h.URL(), `{"mode":"noop","params":{"lines":1}}`).ID
		require.Eventually(t, func() bool { return metricValue(h.deps.Metrics.SchedEnqueues) >= enqueues },
			10*time.Second, 5*time.Millisecond, "the scheduler heard of the queued job")
		return id
	}
	// cancelRunning cancels id; nothing else may come (nextAssign skips
	// the cancel_job frame) while the worker still runs it.
	cancelRunning := func(id string) {
		t.Helper()
		st, b := do(t, "POST", h.URL()+"/jobs/"+id+"/cancel", "")
		require.Equal(t, http.StatusOK, st, string(b))
		require.Equal(t, persistence.StatusCanceled, getJob(t, h.URL(), id).Status)
		require.Empty(t, nextAssign(l, 500*time.Millisecond).JobID, "a job placed on the lane still stopping")
	}

	// Ended by the worker's report of the attempt.
	a := run(submit(t, h.URL(), `{"mode":"noop","params":{"lines":1}}`).ID)
	next := queued(2)
	cancelRunning(a.JobID)
	l.send(messages.Frame{Type: messages.TypeJobFailed, JobID: a.JobID, Attempt: a.Attempt,
		Reason: persistence.ReasonCanceled, Error: "canceled"})
	b := run(next)

	// Ended by the worker no longer listing it (its report lost): the
	// slot goes at the worker's next report, SlotPruneAfter from the
	// assignment on.
	third := queued(3)
	cancelRunning(b.JobID)
	l.send(messages.Frame{Type: messages.TypeHeartbeat, Stats: &messages.Stats{}, Running: []string{b.JobID}})
	require.Empty(t, nextAssign(l, 500*time.Millisecond).JobID, "the slot went while the worker lists the job")
	time.Sleep(grains.SlotPruneAfter)
	l.send(messages.Frame{Type: messages.TypeHeartbeat, Stats: &messages.Stats{}})
	run(third)
	require.Zero(t, metricValue(h.deps.Metrics.AssignmentsRejected), "no assignment was rejected")
}
