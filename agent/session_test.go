package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/messages"
)

// stubSessions is a driver with sessions that only record what they are
// asked: the agent's bookkeeping is under test here, not a browser (the
// chromium package tests real sessions through the agent).
type stubSessions struct {
	SimulatedDriver

	mu     sync.Mutex
	events []string
}

var _ SessionDriver = (*stubSessions)(nil)

func (d *stubSessions) record(e string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.events = append(d.events, e)
}

func (d *stubSessions) recorded() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.events)
}

func (d *stubSessions) OpenSession(_ context.Context, lane int, id string, _ messages.BrowserOptions) (Session, error) {
	d.record(fmt.Sprintf("open %s lane %d", id, lane))
	return &stubSession{d: d, id: id}, nil
}

type stubSession struct {
	d  *stubSessions
	id string
}

// Do knows the ops "echo" (answers {"echo": arg}), "slow" (the same after
// 50 ms) and "block" (waits for its context).
func (s *stubSession) Do(ctx context.Context, command json.RawMessage) (json.RawMessage, error) {
	var c struct {
		Op  string `json:"op"`
		Arg string `json:"arg"`
	}
	if err := json.Unmarshal(command, &c); err != nil {
		return nil, err
	}
	s.d.record(fmt.Sprintf("do %s %s %s", s.id, c.Op, c.Arg))
	switch c.Op {
	case "slow":
		time.Sleep(50 * time.Millisecond)
	case "block":
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return json.Marshal(map[string]string{"echo": c.Arg})
}

func (s *stubSession) Close() error {
	s.d.record("close " + s.id)
	return nil
}

// sendCommand sends a session_command.
func sendCommand(h *fakeHub, session, id, command string) {
	h.send(messages.Frame{Type: messages.TypeSessionCommand, SessionID: session, CommandID: id, Command: json.RawMessage(command)})
}

// sessionResult waits for the answer to one command.
func sessionResult(h *fakeHub, id string) messages.Frame {
	h.t.Helper()
	return h.waitFor(func(rf recvFrame) bool {
		return rf.f.Type == messages.TypeSessionResult && rf.f.CommandID == id
	}, "session_result "+id).f
}

// command sends a command and waits for its answer.
func command(h *fakeHub, session, id, cmd string) messages.Frame {
	h.t.Helper()
	sendCommand(h, session, id, cmd)
	return sessionResult(h, id)
}

// inFlight waits for a heartbeat that reports n.
func inFlight(h *fakeHub, n int) {
	h.t.Helper()
	h.waitFor(func(rf recvFrame) bool {
		return rf.f.Type == messages.TypeHeartbeat && rf.f.Stats.InFlight == n
	}, fmt.Sprintf("heartbeat with in_flight %d", n))
}

func TestSessionUnsupportedBySimulatedDriver(t *testing.T) {
	t.Parallel()
	hub, _ := linked(t, Config{})
	r := command(hub, "s1", "c1", `{"op":"open"}`)
	require.False(t, r.OK)
	require.Equal(t, "driver simulated does not support sessions", r.Error)
	require.Equal(t, "s1", r.SessionID)
}

func TestSessionLifecycle(t *testing.T) {
	t.Parallel()
	drv := &stubSessions{}
	hub, _ := linked(t, Config{Lanes: 1, DriverImpl: drv})

	r := command(hub, "s1", "c1", `{"op":"open"}`)
	require.True(t, r.OK, r.Error)
	require.JSONEq(t, `{"lane":"sim://w5150/lane/0"}`, string(r.Result))
	inFlight(hub, 1)

	r = command(hub, "s2", "c2", `{"op":"open"}`)
	require.Equal(t, "no free lane (1 of 1 busy)", r.Error)
	r = command(hub, "s1", "c3", `{"op":"open"}`)
	require.Equal(t, "session s1 is already open on this worker", r.Error)
	hub.assign("j1", `{}`)
	f := hub.waitFor(isJob("j1", messages.TypeJobFailed), "job_failed j1").f
	require.Equal(t, ReasonRejected, f.Reason)

	// Commands run one at a time, in the order they came.
	sendCommand(hub, "s1", "c4", `{"op":"slow","arg":"a"}`)
	sendCommand(hub, "s1", "c5", `{"op":"echo","arg":"b"}`)
	sendCommand(hub, "s1", "c6", `{"op":"slow","arg":"c"}`)
	for id, want := range map[string]string{"c4": "a", "c5": "b", "c6": "c"} {
		r := sessionResult(hub, id)
		require.True(t, r.OK, r.Error)
		require.JSONEq(t, `{"echo":"`+want+`"}`, string(r.Result))
	}
	require.Equal(t, []string{"open s1 lane 0", "do s1 slow a", "do s1 echo b", "do s1 slow c"}, drv.recorded())

	r = command(hub, "nope", "c7", `{"op":"echo"}`)
	require.Equal(t, "no session nope on this worker", r.Error)
	r = command(hub, "s1", "c8", `"navigate"`)
	require.Contains(t, r.Error, "command must be a JSON object with an op")

	r = command(hub, "s1", "c9", `{"op":"close"}`)
	require.True(t, r.OK, r.Error)
	require.JSONEq(t, `{"was_open":true}`, string(r.Result))
	require.Equal(t, "close s1", drv.recorded()[4])
	inFlight(hub, 0)
	r = command(hub, "s1", "c10", `{"op":"close"}`)
	require.True(t, r.OK, "closing twice is fine")
	require.JSONEq(t, `{"was_open":false}`, string(r.Result))

	// The lane is free for a job again.
	hub.assign("j2", `{}`)
	hub.waitFor(isJob("j2", messages.TypeJobDone), "job_done j2")
}

func TestSessionCloseAbortsRunningCommand(t *testing.T) {
	t.Parallel()
	drv := &stubSessions{}
	hub, _ := linked(t, Config{Lanes: 1, DriverImpl: drv})
	require.True(t, command(hub, "s1", "c1", `{"op":"open"}`).OK)

	sendCommand(hub, "s1", "c2", `{"op":"block"}`)
	sendCommand(hub, "s1", "c3", `{"op":"echo","arg":"queued"}`)
	require.Eventually(t, func() bool { return slices.Contains(drv.recorded(), "do s1 block ") }, waitTimeout, 5*time.Millisecond)
	sendCommand(hub, "s1", "c4", `{"op":"close"}`)

	r := sessionResult(hub, "c2")
	require.Equal(t, "block: session closed", r.Error)
	r = sessionResult(hub, "c3")
	require.Equal(t, "echo: session closed", r.Error)
	r = sessionResult(hub, "c4")
	require.True(t, r.OK, r.Error)
	require.Equal(t, []string{"open s1 lane 0", "do s1 block ", "close s1"}, drv.recorded())

	// The close was answered after the lane was freed.
	require.True(t, command(hub, "s2", "c5", `{"op":"open"}`).OK)
}

func TestSessionClosedWhenIdle(t *testing.T) {
	t.Parallel()
	drv := &stubSessions{}
	hub, _ := linked(t, Config{Lanes: 1, DriverImpl: drv})
	require.True(t, command(hub, "s1", "c1", `{"op":"open","idle_timeout_s":1}`).OK)
	inFlight(hub, 1)
	start := time.Now()
	inFlight(hub, 0)
	require.GreaterOrEqual(t, time.Since(start), 900*time.Millisecond)
	require.Equal(t, []string{"open s1 lane 0", "close s1"}, drv.recorded())
	require.Equal(t, "no session s1 on this worker", command(hub, "s1", "c2", `{"op":"echo"}`).Error)
}

func TestSessionRefusedWhileDraining(t *testing.T) {
	t.Parallel()
	hub, b := linked(t, Config{Lanes: 1, DriverImpl: &stubSessions{}})
	b.a.Drain()
	require.Equal(t, "worker is draining", command(hub, "s1", "c1", `{"op":"open"}`).Error)
}

func TestAgentStopClosesSessions(t *testing.T) {
	t.Parallel()
	drv := &stubSessions{}
	hub, b := linked(t, Config{Lanes: 2, DriverImpl: drv})
	require.True(t, command(hub, "s1", "c1", `{"op":"open"}`).OK)
	require.True(t, command(hub, "s2", "c2", `{"op":"open"}`).OK)
	sendCommand(hub, "s2", "c3", `{"op":"block"}`)
	require.Eventually(t, func() bool { return slices.Contains(drv.recorded(), "do s2 block ") }, waitTimeout, 5*time.Millisecond)

	b.stop(t)
	ev := drv.recorded()
	require.Contains(t, ev, "close s1")
	require.Contains(t, ev, "close s2")
	b.a.mu.Lock()
	defer b.a.mu.Unlock()
	require.Empty(t, b.a.sessions)
	require.Zero(t, b.a.lanes.inUse())
}
