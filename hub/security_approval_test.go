package hub

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/internal/credential"
	"github.com/paprika-hub/paprika/messages"
	"github.com/paprika-hub/paprika/persistence"
)

// patchWorker sends PATCH /workers/{id} and decodes the worker it answers.
func patchWorker(t *testing.T, url, id, body string) (int, persistence.WorkerInfo, []byte) {
	t.Helper()
	st, b := do(t, "PATCH", url+"/workers/"+id, body)
	var w persistence.WorkerInfo
	if st == http.StatusOK {
		require.NoError(t, json.Unmarshal(b, &w), string(b))
	}
	return st, w, b
}

// requireStaysQueued checks that a job is not placed for a while: no
// worker eligible for it may exist.
func requireStaysQueued(t *testing.T, url, id, why string) {
	t.Helper()
	require.Never(t, func() bool {
		j := getJob(t, url, id)
		return j.Status != persistence.StatusQueued || j.WorkerID != ""
	}, time.Second, 50*time.Millisecond, why)
}

// With auth.worker_approval a new worker id links and is listed as
// pending, with what it reports, but gets no work while an approved worker
// beside it runs jobs; PATCH status active approves it, and the approval
// outlives its registry record and the hub itself; PATCH status pending
// revokes it.
func TestSecurityWorkerApprovalGatesNewWorkers(t *testing.T) {
	cfg := testConfig(t)
	require.NoError(t, cfg.Set("auth.worker_approval", "true"))
	require.NoError(t, cfg.Set("worker.heartbeat_interval", "200ms"))
	require.NoError(t, cfg.Set("worker.alive_window", "1s"))
	require.NoError(t, cfg.Set("reconciler.orphan_grace", "1s"))
	h := startTestHub(t, cfg)
	url := h.URL()
	pending := func(w persistence.WorkerInfo) bool { return w.Connected && w.Status == persistence.WorkerPending }
	active := func(w persistence.WorkerInfo) bool { return w.Connected && w.Status == persistence.WorkerActive }

	stopOK := startAgentB(t, url, "w-ok", 1)
	defer stopOK()
	waitWorker(t, url, "w-ok", "pending", pending)
	st, w, b := patchWorker(t, url, "w-ok", `{"status":"active"}`)
	require.Equal(t, http.StatusOK, st, string(b))
	require.Equal(t, persistence.WorkerActive, w.Status)

	stopNew := startAgentB(t, url, "w-new", 1)
	defer func() { stopNew() }()
	seen := waitWorker(t, url, "w-new", "pending", pending)
	require.NotEmpty(t, seen.Lanes, "a pending worker shows what it reports")
	require.NotEmpty(t, seen.LanIP)
	require.Equal(t, 1, seen.ReportedMaxConcurrent)

	// The approved worker takes a long job; the next one waits rather than
	// go to the pending worker.
	busy := submit(t, url, `{"mode":"noop","params":{"sleep_ms":2500}}`)
	require.Eventually(t, func() bool { return getJob(t, url, busy.ID).WorkerID == "w-ok" }, 10*time.Second, 20*time.Millisecond)
	waiting := submit(t, url, `{"mode":"noop","params":{"lines":2}}`)
	requireStaysQueued(t, url, waiting.ID, "a pending worker gets no job")
	st, _, b = patchWorker(t, url, "w-new", `{"status":"drain"}`)
	require.Equal(t, http.StatusConflict, st, "drain is for approved workers: %s", b)
	require.Equal(t, "not_approved", errCode(t, b))
	st, _, b = patchWorker(t, url, "w-nobody", `{"status":"active"}`)
	require.Equal(t, http.StatusNotFound, st, "an unknown id cannot be approved: %s", b)
	require.Equal(t, "not_found", errCode(t, b))

	// Approved, it gets the job.
	st, w, b = patchWorker(t, url, "w-new", `{"status":"active"}`)
	require.Equal(t, http.StatusOK, st, string(b))
	require.Equal(t, persistence.WorkerActive, w.Status)
	got := waitFinal(t, url, waiting.ID, 10*time.Second)
	require.Equal(t, persistence.StatusSucceeded, got.Status)
	require.Equal(t, "w-new", got.WorkerID)
	got = waitFinal(t, url, busy.ID, 10*time.Second)
	require.Equal(t, persistence.StatusSucceeded, got.Status, "the approved worker's job ran beside it")
	require.Equal(t, "w-ok", got.WorkerID)

	// Away until its registry record expired, then back: still approved.
	stopNew()
	require.Eventually(t, func() bool {
		_, err := h.stores.Workers.Get(t.Context(), "w-new")
		return errors.Is(err, persistence.ErrNotFound)
	}, 15*time.Second, 50*time.Millisecond, "the registry record of a worker away expires")
	stopNew = startAgentB(t, url, "w-new", 1)
	waitWorker(t, url, "w-new", "active after its record expired", active)
	st, _, b = patchWorker(t, url, "w-ok", `{"status":"standby"}`)
	require.Equal(t, http.StatusOK, st, "standby works on an approved worker: %s", b)
	again := submit(t, url, `{"mode":"noop"}`)
	got = waitFinal(t, url, again.ID, 10*time.Second)
	require.Equal(t, persistence.StatusSucceeded, got.Status)
	require.Equal(t, "w-new", got.WorkerID)

	// A restarted hub (its embedded registry gone) knows the approval.
	stopNew()
	stopOK()
	require.NoError(t, h.Stop(context.Background()))
	h = startTestHub(t, cfg)
	url = h.URL()
	stopNew = startAgentB(t, url, "w-new", 1)
	stopFresh := startAgentB(t, url, "w-fresh", 1)
	defer stopFresh()
	waitWorker(t, url, "w-new", "active after a hub restart", active)
	waitWorker(t, url, "w-fresh", "pending", pending)

	// Revoked, it is pending again and takes no new job; approving another
	// worker places the job there.
	st, w, b = patchWorker(t, url, "w-new", `{"status":"pending"}`)
	require.Equal(t, http.StatusOK, st, string(b))
	require.Equal(t, persistence.WorkerPending, w.Status)
	later := submit(t, url, `{"mode":"noop"}`)
	requireStaysQueued(t, url, later.ID, "a revoked worker gets no new job")
	stopNew()
	stopNew = startAgentB(t, url, "w-new", 1)
	waitWorker(t, url, "w-new", "still pending after a reconnect", pending)
	st, _, b = patchWorker(t, url, "w-fresh", `{"status":"active"}`)
	require.Equal(t, http.StatusOK, st, string(b))
	got = waitFinal(t, url, later.ID, 10*time.Second)
	require.Equal(t, persistence.StatusSucceeded, got.Status)
	require.Equal(t, "w-fresh", got.WorkerID)
}

// Without auth.worker_approval nothing changes: a new worker is active at
// once, and pending is no status an operator can set.
func TestSecurityWorkerApprovalOffChangesNothing(t *testing.T) {
	h := startTestHub(t, testConfig(t))
	url := h.URL()
	startAgent(t, url, "w-open", 1)
	waitWorker(t, url, "w-open", "active", func(w persistence.WorkerInfo) bool {
		return w.Connected && w.Status == persistence.WorkerActive
	})
	j := submit(t, url, `{"mode":"noop"}`)
	require.Equal(t, persistence.StatusSucceeded, waitFinal(t, url, j.ID, 10*time.Second).Status)
	st, _, b := patchWorker(t, url, "w-open", `{"status":"pending"}`)
	require.Equal(t, http.StatusBadRequest, st, string(b))
	require.Equal(t, "bad_status", errCode(t, b))
	require.Nil(t, h.stores.Approvals, "no approval store is opened")
}

// dialRawLinkRunning links as id with token, its hello listing running.
func dialRawLinkRunning(t *testing.T, hubURL, id string, lanes int, token string, running ...string) *rawLink {
	t.Helper()
	return dialRawLinkHello(t, hubURL, id, token, messages.Frame{Type: messages.TypeHello, WorkerID: id, LanIP: "127.0.0.1", Version: "test",
		Capabilities: &messages.Capabilities{MaxConcurrent: lanes, LaneURLs: laneURLs(id, lanes), Drivers: []string{"simulated"}},
		Stats:        &messages.Stats{InFlight: len(running)}, Running: running})
}

// workerNow reads one worker of GET /workers.
func workerNow(t *testing.T, url, id string) persistence.WorkerInfo {
	t.Helper()
	var w persistence.WorkerInfo
	waitWorker(t, url, id, "listed", func(got persistence.WorkerInfo) bool { w = got; return true })
	return w
}

// A running list counts only jobs the job store says the worker holds: an
// impostor with a valid credential of its own, listing another worker's
// job, ids it made up and a session's slot, holds none of them — its
// in_flight and running stay empty, each refusal is counted once and
// answered (an error frame; a cancel_job for the job that exists) — and
// the honest worker's job runs once, to its end.
func TestSecurityRunningListAdoptsOnlyHeldJobs(t *testing.T) {
	const secret = "test-worker-secret-0123456789"
	cfg := testConfig(t)
	require.NoError(t, cfg.Set("auth.worker_secret", secret))
	h := startTestHub(t, cfg)
	url := h.URL()
	honest := dialRawLinkAs(t, url, "w-honest", 1, credential.Worker(secret, "w-honest"))
	job := submit(t, url, `{"mode":"noop"}`)
	a := honest.next(5 * time.Second)
	require.Equal(t, messages.TypeAssignJob, a.Type)
	require.Equal(t, job.ID, a.JobID)
	honest.send(messages.Frame{Type: messages.TypeJobStarted, JobID: a.JobID, Attempt: a.Attempt, Lane: "sim://w-honest/lane/0"})

	imp := dialRawLinkRunning(t, url, "w-imp", 4, credential.Worker(secret, "w-imp"), job.ID)
	claims := []string{job.ID, persistence.NewJobID(), "made-up-job", "session:s-not-mine"}
	imp.heartbeat(claims...)
	refused := func() int64 { return h.Metrics().Get("paprika_fenced_reports_total", "kind=running") }
	require.Eventually(t, func() bool { return refused() == int64(len(claims)) }, 10*time.Second, 10*time.Millisecond,
		"every claim refused and counted once (hello's and heartbeat's alike)")
	errs, cancels := 0, 0
	for errs < len(claims) || cancels < 1 {
		f := imp.next(5 * time.Second)
		switch f.Type {
		case messages.TypeError:
			require.Equal(t, "not_holder", f.Code, f.Message)
			errs++
		case messages.TypeCancelJob:
			require.Equal(t, job.ID, f.JobID, "only the job that exists is cancelled")
			cancels++
		default:
			t.Fatalf("the impostor was answered %+v (errors %d, cancels %d)", f, errs, cancels)
		}
	}
	w := workerNow(t, url, "w-imp")
	require.Zero(t, w.InFlight, "no claim holds a slot")
	require.Empty(t, w.Running)
	require.True(t, w.Connected, "a refused report costs no link")

	// Said again, the same claims are not looked up, counted or answered
	// again; the impostor's lanes stay free for its own work.
	prev := w.ReportedAt
	imp.heartbeat(claims...)
	waitWorker(t, url, "w-imp", "the second report", func(w persistence.WorkerInfo) bool { return w.ReportedAt.After(prev) })
	require.Equal(t, int64(len(claims)), refused())
	require.Equal(t, "", imp.next(300*time.Millisecond).Type)
	w = workerNow(t, url, "w-imp")
	require.Zero(t, w.InFlight)
	require.Empty(t, w.Running)

	hw := workerNow(t, url, "w-honest")
	require.Equal(t, 1, hw.InFlight)
	require.Equal(t, []string{job.ID}, hw.Running)
	honest.heartbeat(job.ID)
	honest.send(messages.Frame{Type: messages.TypeJobDone, JobID: a.JobID, Attempt: a.Attempt, Result: []byte(`{"by":"honest"}`)})
	got := waitFinal(t, url, job.ID, 10*time.Second)
	require.Equal(t, persistence.StatusSucceeded, got.Status)
	require.Equal(t, "w-honest", got.WorkerID)
	require.Equal(t, 1, got.Attempts, "run once")
	require.JSONEq(t, `{"by":"honest"}`, string(got.Result))
	for f := honest.next(300 * time.Millisecond); f.Type != ""; f = honest.next(300 * time.Millisecond) {
		require.NotEqual(t, messages.TypeAssignJob, f.Type, "the job is never placed again: %+v", f)
	}
}

// Honest recovery: a worker that links to a restarted hub (its embedded
// registry gone) listing the job it still runs keeps it — the store says
// it holds the attempt — and reports its end.
func TestSecurityRunningListKeepsHeldJobsAcrossHubRestart(t *testing.T) {
	cfg := testConfig(t)
	// The worker is away while the hub restarts: not for long enough to
	// count as lost.
	require.NoError(t, cfg.Set("reconciler.orphan_grace", "60s"))
	h := startTestHub(t, cfg)
	l := dialRawLink(t, h.URL(), "w-back", 2)
	job := submit(t, h.URL(), `{"mode":"noop"}`)
	a := l.next(5 * time.Second)
	require.Equal(t, messages.TypeAssignJob, a.Type)
	l.send(messages.Frame{Type: messages.TypeJobStarted, JobID: a.JobID, Attempt: a.Attempt, Lane: "sim://w-back/lane/0"})
	require.Eventually(t, func() bool { return getJob(t, h.URL(), job.ID).Lane != "" }, 5*time.Second, 10*time.Millisecond)
	require.NoError(t, h.Stop(context.Background()))

	h = startTestHub(t, cfg)
	url := h.URL()
	back := dialRawLinkRunning(t, url, "w-back", 2, "", job.ID)
	w := waitWorker(t, url, "w-back", "its job adopted", func(w persistence.WorkerInfo) bool { return w.InFlight == 1 })
	require.Equal(t, []string{job.ID}, w.Running)
	require.Zero(t, h.Metrics().Get("paprika_fenced_reports_total", "kind=running"))
	back.send(messages.Frame{Type: messages.TypeJobDone, JobID: a.JobID, Attempt: a.Attempt, Result: []byte(`{}`)})
	got := waitFinal(t, url, job.ID, 10*time.Second)
	require.Equal(t, persistence.StatusSucceeded, got.Status)
	require.Equal(t, 1, got.Attempts)
}
