package agent

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/paprika-hub/paprika/messages"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testLanIP makes the derived ids predictable: w5150 / w10-10-5-150.
const testLanIP = "10.10.5.150"

// bundle is a running agent under test.
type bundle struct {
	a       *Agent
	execLog string
	cancel  context.CancelFunc
	done    chan error
}

// setup starts an agent linked to hubs (in HubURLs order) and stops it at
// the end of the test, requiring an orderly stop.
func setup(t *testing.T, cfg Config, hubs ...*fakeHub) *bundle {
	t.Helper()
	for _, h := range hubs {
		cfg.HubURLs = append(cfg.HubURLs, h.url())
	}
	if cfg.LanIP == "" {
		cfg.LanIP = testLanIP
	}
	if cfg.StopTimeout == 0 {
		cfg.StopTimeout = 5 * time.Second
	}
	if cfg.FlushTimeout == 0 {
		cfg.FlushTimeout = 2 * time.Second
	}
	cfg.ExecLog = filepath.Join(t.TempDir(), "exec.log")
	cfg.WorkDir = t.TempDir()
	if cfg.Logger == nil {
		cfg.Logger = testLogger(t)
	}
	a, err := New(cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	b := &bundle{a: a, execLog: cfg.ExecLog, cancel: cancel, done: make(chan error, 1)}
	go func() { b.done <- a.Run(ctx) }()
	t.Cleanup(func() { b.stop(t) })
	return b
}

// withoutAcks makes a fake hub acknowledge no job frame, so that the agent
// keeps every one (linked's prepare).
func withoutAcks(h *fakeHub) { h.setAutoAck(false) }

// linked starts an agent on a fake hub of its own, set up first by
// prepare, and waits for its hello, so that the test begins on an
// established link.
func linked(t *testing.T, cfg Config, prepare ...func(*fakeHub)) (*fakeHub, *bundle) {
	t.Helper()
	hub := newFakeHub(t)
	for _, f := range prepare {
		f(hub)
	}
	b := setup(t, cfg, hub)
	hub.waitType(messages.TypeHello)
	return hub, b
}

// stop cancels the agent and waits for Run to return; safe to call twice.
func (b *bundle) stop(t *testing.T) {
	t.Helper()
	b.cancel()
	select {
	case err, ok := <-b.done:
		if ok {
			require.NoError(t, err)
			close(b.done)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("agent did not stop within 30s")
	}
}

// execLines reads the exec log.
func (b *bundle) execLines(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(b.execLog)
	require.NoError(t, err)
	var starts []string
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if f := strings.Fields(l); len(f) == 5 && f[0] == "start" {
			starts = append(starts, f[2]+"#"+f[3])
		}
	}
	return starts
}

func testLogger(t *testing.T) *slog.Logger {
	if !testing.Verbose() {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// isJob matches frames of one job and one type.
func isJob(id, typ string) func(recvFrame) bool {
	return func(rf recvFrame) bool { return rf.f.JobID == id && rf.f.Type == typ }
}

func TestHelloWelcomeHeartbeat(t *testing.T) {
	t.Parallel()
	hub := newFakeHub(t)
	b := setup(t, Config{Lanes: 3, Token: "s3cret", Version: "1.2.3"}, hub)

	hello := hub.waitType(messages.TypeHello).f
	require.Equal(t, "w5150", hello.WorkerID)
	require.Equal(t, testLanIP, hello.LanIP)
	require.Equal(t, "1.2.3", hello.Version)
	require.NotNil(t, hello.Capabilities)
	require.Equal(t, 3, hello.Capabilities.MaxConcurrent)
	require.Equal(t, []string{"sim://w5150/lane/0", "sim://w5150/lane/1", "sim://w5150/lane/2"}, hello.Capabilities.LaneURLs)
	require.Equal(t, []string{DriverSimulated}, hello.Capabilities.Drivers)
	require.Equal(t, []string{messages.LaneIdle, messages.LaneIdle, messages.LaneIdle}, hello.LaneStates)
	require.NotNil(t, hello.Stats)
	require.Empty(t, hello.Running)

	hub.mu.Lock()
	require.Equal(t, []string{"Bearer s3cret"}, hub.auths)
	require.Equal(t, []string{"/workers/w5150/link"}, hub.paths)
	hub.mu.Unlock()

	// The welcome set 50ms; the default 15s would never tick in this test.
	for range 3 {
		hb := hub.waitType(messages.TypeHeartbeat).f
		require.NotNil(t, hb.Stats)
		require.Equal(t, 0, hb.Stats.InFlight)
		for name, v := range map[string]float64{"cpu": hb.Stats.CPUPct, "mem": hb.Stats.MemPct, "disk": hb.Stats.DiskPct} {
			require.GreaterOrEqual(t, v, 0.0, name)
			require.LessOrEqual(t, v, 100.0, name)
		}
		require.Positive(t, hb.Stats.MemPct, "a running machine uses some memory")
		require.Positive(t, hb.Stats.DiskPct, "a file system holding files is not empty")
		require.Nil(t, hb.LaneURLs, "heartbeats carry no lane addresses")
		require.Nil(t, hb.LaneStates, "the lanes did not change since hello")
	}
	require.Equal(t, "w5150", b.a.ID())
}

func TestNoopJobEmitsLinesThenDone(t *testing.T) {
	t.Parallel()
	hub, b := linked(t, Config{Lanes: 2})

	const n = 25
	hub.assign("job-1", fmt.Sprintf(`{"lines": %d, "interval_ms": 1}`, n))
	frames := hub.jobFrames("job-1")
	require.Len(t, frames, n+2)
	require.Equal(t, messages.TypeJobStarted, frames[0].f.Type)
	require.Equal(t, "sim://w5150/lane/0", frames[0].f.Lane)
	require.Equal(t, 1, frames[0].f.Attempt)
	for i := range n {
		f := frames[1+i].f
		require.Equal(t, messages.TypeJobLog, f.Type)
		require.Equal(t, int64(i), f.Seq)
		require.Equal(t, fmt.Sprintf("noop line %d of %d", i+1, n), f.Line)
	}
	done := frames[n+1].f
	require.Equal(t, messages.TypeJobDone, done.Type)
	require.JSONEq(t, fmt.Sprintf(`{"lines": %d}`, n), string(done.Result))
	require.Equal(t, []string{"job-1#1"}, b.execLines(t))

	// Default params: no lines, {"lines": 0}.
	hub.assign("job-2", ``)
	frames = hub.jobFrames("job-2")
	require.Len(t, frames, 2)
	require.JSONEq(t, `{"lines": 0}`, string(frames[1].f.Result))
}

func TestLaneLimitRejectsAndCancel(t *testing.T) {
	t.Parallel()
	hub, b := linked(t, Config{Lanes: 2})

	hub.assign("a", `{"sleep_ms": 60000}`)
	hub.assign("b", `{"sleep_ms": 60000}`)
	hub.waitFor(isJob("a", messages.TypeJobStarted), "a started")
	hub.waitFor(isJob("b", messages.TypeJobStarted), "b started")
	hub.assign("c", `{}`)
	rej := hub.waitFor(isJob("c", messages.TypeJobFailed), "c rejected").f
	require.Equal(t, ReasonRejected, rej.Reason)
	require.Contains(t, rej.Error, "no free lane")

	hb := hub.waitFor(func(rf recvFrame) bool {
		return rf.f.Type == messages.TypeHeartbeat && rf.f.Stats.InFlight == 2
	}, "busy heartbeat").f
	require.Equal(t, []string{"a", "b"}, hb.Running)

	hub.send(messages.Frame{Type: messages.TypeCancelJob, JobID: "a"})
	failed := hub.waitFor(isJob("a", messages.TypeJobFailed), "a canceled").f
	require.Equal(t, ReasonCanceled, failed.Reason)

	// The freed lane takes the next job.
	hub.assign("d", `{"lines": 1}`)
	require.Equal(t, messages.TypeJobDone, hub.waitFor(isJob("d", messages.TypeJobDone), "d done").f.Type)
	hub.send(messages.Frame{Type: messages.TypeCancelJob, JobID: "b"})
	require.Equal(t, ReasonCanceled, hub.waitFor(isJob("b", messages.TypeJobFailed), "b canceled").f.Reason)
	require.ElementsMatch(t, []string{"a#1", "b#1", "d#1"}, b.execLines(t), "a rejected job never runs")
}

func TestDeadlineExceeded(t *testing.T) {
	t.Parallel()
	hub, _ := linked(t, Config{})

	hub.send(messages.Frame{
		Type: messages.TypeAssignJob, JobID: "slow", Attempt: 2, Mode: "noop",
		Params: []byte(`{"lines": 2, "sleep_ms": 60000}`), Deadline: time.Now().Add(300 * time.Millisecond).UnixMilli(),
	})
	frames := hub.jobFrames("slow")
	require.Len(t, frames, 4, "started, two lines, failed")
	final := frames[3].f
	require.Equal(t, messages.TypeJobFailed, final.Type)
	require.Equal(t, ReasonDeadlineExceeded, final.Reason)
	require.Equal(t, 2, final.Attempt)
}

func TestJobErrors(t *testing.T) {
	t.Parallel()
	hub, _ := linked(t, Config{Lanes: 4})

	cases := []struct {
		mode, params, reason, errHas string
		lines                        int
	}{
		{mode: "fetch", params: `{"url": "http://example.com"}`, reason: ReasonLaneError, errHas: "chromium"},
		{mode: "macro", params: `{}`, reason: ReasonLaneError, errHas: "chromium"},
		{mode: "noop", params: `{"lines": "many"}`, reason: ReasonJobError, errHas: "lines"},
		{mode: "noop", params: `{"lines": -1}`, reason: ReasonJobError, errHas: "lines"},
		{mode: "noop", params: `{"sleep_ms": 1.5}`, reason: ReasonJobError, errHas: "sleep_ms"},
		{mode: "noop", params: `{"fail": "yes"}`, reason: ReasonJobError, errHas: "fail"},
		{mode: "noop", params: `[1, 2]`, reason: ReasonJobError, errHas: "params"},
		{mode: "noop", params: `{"lines": 2, "fail": true}`, reason: ReasonJobError, errHas: "fail=true", lines: 2},
	}
	for i, c := range cases {
		id := fmt.Sprintf("job-%d", i)
		hub.send(messages.Frame{Type: messages.TypeAssignJob, JobID: id, Attempt: 1, Mode: c.mode, Params: []byte(c.params)})
		frames := hub.jobFrames(id)
		require.Len(t, frames, c.lines+2, "case %d", i)
		final := frames[len(frames)-1].f
		require.Equal(t, messages.TypeJobFailed, final.Type, "case %d", i)
		require.Equal(t, c.reason, final.Reason, "case %d", i)
		require.Contains(t, final.Error, c.errHas, "case %d", i)
	}
}

func TestReconnectResendsKeptFrames(t *testing.T) {
	t.Parallel()
	hub1, hub2 := newFakeHub(t), newFakeHub(t)
	b := setup(t, Config{}, hub1, hub2)
	hub1.waitType(messages.TypeHello)

	hub1.assign("j", `{"lines": 3, "sleep_ms": 1500}`)
	hub1.waitFor(func(rf recvFrame) bool { return rf.f.Type == messages.TypeJobLog && rf.f.Seq == 2 }, "last line")
	hub1.dropAll() // the job sleeps now: it ends while the agent relinks

	hello := hub2.waitType(messages.TypeHello).f
	require.Equal(t, []string{"j"}, hello.Running, "the job kept running across the drop")
	require.Equal(t, 1, hello.Stats.InFlight)
	frames := hub2.jobFrames("j")
	require.Len(t, frames, 5, "started, three lines re-sent, then done")
	require.Equal(t, messages.TypeJobStarted, frames[0].f.Type)
	for i := range 3 {
		require.Equal(t, messages.TypeJobLog, frames[1+i].f.Type)
		require.Equal(t, int64(i), frames[1+i].f.Seq)
	}
	require.Equal(t, messages.TypeJobDone, frames[4].f.Type)
	require.JSONEq(t, `{"lines": 3}`, string(frames[4].f.Result))

	for _, rf := range hub1.all() {
		require.NotEqual(t, messages.TypeJobDone, rf.f.Type, "the final frame came after the reconnect")
	}
	require.Equal(t, []string{"j#1"}, b.execLines(t), "ran once")
}

// TestRelinkGoesToTheGrainsHub: a hub that answers hello with relink to
// another of the worker's hubs is left at once for that one, whose hello
// lists no hub URLs (so it cannot be sent on again); jobs then run there.
// A relink to a URL the worker was not given is not followed: the worker
// takes its next hub as after any failed link. A worker given one hub
// lists none.
func TestRelinkGoesToTheGrainsHub(t *testing.T) {
	t.Parallel()
	t.Run("followed once", func(t *testing.T) {
		t.Parallel()
		hub1, hub2 := newFakeHub(t), newFakeHub(t)
		hub1.relink(hub2.url())
		hub2.relink(hub1.url()) // a hub of another view: never asked
		b := setup(t, Config{}, hub1, hub2)
		first := hub1.waitType(messages.TypeHello).f
		require.Equal(t, []string{hub1.url(), hub2.url()}, first.HubURLs)
		second := hub2.waitType(messages.TypeHello).f
		require.Nil(t, second.HubURLs, "a followed link lists no URLs")
		hub2.waitType(messages.TypeHeartbeat)
		hub2.assign("r", `{"lines": 1}`)
		frames := hub2.jobFrames("r")
		require.Equal(t, messages.TypeJobDone, frames[len(frames)-1].f.Type)
		require.Equal(t, 1, hub1.connCount(), "not sent back")
		require.Equal(t, 1, hub2.connCount())
		require.Equal(t, []string{"r#1"}, b.execLines(t))
	})
	t.Run("not given", func(t *testing.T) {
		t.Parallel()
		hub1, hub2 := newFakeHub(t), newFakeHub(t)
		hub1.relink("http://127.0.0.1:1")
		setup(t, Config{}, hub1, hub2)
		hub1.waitType(messages.TypeHello)
		hello := hub2.waitType(messages.TypeHello).f
		require.Equal(t, []string{hub1.url(), hub2.url()}, hello.HubURLs, "next in turn, as after a failed link")
		hub2.waitType(messages.TypeHeartbeat)
	})
	t.Run("followed link fails", func(t *testing.T) {
		t.Parallel()
		hub1, hub2 := newFakeHub(t), newFakeHub(t)
		const dead = "http://127.0.0.1:1"
		hub1.relink(dead)
		hub2.relink(dead)
		setup(t, Config{HubURLs: []string{hub1.url(), dead, hub2.url()}})
		hub1.waitType(messages.TypeHello)
		// Sent to dead, which refuses: the next hub is not asked to send
		// the worker there again.
		require.Nil(t, hub2.waitType(messages.TypeHello).f.HubURLs)
		hub2.waitType(messages.TypeHeartbeat)
		require.Equal(t, 1, hub2.connCount())
	})
	t.Run("one hub", func(t *testing.T) {
		t.Parallel()
		hub := newFakeHub(t)
		hub.relink(hub.url())
		setup(t, Config{}, hub)
		require.Nil(t, hub.waitType(messages.TypeHello).f.HubURLs)
		hub.waitType(messages.TypeHeartbeat)
	})
}

func TestJobAckStopsResending(t *testing.T) {
	t.Parallel()
	hub1, hub2 := newFakeHub(t), newFakeHub(t)
	hub1.setAutoAck(false)
	hub2.setAutoAck(false)
	b := setup(t, Config{}, hub1, hub2)
	hub1.waitType(messages.TypeHello)

	hub1.assign("k", `{"lines": 2}`)
	require.Len(t, hub1.jobFrames("k"), 4)
	hub1.dropAll()

	// Not acknowledged: everything comes again on the next link.
	hub2.waitType(messages.TypeHello)
	frames := hub2.jobFrames("k")
	require.Len(t, frames, 4)
	require.Equal(t, messages.TypeJobDone, frames[3].f.Type)

	hub2.send(messages.Frame{Type: messages.TypeJobAck, JobID: "k", Attempt: 1})
	require.Eventually(t, func() bool { n, _ := b.a.box.kept(); return n == 0 }, waitTimeout, 10*time.Millisecond)
	hub2.dropAll()

	// Back on hub1 (rotation wraps): hello, heartbeats, no job frames.
	first := len(hub1.all())
	hub1.waitFor(func(rf recvFrame) bool { return rf.conn == 1 && rf.f.Type == messages.TypeHello }, "second hello")
	hub1.waitFor(func(rf recvFrame) bool { return rf.conn == 1 && rf.f.Type == messages.TypeHeartbeat }, "heartbeat")
	hub1.waitFor(func(rf recvFrame) bool { return rf.conn == 1 && rf.f.Type == messages.TypeHeartbeat }, "heartbeat")
	for _, rf := range hub1.all()[first:] {
		require.Empty(t, rf.f.JobID, "acknowledged job re-sent: %+v", rf.f)
	}
	require.Equal(t, []string{"k#1"}, b.execLines(t))
}

func TestDuplicateAssignDoesNotRunTwice(t *testing.T) {
	t.Parallel()
	hub, b := linked(t, Config{Lanes: 2, FlushTimeout: 100 * time.Millisecond}, withoutAcks)

	hub.assign("x", `{"sleep_ms": 200}`)
	hub.waitFor(isJob("x", messages.TypeJobStarted), "started")
	hub.assign("x", `{"sleep_ms": 200}`) // while running
	hub.waitFor(isJob("x", messages.TypeJobDone), "done")
	hub.assign("x", `{"sleep_ms": 200}`) // finished, not acknowledged
	hub.heartbeatAfter(hub.mark())
	hub.heartbeatAfter(hub.mark())
	require.Equal(t, []string{"x#1"}, b.execLines(t))
	for _, rf := range hub.all() {
		require.NotEqual(t, ReasonRejected, rf.f.Reason, "a duplicate is ignored, not rejected")
	}
}

func TestIDTakenFallsBackToLongID(t *testing.T) {
	t.Parallel()
	hub := newFakeHub(t)
	hub.takeID("w5150")
	b := setup(t, Config{Lanes: 1}, hub)

	require.Equal(t, "w5150", hub.waitType(messages.TypeHello).f.WorkerID)
	hello := hub.waitType(messages.TypeHello).f
	require.Equal(t, "w10-10-5-150", hello.WorkerID)
	require.Equal(t, []string{"sim://w10-10-5-150/lane/0"}, hello.Capabilities.LaneURLs)
	hub.waitType(messages.TypeHeartbeat) // welcomed
	hub.mu.Lock()
	require.Equal(t, []string{"/workers/w5150/link", "/workers/w10-10-5-150/link"}, hub.paths)
	hub.mu.Unlock()
	require.Equal(t, "w10-10-5-150", b.a.ID())
}

func TestIDTakenKeepsOverride(t *testing.T) {
	t.Parallel()
	hub := newFakeHub(t)
	hub.takeID("edge-1")
	b := setup(t, Config{ID: "edge-1"}, hub)

	require.Equal(t, "edge-1", hub.waitType(messages.TypeHello).f.WorkerID)
	require.Equal(t, "edge-1", hub.waitType(messages.TypeHello).f.WorkerID, "an --id is never replaced")
	require.Equal(t, "edge-1", b.a.ID())
}

func TestDrainFinishesRunningAndRejectsNew(t *testing.T) {
	t.Parallel()
	hub, b := linked(t, Config{Lanes: 2})

	hub.assign("run", `{"lines": 1, "sleep_ms": 300}`)
	hub.waitFor(isJob("run", messages.TypeJobStarted), "started")
	hub.send(messages.Frame{Type: messages.TypeDrain})
	require.Eventually(t, b.a.Draining, waitTimeout, 5*time.Millisecond)
	hub.assign("new", `{}`)
	rej := hub.waitFor(isJob("new", messages.TypeJobFailed), "rejected").f
	require.Equal(t, ReasonRejected, rej.Reason)
	require.Contains(t, rej.Error, "draining")
	require.Equal(t, messages.TypeJobDone, hub.waitFor(isJob("run", messages.TypeJobDone), "done").f.Type)
	// Until the hub acknowledges its result the job is still reported as
	// the worker's; after the ack the worker reports idle. Heartbeats
	// built before the ack was read (the job ended, its result unacked)
	// may still arrive after it: they list the job, and are passed over.
	hub.send(messages.Frame{Type: messages.TypeJobAck, JobID: "run"})
	mark := hub.mark()
	hb := hub.waitFor(func(rf recvFrame) bool {
		return rf.n >= mark && rf.f.Type == messages.TypeHeartbeat && rf.f.Stats.InFlight == 0 && len(rf.f.Running) == 0
	}, "idle heartbeat").f
	require.Empty(t, hb.Running)
}

func TestLocalDrain(t *testing.T) {
	t.Parallel()
	hub, b := linked(t, Config{})
	b.a.Drain()
	b.a.Drain()                        // twice is fine
	hub.waitType(messages.TypeLeaving) // the hub places nothing more here
	hub.assign("n", `{}`)
	require.Equal(t, ReasonRejected, hub.waitFor(isJob("n", messages.TypeJobFailed), "rejected").f.Reason)
}

// An assignment the hub sent just before it read the stopping worker's
// leaving frame is answered before the close frame: were it left unread,
// the hub would find the attempt unknown to the worker's next process and
// could only take it for lost (a failed job, TestWorkerSelfRestart).
func TestStopAnswersAssignmentsCrossingIt(t *testing.T) {
	t.Parallel()
	hub, b := linked(t, Config{})
	hub.answerLeaving(func(c *fakeConn) {
		time.Sleep(50 * time.Millisecond) // the hub's turn is slow; the agent must wait for it
		c.send(t, messages.Frame{Type: messages.TypeAssignJob, JobID: "crossing", Attempt: 1, Mode: "noop", Params: []byte(`{}`)})
		c.send(t, messages.Frame{Type: messages.TypeLeaveAck})
	})
	hub.waitType(messages.TypeHeartbeat) // welcomed: assignments may come
	b.stop(t)
	require.Eventually(t, func() bool {
		hub.mu.Lock()
		defer hub.mu.Unlock()
		return len(hub.closeCodes) == 1
	}, waitTimeout, 5*time.Millisecond)
	var rejected *messages.Frame
	for _, rf := range hub.all() { // the reader records nothing after the close frame
		if rf.f.JobID == "crossing" {
			rejected = &rf.f
		}
	}
	require.NotNil(t, rejected, "the crossing assignment was answered before the close: %s", hub.describe())
	require.Equal(t, messages.TypeJobFailed, rejected.Type)
	require.Equal(t, ReasonRejected, rejected.Reason)
	require.Contains(t, rejected.Error, "stopping")
}

func TestGracefulStopWaitsForJobs(t *testing.T) {
	t.Parallel()
	hub, b := linked(t, Config{})

	hub.assign("last", `{"lines": 2, "sleep_ms": 300}`)
	hub.waitFor(isJob("last", messages.TypeJobStarted), "started")
	b.stop(t)

	frames := hub.jobFrames("last")
	require.Equal(t, messages.TypeJobDone, frames[len(frames)-1].f.Type)
	require.Eventually(t, func() bool {
		hub.mu.Lock()
		defer hub.mu.Unlock()
		return len(hub.closeCodes) == 1
	}, waitTimeout, 5*time.Millisecond)
	hub.mu.Lock()
	require.Equal(t, []int{1000}, hub.closeCodes, "normal close")
	hub.mu.Unlock()
}

func TestStopTimeoutCancelsJobs(t *testing.T) {
	t.Parallel()
	hub, b := linked(t, Config{StopTimeout: 100 * time.Millisecond})

	hub.assign("long", `{"sleep_ms": 60000}`)
	hub.waitFor(isJob("long", messages.TypeJobStarted), "started")
	start := time.Now()
	b.stop(t)
	require.Less(t, time.Since(start), 5*time.Second)
	require.Equal(t, ReasonWorkerLost, hub.waitFor(isJob("long", messages.TypeJobFailed), "failed").f.Reason)
}

func TestRunTwice(t *testing.T) {
	t.Parallel()
	_, b := linked(t, Config{})
	require.ErrorIs(t, b.a.Run(context.Background()), ErrAlreadyStarted)
}

func TestNewRejectsBadConfig(t *testing.T) {
	t.Parallel()
	_, err := New(Config{})
	require.ErrorContains(t, err, "hub")
	_, err = New(Config{HubURLs: []string{"ftp://x"}, Lanes: -1, Driver: "firefox", LanIP: "::1", HeartbeatInterval: -time.Second})
	for _, key := range []string{"hub:", "lanes:", "driver:", "lan_ip:", "heartbeat_interval:"} {
		require.ErrorContains(t, err, key)
	}
	_, err = New(Config{HubURLs: []string{"http://127.0.0.1:1"}, Driver: DriverChromium})
	require.ErrorIs(t, err, ErrUnsupportedDriver)
}

func TestIDDerivation(t *testing.T) {
	t.Parallel()
	cases := []struct{ ip, short, long string }{
		{"10.10.50.150", "w50150", "w10-10-50-150"},
		{"10.10.5.7", "w5007", "w10-10-5-7"},
		{"10.10.5.150", "w5150", "w10-10-5-150"},
		{"192.168.0.1", "w0001", "w192-168-0-1"},
		{"172.16.255.255", "w255255", "w172-16-255-255"},
		{"10.10.50.7", "w50007", "w10-10-50-7"}, // differs from x.x.5.7 thanks to the padding
		{"127.0.0.1", "w0001", "w127-0-0-1"},
		{"::ffff:10.1.2.3", "w2003", "w10-1-2-3"},
		{"fe80::1", "", ""},
	}
	for _, c := range cases {
		ip := net.ParseIP(c.ip)
		require.Equal(t, c.short, ShortID(ip), c.ip)
		require.Equal(t, c.long, LongID(ip), c.ip)
	}
	require.Empty(t, ShortID(nil))

	ip := LanIP()
	require.NotNil(t, ip.To4())
	require.False(t, ip.IsLinkLocalUnicast())
}

func TestSilentHubIsLeftByKeepalive(t *testing.T) {
	t.Parallel()
	hub1, hub2 := newFakeHub(t), newFakeHub(t)
	hub1.swallowPings()
	setup(t, Config{PingInterval: 50 * time.Millisecond}, hub1, hub2)
	hub1.waitType(messages.TypeHello)
	hub2.waitType(messages.TypeHello) // no pong within 3 pings: the agent moved on
	require.Equal(t, 1, hub1.connCount())
}

// job_query: the worker answers from what it holds, and an attempt it
// disowned stays refused, so a late assign_job can never run it after the
// hub gave the job to another worker.
func TestJobQueryAnswersAndDisowns(t *testing.T) {
	t.Parallel()
	hub, b := linked(t, Config{Lanes: 2, FlushTimeout: 100 * time.Millisecond}, withoutAcks)
	query := func(id string) string {
		hub.send(messages.Frame{Type: messages.TypeJobQuery, JobID: id, Attempt: 1})
		return hub.waitFor(isJob(id, messages.TypeJobStatus), "job_status of "+id).f.State
	}

	require.Equal(t, messages.JobStateUnknown, query("lost"))
	hub.assign("lost", `{}`) // the late copy
	hub.heartbeatAfter(hub.mark())

	hub.assign("r", `{"sleep_ms": 300}`)
	hub.waitFor(isJob("r", messages.TypeJobStarted), "started")
	require.Equal(t, messages.JobStateRunning, query("r"))
	hub.waitFor(isJob("r", messages.TypeJobDone), "done")
	require.Equal(t, messages.JobStateRunning, query("r"), "finished but not acknowledged: still held")
	hub.send(messages.Frame{Type: messages.TypeJobAck, JobID: "r", Attempt: 1})
	require.Eventually(t, func() bool { n, _ := b.a.box.kept(); return n == 0 }, waitTimeout, 10*time.Millisecond)
	require.Equal(t, messages.JobStateUnknown, query("r"), "acknowledged: no longer held")

	hub.heartbeatAfter(hub.mark())
	require.Equal(t, []string{"r#1"}, b.execLines(t), "the disowned attempt must never run")
	for _, rf := range hub.all() {
		require.False(t, rf.f.JobID == "lost" && rf.f.Type != messages.TypeJobStatus, "disowned attempt produced %+v", rf.f)
	}
}

// A copy of an assignment that comes after the attempt ran and its result
// was acknowledged (a hub frozen past the member timeout sends what it had
// queued when it resumes) is ignored; the job's next attempt runs.
func TestLateCopyOfARunAttemptIsIgnored(t *testing.T) {
	t.Parallel()
	hub, _ := linked(t, Config{})
	hub.assign("x", `{"lines": 1}`)
	hub.waitFor(isJob("x", messages.TypeJobDone), "done") // acknowledged by the fake hub
	hub.assign("x", `{"lines": 1}`)                       // the late copy
	hub.assign("y", `{"lines": 1}`)                       // read after it: its end bounds the wait
	hub.waitFor(isJob("y", messages.TypeJobDone), "done")
	starts := 0
	for _, rf := range hub.all() {
		if rf.f.JobID == "x" && rf.f.Type == messages.TypeJobStarted {
			starts++
		}
	}
	require.Equal(t, 1, starts, "attempt 1 of x ran once: %s", hub.describe())
	hub.send(messages.Frame{Type: messages.TypeAssignJob, JobID: "x", Attempt: 2, Mode: "noop", Params: []byte(`{}`)})
	require.Equal(t, 2, hub.waitFor(isJob("x", messages.TypeJobDone), "attempt 2 done").f.Attempt)
}
