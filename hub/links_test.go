package hub

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/actors/grains"
	"github.com/paprika-hub/paprika/messages"
	"github.com/paprika-hub/paprika/persistence"
	"net/http"
)

// rawLink is a hand-driven worker link: the test decides what the worker
// says and when, which a real agent never gets wrong on purpose.
type rawLink struct {
	t      *testing.T
	conn   *websocket.Conn
	frames chan messages.Frame // read by one goroutine: gorilla fails every read after a timed-out one
	// skips gets the lane_skip frames, kept out of frames: the hub sends
	// one whenever the worker's skipped lanes change, which most tests
	// of frames do not care about.
	skips chan messages.Frame
}

func dialRawLink(t *testing.T, hubURL, id string, lanes int) *rawLink {
	return dialRawLinkDrivers(t, hubURL, id, lanes, "simulated")
}

// dialRawLinkDrivers is dialRawLink for a worker that says it has drivers.
func dialRawLinkDrivers(t *testing.T, hubURL, id string, lanes int, drivers ...string) *rawLink {
	return dialRawLinkWith(t, hubURL, id, lanes, "", drivers...)
}

// dialRawLinkAs links as id presenting token.
func dialRawLinkAs(t *testing.T, hubURL, id string, lanes int, token string) *rawLink {
	return dialRawLinkWith(t, hubURL, id, lanes, token, "simulated")
}

// dialRawLinkWith links as id presenting token (none when "") and says it
// has drivers.
func dialRawLinkWith(t *testing.T, hubURL, id string, lanes int, token string, drivers ...string) *rawLink {
	return dialRawLinkHello(t, hubURL, id, token, messages.Frame{Type: messages.TypeHello, WorkerID: id, LanIP: "127.0.0.1", Version: "test",
		Capabilities: &messages.Capabilities{MaxConcurrent: lanes, LaneURLs: laneURLs(id, lanes), Drivers: drivers},
		Stats:        &messages.Stats{}})
}

// dialRawLinkHello links as id presenting token and says hello, then
// waits for the welcome.
func dialRawLinkHello(t *testing.T, hubURL, id, token string, hello messages.Frame) *rawLink {
	t.Helper()
	conn, err := dialLink(hubURL, id, token)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	l := &rawLink{t: t, conn: conn, frames: make(chan messages.Frame, 64), skips: make(chan messages.Frame, 16)}
	go func() {
		defer close(l.frames)
		for {
			_, b, err := conn.ReadMessage()
			if err != nil {
				return
			}
			f, err := messages.DecodeFrame(b)
			switch {
			case err != nil:
			case f.Type == messages.TypeLaneSkip:
				select {
				case l.skips <- f:
				default: // a test that does not read them
				}
			default:
				l.frames <- f
			}
		}
	}()
	l.send(hello)
	require.Equal(t, messages.TypeWelcome, l.next(5*time.Second).Type)
	return l
}

func (l *rawLink) send(f messages.Frame) {
	b, err := json.Marshal(f)
	require.NoError(l.t, err)
	require.NoError(l.t, l.conn.WriteMessage(websocket.TextMessage, b))
}

// next returns the next frame within d; a zero Frame when none came.
// nextSkip is the next lane_skip frame, a zero Frame when none comes
// within d.
func (l *rawLink) nextSkip(d time.Duration) messages.Frame {
	select {
	case f := <-l.skips:
		return f
	case <-time.After(d):
		return messages.Frame{}
	}
}

func (l *rawLink) next(d time.Duration) messages.Frame {
	select {
	case f := <-l.frames:
		return f
	case <-time.After(d):
		return messages.Frame{}
	}
}

// dialLink opens a worker link's socket, presenting token when given; the
// error of a refused upgrade names its HTTP status.
func dialLink(hubURL, id, token string) (*websocket.Conn, error) {
	ws := "ws" + strings.TrimPrefix(hubURL, "http") + "/workers/" + id + "/link"
	hdr := http.Header{}
	if token != "" {
		hdr.Set("Authorization", "Bearer "+token)
	}
	conn, res, err := websocket.DefaultDialer.Dial(ws, hdr)
	if err != nil && res != nil {
		return nil, fmt.Errorf("%w: HTTP %d", err, res.StatusCode)
	}
	return conn, err
}

// heartbeat reports the jobs the worker holds.
func (l *rawLink) heartbeat(running ...string) {
	l.send(messages.Frame{Type: messages.TypeHeartbeat, Stats: &messages.Stats{InFlight: len(running)}, Running: running})
}

// A slot whose job the worker no longer reports is freed (the release that
// should have freed it can be lost in a topology change, and the fleet would
// shrink for good), but not while the assignment may still be in flight.
// The job itself is settled at once: the hub asks the worker, and a worker
// that restarted since the claim has lost it.
func TestUnreportedSlotIsFreed(t *testing.T) {
	h := startTestHub(t, testConfig(t))
	url := h.URL()
	l := dialRawLink(t, url, "w-raw", 1)

	a := submit(t, url, `{"mode":"noop","max_attempts":1}`)
	f := l.next(5 * time.Second)
	require.Equal(t, messages.TypeAssignJob, f.Type)
	require.Equal(t, a.ID, f.JobID)
	held := time.Now()

	// The worker starts it, then drops it without a word (as if its release
	// went to a grain activation that a topology change had just stopped).
	l.send(messages.Frame{Type: messages.TypeJobStarted, JobID: a.ID, Attempt: 1, Lane: "sim://w-raw/lane/0"})
	b := submit(t, url, `{"mode":"noop"}`)
	l.heartbeat() // composed before the assignment could have arrived: no effect
	require.Equal(t, "", l.next(time.Second).Type, "the only slot is held: nothing else may be assigned")

	for time.Since(held) < grains.SlotPruneAfter {
		l.heartbeat(a.ID) // reported: held however old
		require.Equal(t, "", l.next(500*time.Millisecond).Type)
	}
	l.heartbeat()
	assigned, asked := false, false
	for !assigned || !asked {
		f = l.next(5 * time.Second)
		switch f.Type {
		case messages.TypeAssignJob:
			require.Equal(t, b.ID, f.JobID)
			assigned = true
		case messages.TypeJobQuery:
			require.Equal(t, a.ID, f.JobID)
			asked = true
			l.send(messages.Frame{Type: messages.TypeJobStatus, JobID: a.ID, Attempt: 1, State: messages.JobStateUnknown, UptimeMS: 50})
		case messages.TypeCancelJob:
			require.Equal(t, a.ID, f.JobID) // the lost attempt is ended
		default:
			t.Fatalf("the unreported slot was not freed, or its job not asked about: got %+v", f)
		}
	}
	got := waitFinal(t, url, a.ID, 10*time.Second)
	require.Equal(t, persistence.StatusFailed, got.Status)
	require.Equal(t, persistence.ReasonWorkerLost, got.Reason)
	_, m := do(t, "GET", url+"/metrics", "")
	require.Contains(t, string(m), "paprika_worker_slots_pruned_total 1")
}

func laneURLs(id string, n int) []string {
	urls := make([]string, n)
	for i := range urls {
		urls[i] = fmt.Sprintf("sim://%s/lane/%d", id, i)
	}
	return urls
}

// An assignment the worker never got (its confirmation died with a hub or a
// socket) keeps its claim until the worker itself disowns it: then the job
// runs under a new attempt instead of failing at its deadline. An attempt
// the worker says it runs is left alone. A worker process younger than the
// claim cannot vouch for its predecessor: that attempt counts as lost.
func TestUnconfirmedAssignmentIsAskedAbout(t *testing.T) {
	h := startTestHub(t, testConfig(t))
	url := h.URL()
	l := dialRawLink(t, url, "w-raw", 3)

	lost := submit(t, url, `{"mode":"noop"}`)
	kept := submit(t, url, `{"mode":"noop"}`)
	forgot := submit(t, url, `{"mode":"noop","max_attempts":1}`)
	assigned := map[string]int{}
	for len(assigned) < 3 {
		f := l.next(5 * time.Second)
		require.Equal(t, messages.TypeAssignJob, f.Type)
		assigned[f.JobID] = f.Attempt
	}
	require.Equal(t, map[string]int{lost.ID: 1, kept.ID: 1, forgot.ID: 1}, assigned)

	// Neither is started: after AssignAuditAfter the hub asks about both.
	// The disowned one comes again under attempt 2 (maybe before the other
	// query is out).
	asked, again, canceled := map[string]bool{}, false, false
	for len(asked) < 3 || !again || !canceled {
		f := l.next(grains.AssignAuditAfter + 5*time.Second)
		switch f.Type {
		case messages.TypeJobQuery:
			require.Equal(t, 1, f.Attempt)
			require.False(t, asked[f.JobID], "asked twice about %s", f.JobID)
			asked[f.JobID] = true
			answer := messages.Frame{Type: messages.TypeJobStatus, JobID: f.JobID, Attempt: 1,
				State: messages.JobStateRunning, UptimeMS: time.Hour.Milliseconds()}
			switch f.JobID {
			case lost.ID:
				answer.State = messages.JobStateUnknown
			case forgot.ID:
				answer.State, answer.UptimeMS = messages.JobStateUnknown, 10 // restarted just now
			}
			l.send(answer)
		case messages.TypeAssignJob:
			require.Equal(t, lost.ID, f.JobID, "only the disowned job is assigned again")
			require.Equal(t, 2, f.Attempt)
			require.True(t, asked[lost.ID], "assigned again before the worker disowned it")
			again = true
		case messages.TypeCancelJob:
			require.Equal(t, forgot.ID, f.JobID, "only the lost attempt is canceled")
			canceled = true
		default:
			t.Fatalf("expected a job_query or assign_job, got %+v", f)
		}
	}
	// The other is not asked about again, nor reassigned.
	l.send(messages.Frame{Type: messages.TypeJobStarted, JobID: lost.ID, Attempt: 2, Lane: "sim://w-raw/lane/0"})
	require.Equal(t, "", l.next(grains.AssignAuditAfter+time.Second).Type, "nothing more for attempts the worker runs")

	l.send(messages.Frame{Type: messages.TypeJobStarted, JobID: kept.ID, Attempt: 1, Lane: "sim://w-raw/lane/1"})
	for _, j := range []struct {
		id      string
		attempt int
	}{{lost.ID, 2}, {kept.ID, 1}} {
		l.send(messages.Frame{Type: messages.TypeJobDone, JobID: j.id, Attempt: j.attempt, Result: []byte(`{}`)})
	}
	for _, j := range []struct {
		id       string
		attempts int
	}{{lost.ID, 2}, {kept.ID, 1}} {
		got := waitFinal(t, url, j.id, 10*time.Second)
		require.Equal(t, persistence.StatusSucceeded, got.Status, "job %s", j.id)
		require.Equal(t, j.attempts, got.Attempts, "job %s", j.id)
	}
	got := waitFinal(t, url, forgot.ID, 10*time.Second)
	require.Equal(t, persistence.StatusFailed, got.Status)
	require.Equal(t, persistence.ReasonWorkerLost, got.Reason)
	_, m := do(t, "GET", url+"/metrics", "")
	require.Contains(t, string(m), "paprika_assignments_recovered_total 1")
}

// A worker that says it is leaving (it drains, or it stops) gets nothing
// more on that link, and leave_ack comes after every assignment sent on it
// before; its next link is placed on again.
func TestLeavingWorkerGetsNoAssignments(t *testing.T) {
	h := startTestHub(t, testConfig(t))
	url := h.URL()
	a := dialRawLink(t, url, "w-leave", 2)
	a.send(messages.Frame{Type: messages.TypeLeaving})
	require.Equal(t, messages.TypeLeaveAck, a.next(5*time.Second).Type)
	leaving := func() bool {
		st, b := do(t, "GET", url+"/workers", "")
		require.Equal(t, 200, st, string(b))
		var ws struct{ Workers []persistence.WorkerInfo }
		require.NoError(t, json.Unmarshal(b, &ws))
		for _, w := range ws.Workers {
			if w.ID == "w-leave" {
				require.Equal(t, grains.WorkerActive, w.Status, "the operator's status is kept")
				return w.Leaving
			}
		}
		return false
	}
	require.Eventually(t, leaving, 5*time.Second, 20*time.Millisecond, "GET /workers shows it leaving")

	// Alone in the fleet, the leaving worker still gets none of them.
	var ids []string
	for range 4 {
		ids = append(ids, submit(t, url, `{"mode":"noop"}`).ID)
	}
	require.Equal(t, "", a.next(time.Second).Type, "a leaving worker was assigned a job")
	b := dialRawLink(t, url, "w-stays", 4)
	got := map[string]bool{}
	for len(got) < len(ids) {
		f := b.next(5 * time.Second)
		if f.Type == messages.TypeJobAck {
			continue
		}
		require.Equal(t, messages.TypeAssignJob, f.Type, "the jobs go to the worker that stays")
		got[f.JobID] = true
		b.send(messages.Frame{Type: messages.TypeJobStarted, JobID: f.JobID, Attempt: f.Attempt, Lane: "sim://w-stays/lane/0"})
		b.send(messages.Frame{Type: messages.TypeJobDone, JobID: f.JobID, Attempt: f.Attempt})
	}
	for _, id := range ids {
		require.True(t, got[id], "job %s assigned", id)
		require.Equal(t, persistence.StatusSucceeded, waitFinal(t, url, id, 10*time.Second).Status)
	}
	require.Equal(t, "", a.next(200*time.Millisecond).Type)

	// The same worker on a new link (its next process) takes work again.
	_ = a.conn.Close()
	_ = b.conn.Close()
	a2 := dialRawLink(t, url, "w-leave", 2)
	require.False(t, leaving(), "a new link is not leaving")
	c := submit(t, url, `{"mode":"noop"}`)
	for {
		f := a2.next(10 * time.Second)
		require.NotEqual(t, "", f.Type, "the new link got no assignment")
		if f.Type == messages.TypeAssignJob {
			require.Equal(t, c.ID, f.JobID)
			break
		}
	}
}

// A worker lists a job it ran to its end until the end is acknowledged,
// and the hub frees the job's slot before it writes the end (the lane is
// not held for the write). A report in between lists a job whose slot is
// free while the store still says the worker runs it: it must not take the
// slot again. It did: the report's job was adopted as one this grain had
// not reserved, its slot held until the worker's next report past
// SlotPruneAfter, and the lane sat idle with jobs queued — on MariaDB, tens
// of slots per 8,000 jobs flat out. One worker, one lane: job A's end is
// held in the store, the worker's report lists A, and job B must still
// get the lane A freed.
func TestReportBeforeTheAckHoldsNoSlot(t *testing.T) {
	h, jobs := startGatedHub(t)
	url := h.URL()
	l := dialRawLink(t, url, "w-ack", 1)

	a := submit(t, url, `{"mode":"noop","max_attempts":1}`)
	jobs.id.Store(a.ID)
	f := l.next(5 * time.Second)
	require.Equal(t, messages.TypeAssignJob, f.Type)
	require.Equal(t, a.ID, f.JobID)
	l.send(messages.Frame{Type: messages.TypeJobStarted, JobID: f.JobID, Attempt: f.Attempt, Lane: "sim://w-ack/lane/0"})
	l.send(messages.Frame{Type: messages.TypeJobDone, JobID: f.JobID, Attempt: f.Attempt, Result: []byte(`{}`)})
	jobs.waitEntered(t)
	open := sync.OnceFunc(func() { close(jobs.open) })
	defer open() // a failed assertion must not leave A's finish held
	w := waitWorker(t, url, "w-ack", "A's slot freed", func(w persistence.WorkerInfo) bool { return w.InFlight == 0 })

	// The worker's report while it waits for A's ack lists A.
	l.heartbeat(a.ID)
	waitWorker(t, url, "w-ack", "the report taken", func(got persistence.WorkerInfo) bool { return got.ReportedAt.After(w.ReportedAt) })
	b := submit(t, url, `{"mode":"noop","max_attempts":1}`)
	// Well inside SlotPruneAfter, and A's write is still held.
	g := l.next(3 * time.Second)
	require.Equal(t, messages.TypeAssignJob, g.Type, "job B was not placed on the lane job A freed (got %+v): the report took A's slot again", g)
	require.Equal(t, b.ID, g.JobID)
	require.Equal(t, persistence.StatusRunning, getJob(t, url, a.ID).Status, "A's end is not stored before its write")
	require.Zero(t, h.Metrics().Get("paprika_fenced_reports_total", "kind=running"), "an honest report is not refused")

	open()
	require.Equal(t, persistence.StatusSucceeded, waitFinal(t, url, a.ID, 10*time.Second).Status)
	l.send(messages.Frame{Type: messages.TypeJobStarted, JobID: g.JobID, Attempt: g.Attempt, Lane: "sim://w-ack/lane/0"})
	l.send(messages.Frame{Type: messages.TypeJobDone, JobID: g.JobID, Attempt: g.Attempt, Result: []byte(`{}`)})
	require.Equal(t, persistence.StatusSucceeded, waitFinal(t, url, b.ID, 10*time.Second).Status)
	// Once acknowledged, the worker's report lists neither; the worker is idle.
	l.heartbeat()
	waitWorker(t, url, "w-ack", "idle", func(w persistence.WorkerInfo) bool { return w.InFlight == 0 })
}
