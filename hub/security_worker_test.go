package hub

import (
	"github.com/gorilla/websocket"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"encoding/json"
	"github.com/paprika-hub/paprika/internal/credential"
	"github.com/paprika-hub/paprika/messages"
	"github.com/paprika-hub/paprika/persistence"
)

// A worker is who its credential says: with auth.worker_secret, a
// credential links as its own id only, the shared token no longer admits
// anyone, and one worker can neither upload assets to nor report for
// another's job — while both workers' honest work succeeds.
func TestSecurityWorkerCredentialIsBoundToItsID(t *testing.T) {
	const secret = "test-worker-secret-0123456789"
	cfg := testConfig(t)
	require.NoError(t, cfg.Set("auth.worker_secret", secret))
	require.NoError(t, cfg.Set("auth.worker_token", "shared-token"))
	h := startTestHub(t, cfg)
	url := h.URL()
	credA, credB := credential.Worker(secret, "w-a"), credential.Worker(secret, "w-b")

	// Impostors are refused before the upgrade.
	for _, try := range []struct{ id, token, why string }{
		{"w-b", credA, "another worker's credential"},
		{"w-a", "shared-token", "the shared token, once per-worker credentials are on"},
		{"w-a", "", "no credential"},
		{"w-a", credential.Worker("another-secret-0123456789", "w-a"), "a credential of another secret"},
	} {
		_, err := dialLink(url, try.id, try.token)
		require.ErrorContains(t, err, "HTTP 401", try.why)
	}

	a := dialRawLinkAs(t, url, "w-a", 1, credA)
	b := dialRawLinkAs(t, url, "w-b", 1, credB)
	first, second := submit(t, url, `{"mode":"noop"}`), submit(t, url, `{"mode":"noop"}`)
	onA, onB := a.next(5*time.Second), b.next(5*time.Second)
	require.Equal(t, messages.TypeAssignJob, onA.Type)
	require.Equal(t, messages.TypeAssignJob, onB.Type)
	require.ElementsMatch(t, []string{first.ID, second.ID}, []string{onA.JobID, onB.JobID})
	a.send(messages.Frame{Type: messages.TypeJobStarted, JobID: onA.JobID, Attempt: onA.Attempt, Lane: "sim://w-a/lane/0"})

	// B tries to upload into, and to finish, A's job.
	st, body := do(t, "PUT", url+"/jobs/"+onA.JobID+"/assets/evil.html", "<script>1</script>",
		"Content-Type", "text/html", "Authorization", "Bearer "+credB)
	require.Equal(t, http.StatusForbidden, st, string(body))
	require.Contains(t, string(body), "not_holder")
	b.send(messages.Frame{Type: messages.TypeJobDone, JobID: onA.JobID, Attempt: onA.Attempt, Result: []byte(`{"forged":true}`)})
	require.Never(t, func() bool { return getJob(t, url, onA.JobID).Status.Final() }, 500*time.Millisecond, 20*time.Millisecond,
		"a report of a job the sender does not hold changes nothing")

	// A's own upload and result count.
	st, body = do(t, "PUT", url+"/jobs/"+onA.JobID+"/assets/page.html", "<html>a</html>",
		"Content-Type", "text/html", "Authorization", "Bearer "+credA)
	require.Equal(t, http.StatusNoContent, st, string(body))
	a.send(messages.Frame{Type: messages.TypeJobDone, JobID: onA.JobID, Attempt: onA.Attempt, Result: []byte(`{"by":"a"}`)})
	b.send(messages.Frame{Type: messages.TypeJobStarted, JobID: onB.JobID, Attempt: onB.Attempt, Lane: "sim://w-b/lane/0"})
	b.send(messages.Frame{Type: messages.TypeJobDone, JobID: onB.JobID, Attempt: onB.Attempt, Result: []byte(`{"by":"b"}`)})
	for _, j := range []struct{ id, by string }{{onA.JobID, "a"}, {onB.JobID, "b"}} {
		got := waitFinal(t, url, j.id, 10*time.Second)
		require.Equal(t, persistence.StatusSucceeded, got.Status, j.id)
		require.JSONEq(t, `{"by":"`+j.by+`"}`, string(got.Result), j.id)
	}
	_, err := h.stores.Assets.List(t.Context(), onA.JobID)
	require.NoError(t, err)
	names, _ := h.stores.Assets.List(t.Context(), onA.JobID)
	for _, n := range names {
		require.NotEqual(t, "evil.html", n.Name, "the refused upload stored nothing")
	}
}

// A refused id claim does not tell the caller who holds the id.
func TestSecurityIDTakenRevealsNoAddress(t *testing.T) {
	h := startTestHub(t, testConfig(t))
	url := h.URL()
	owner := dialRawLink(t, url, "w-owned", 1) // LAN IP 127.0.0.1
	_ = owner
	conn, err := dialLink(url, "w-owned", "")
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.WriteJSON(messages.Frame{Type: messages.TypeHello, WorkerID: "w-owned", LanIP: "10.9.8.7", Version: "test",
		Capabilities: &messages.Capabilities{MaxConcurrent: 1, LaneURLs: laneURLs("w-owned", 1)}, Stats: &messages.Stats{}}))
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(5*time.Second)))
	var f messages.Frame
	require.NoError(t, conn.ReadJSON(&f))
	require.Equal(t, messages.TypeError, f.Type)
	require.Equal(t, "id_taken", f.Code)
	require.NotContains(t, f.Message, "127.0.0.1", "the holder's address stays private")
}

// One bad report never costs a link: a report the hub refuses for good (a
// job that does not exist, a reason outside the enum) is answered as
// decided, so the worker drops it, and the link carries on; the job it
// named is untouched.
func TestSecurityBadReportCostsNoLink(t *testing.T) {
	h := startTestHub(t, testConfig(t))
	url := h.URL()
	l := dialRawLink(t, url, "w-bad", 1)
	// ackFor waits for the job_ack of id, passing over error frames.
	ackFor := func(id string) {
		t.Helper()
		for {
			f := l.next(10 * time.Second)
			require.NotEqual(t, "", f.Type, "no job_ack for %s", id)
			if f.Type == messages.TypeJobAck && f.JobID == id {
				return
			}
			require.Equal(t, messages.TypeError, f.Type, "%+v", f)
		}
	}
	l.send(messages.Frame{Type: messages.TypeJobDone, JobID: "no-such-job", Attempt: 1, Result: []byte(`{}`)})
	ackFor("no-such-job")

	j := submit(t, url, `{"mode":"noop"}`)
	a := l.next(5 * time.Second)
	require.Equal(t, messages.TypeAssignJob, a.Type, "the link still takes work")
	require.Equal(t, j.ID, a.JobID)
	l.send(messages.Frame{Type: messages.TypeJobStarted, JobID: j.ID, Attempt: a.Attempt, Lane: "sim://w-bad/lane/0"})
	l.send(messages.Frame{Type: messages.TypeJobFailed, JobID: j.ID, Attempt: a.Attempt, Reason: "pwned", Error: "x"})
	ackFor(j.ID)
	require.Equal(t, persistence.StatusRunning, getJob(t, url, j.ID).Status, "a refused report changes nothing")
	require.GreaterOrEqual(t, h.Metrics().Get("paprika_link_bad_frames_total"), int64(1), "and is counted")

	l.send(messages.Frame{Type: messages.TypeJobDone, JobID: j.ID, Attempt: a.Attempt, Result: []byte(`{"ok":1}`)})
	ackFor(j.ID)
	require.Equal(t, persistence.StatusSucceeded, waitFinal(t, url, j.ID, 10*time.Second).Status)
	w, err := h.stores.Workers.Get(t.Context(), "w-bad")
	require.NoError(t, err)
	require.True(t, w.Connected, "the link was never dropped")
}

// A second link for a worker whose link is alive is refused (id_taken),
// and the live one keeps its work; a link that no longer answers pings is
// displaced by the next one.
func TestSecuritySecondLinkForALiveWorkerIsRefused(t *testing.T) {
	h := startTestHub(t, testConfig(t))
	url := h.URL()
	live := dialRawLink(t, url, "w-live", 1) // its reader answers pings

	intruder, err := dialLink(url, "w-live", "")
	require.NoError(t, err)
	defer intruder.Close()
	hello := messages.Frame{Type: messages.TypeHello, WorkerID: "w-live", LanIP: "127.0.0.1", Version: "test",
		Capabilities: &messages.Capabilities{MaxConcurrent: 1, LaneURLs: laneURLs("w-live", 1)}, Stats: &messages.Stats{}}
	require.NoError(t, intruder.WriteJSON(hello))
	require.NoError(t, intruder.SetReadDeadline(time.Now().Add(10*time.Second)))
	var f messages.Frame
	require.NoError(t, intruder.ReadJSON(&f))
	require.Equal(t, messages.TypeError, f.Type, "%+v", f)
	require.Equal(t, "id_taken", f.Code)

	j := submit(t, url, `{"mode":"noop"}`)
	a := live.next(5 * time.Second)
	require.Equal(t, messages.TypeAssignJob, a.Type, "the live link keeps its work")
	require.Equal(t, j.ID, a.JobID)
	live.send(messages.Frame{Type: messages.TypeJobDone, JobID: j.ID, Attempt: a.Attempt, Result: []byte(`{}`)})
	require.Equal(t, persistence.StatusSucceeded, waitFinal(t, url, j.ID, 10*time.Second).Status)

	// A link that stops answering (nobody reads it, so no pong) is taken
	// over by the next one.
	hello.WorkerID = "w-mute"
	hello.Capabilities.LaneURLs = laneURLs("w-mute", 1)
	mute, err := dialLink(url, "w-mute", "")
	require.NoError(t, err)
	defer mute.Close()
	require.NoError(t, mute.WriteJSON(hello))
	require.NoError(t, mute.SetReadDeadline(time.Now().Add(10*time.Second)))
	require.NoError(t, mute.ReadJSON(&f))
	require.Equal(t, messages.TypeWelcome, f.Type)
	dialRawLink(t, url, "w-mute", 1) // welcomed: the mute one failed its ping
	require.GreaterOrEqual(t, h.Metrics().Get("paprika_links_refused_total"), int64(1))
}

// Operators cap a worker: PATCH /workers/{id} max_concurrent bounds the
// slots placement uses (never above what the worker reports), and 0 lifts
// the cap again.
func TestSecurityOperatorCapsAWorker(t *testing.T) {
	h := startTestHub(t, testConfig(t))
	url := h.URL()
	l := dialRawLink(t, url, "w-cap", 4)
	for _, bad := range []string{`{"max_concurrent": 5}`, `{"max_concurrent": -1}`, `{}`} {
		st, b := do(t, "PATCH", url+"/workers/w-cap", bad)
		require.Equal(t, http.StatusBadRequest, st, "%s: %s", bad, b)
	}
	st, b := do(t, "PATCH", url+"/workers/w-cap", `{"max_concurrent": 1}`)
	require.Equal(t, http.StatusOK, st, string(b))
	var w persistence.WorkerInfo
	require.NoError(t, json.Unmarshal(b, &w))
	require.Equal(t, 1, w.MaxConcurrent)
	require.Equal(t, 4, w.ReportedMaxConcurrent)
	require.Equal(t, 1, w.MaxConcurrentCap)

	jobs := []persistence.Job{submit(t, url, `{"mode":"noop"}`), submit(t, url, `{"mode":"noop"}`), submit(t, url, `{"mode":"noop"}`)}
	first := l.next(5 * time.Second)
	require.Equal(t, messages.TypeAssignJob, first.Type)
	require.Equal(t, "", l.next(500*time.Millisecond).Type, "one slot under the cap: the other jobs wait")

	st, b = do(t, "PATCH", url+"/workers/w-cap", `{"max_concurrent": 0}`)
	require.Equal(t, http.StatusOK, st, string(b))
	assigned := map[string]messages.Frame{first.JobID: first}
	for len(assigned) < len(jobs) {
		f := l.next(5 * time.Second)
		require.Equal(t, messages.TypeAssignJob, f.Type, "the cap lifted, the rest are placed")
		assigned[f.JobID] = f
	}
	for _, f := range assigned {
		l.send(messages.Frame{Type: messages.TypeJobDone, JobID: f.JobID, Attempt: f.Attempt, Result: []byte(`{}`)})
	}
	for _, j := range jobs {
		require.Equal(t, persistence.StatusSucceeded, waitFinal(t, url, j.ID, 10*time.Second).Status)
	}
}

// A session_result counts only from the session's own worker: another
// worker answering for a command of the session changes nothing.
func TestSecuritySessionResultOnlyFromItsWorker(t *testing.T) {
	h := startTestHub(t, testConfig(t))
	url := h.URL()
	owner := dialRawLinkDrivers(t, url, "w-sess", 1, "chromium")
	evil := dialRawLinkDrivers(t, url, "w-evil", 1, "simulated") // never picked for a session

	// Open: the owner answers its open command.
	opened := make(chan []byte, 1)
	go func() {
		_, b := do(t, "POST", url+"/sessions", `{"idle_timeout_s":60}`)
		opened <- b
	}()
	open := owner.next(5 * time.Second)
	require.Equal(t, messages.TypeSessionCommand, open.Type)
	owner.send(messages.Frame{Type: messages.TypeSessionResult, SessionID: open.SessionID, CommandID: open.CommandID, OK: true,
		Result: []byte(`{"lane":"chromium://w-sess/lane/0"}`)})
	require.Contains(t, string(<-opened), open.SessionID)

	answered := make(chan []byte, 1)
	go func() {
		_, b := do(t, "POST", url+"/sessions/"+open.SessionID+"/commands", `{"op":"eval","expression":"1+1"}`)
		answered <- b
	}()
	cmd := owner.next(5 * time.Second)
	require.Equal(t, messages.TypeSessionCommand, cmd.Type)
	evil.send(messages.Frame{Type: messages.TypeSessionResult, SessionID: cmd.SessionID, CommandID: cmd.CommandID, OK: true,
		Result: []byte(`"forged"`)})
	require.Eventually(t, func() bool {
		return h.Metrics().Get("paprika_fenced_reports_total", "kind=session_result") == 1
	}, 5*time.Second, 10*time.Millisecond, "the stranger's result is refused and counted")
	owner.send(messages.Frame{Type: messages.TypeSessionResult, SessionID: cmd.SessionID, CommandID: cmd.CommandID, OK: true,
		Result: []byte(`2`)})
	select {
	case b := <-answered:
		require.NotContains(t, string(b), "forged")
		require.Contains(t, string(b), "2")
	case <-time.After(10 * time.Second):
		t.Fatal("the command never got its worker's answer")
	}
}

// limits.worker_max_lanes bounds what any worker may claim: a worker
// advertising more lanes gets that many slots placed on it.
func TestSecurityWorkerMaxLanesBoundsAClaim(t *testing.T) {
	cfg := testConfig(t)
	require.NoError(t, cfg.Set("limits.worker_max_lanes", "2"))
	h := startTestHub(t, cfg)
	url := h.URL()
	l := dialRawLink(t, url, "w-greedy", 1000)
	for i := 0; i < 4; i++ {
		submit(t, url, `{"mode":"noop"}`)
	}
	for i := 0; i < 2; i++ {
		require.Equal(t, messages.TypeAssignJob, l.next(5*time.Second).Type)
	}
	require.Equal(t, "", l.next(500*time.Millisecond).Type, "two slots, whatever the worker advertises")
	ws, err := h.Workers(t.Context())
	require.NoError(t, err)
	require.Len(t, ws, 1)
	require.Equal(t, 2, ws[0].MaxConcurrent)
	require.Equal(t, 1000, ws[0].ReportedMaxConcurrent)
}

// A log counts only from the worker holding the job's attempt: another
// worker can neither append lines to it nor close it, while the holder's
// lines and end are stored.
func TestSecurityLogOnlyFromTheHolder(t *testing.T) {
	h := startTestHub(t, testConfig(t))
	url := h.URL()
	a := dialRawLink(t, url, "w-log-a", 1)
	b := dialRawLink(t, url, "w-log-b", 1)
	first, second := submit(t, url, `{"mode":"noop"}`), submit(t, url, `{"mode":"noop"}`)
	onA, onB := a.next(5*time.Second), b.next(5*time.Second)
	require.Equal(t, messages.TypeAssignJob, onA.Type)
	require.Equal(t, messages.TypeAssignJob, onB.Type)
	require.ElementsMatch(t, []string{first.ID, second.ID}, []string{onA.JobID, onB.JobID})
	a.send(messages.Frame{Type: messages.TypeJobStarted, JobID: onA.JobID, Attempt: onA.Attempt, Lane: "sim://w-log-a/lane/0"})

	// B floods A's log and tries to close it.
	for i := 0; i < 50; i++ {
		b.send(messages.Frame{Type: messages.TypeJobLog, JobID: onA.JobID, Attempt: onA.Attempt, Seq: int64(i), Line: "forged"})
	}
	b.send(messages.Frame{Type: messages.TypeJobDone, JobID: onA.JobID, Attempt: onA.Attempt, Result: []byte(`{}`)})
	require.Eventually(t, func() bool {
		return h.Metrics().Get("paprika_fenced_reports_total", "kind=log") >= 51
	}, 5*time.Second, 10*time.Millisecond, "every forged line and the forged end refused and counted")

	for i := 0; i < 3; i++ {
		a.send(messages.Frame{Type: messages.TypeJobLog, JobID: onA.JobID, Attempt: onA.Attempt, Seq: int64(i), Line: "honest"})
	}
	a.send(messages.Frame{Type: messages.TypeJobDone, JobID: onA.JobID, Attempt: onA.Attempt, Result: []byte(`{}`)})
	require.Equal(t, persistence.StatusSucceeded, waitFinal(t, url, onA.JobID, 10*time.Second).Status)
	lines, done, err := h.stores.Logs.Read(t.Context(), onA.JobID, 0, 0)
	require.NoError(t, err)
	require.True(t, done)
	require.Equal(t, []string{"honest", "honest", "honest"}, lines, "only the holder's lines, from the start")
	b.send(messages.Frame{Type: messages.TypeJobDone, JobID: onB.JobID, Attempt: onB.Attempt, Result: []byte(`{}`)})
	require.Equal(t, persistence.StatusSucceeded, waitFinal(t, url, onB.JobID, 10*time.Second).Status)
}

// A frame over the size limit is answered with an error frame and counted
// before the hub closes the link; an honest worker beside it keeps working.
func TestSecurityOversizeFrameIsAnsweredBeforeTheClose(t *testing.T) {
	h := startTestHub(t, testConfig(t))
	url := h.URL()
	honest := dialRawLink(t, url, "w-honest", 1)
	big := dialRawLink(t, url, "w-big", 1)
	before := h.Metrics().Get("paprika_link_bad_frames_total")

	line := strings.Repeat("x", messages.MaxFrameBytes)
	require.NoError(t, big.conn.WriteMessage(websocket.TextMessage, []byte(`{"type":"job_log","job_id":"j","line":"`+line+`"}`)))
	var refusal messages.Frame
	for f := range big.frames { // until the hub closes the socket
		if f.Type == messages.TypeError {
			refusal = f
		}
	}
	require.Equal(t, string(messages.CodeFrameTooLarge), refusal.Code, "the error frame came before the close")
	require.Contains(t, refusal.Message, strconv.Itoa(messages.MaxFrameBytes))
	require.Greater(t, h.Metrics().Get("paprika_link_bad_frames_total"), before, "and was counted")

	j := submit(t, url, `{"mode":"noop"}`)
	a := honest.next(5 * time.Second)
	require.Equal(t, messages.TypeAssignJob, a.Type, "the honest link still takes work")
	require.Equal(t, j.ID, a.JobID)
	honest.send(messages.Frame{Type: messages.TypeJobStarted, JobID: j.ID, Attempt: a.Attempt, Lane: "sim://w-honest/lane/0"})
	honest.send(messages.Frame{Type: messages.TypeJobDone, JobID: j.ID, Attempt: a.Attempt, Result: []byte(`{}`)})
	require.Equal(t, persistence.StatusSucceeded, waitFinal(t, url, j.ID, 10*time.Second).Status)
}
