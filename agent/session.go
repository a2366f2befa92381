package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/paprika-hub/paprika/messages"
)

// Session ops the agent handles itself; every other op goes to the driver's
// Session (messages.Frame.SessionID documents the contract).
const (
	SessionOpOpen  = messages.OpOpen
	SessionOpClose = messages.OpClose
)

// Session limits and timing.
const (
	// DefaultSessionIdleTimeout applies when open carries no idle_timeout_s
	// (API.md: POST /sessions defaults to 300 s). The hub closes idle
	// sessions itself; the agent closes a session idle for this long plus a
	// tenth (at most maxSessionIdleGrace), so that a lane is not lost to a
	// hub that forgot the session, without racing the hub's own timer.
	DefaultSessionIdleTimeout = 300 * time.Second
	maxSessionIdleGrace       = 30 * time.Second
	// sessionOpenTimeout bounds OpenSession (a browser may have to start).
	sessionOpenTimeout = 60 * time.Second
	// sessionCommandTimeout bounds one command without timeout_ms; with
	// timeout_ms the agent allows that plus sessionCommandMargin, so the
	// driver's own, more precise timeout fires first.
	sessionCommandTimeout = 2 * time.Minute
	sessionCommandMargin  = 5 * time.Second
	maxSessionCommandTime = 10 * time.Minute
	// sessionQueueSize bounds the commands waiting behind a running one.
	sessionQueueSize = 32
	// maxSessionResultBytes keeps session_result below the frame limit.
	maxSessionResultBytes = messages.MaxFrameBytes - 64<<10
)

// Why a session ended (the cause of its context).
var (
	errSessionClosed = errors.New("session closed")
	errSessionIdle   = errors.New("session idle for too long")
)

// SessionDriver is implemented by a Driver that can run interactive
// sessions (API.md /sessions). The agent reserves a lane for the session
// (it counts toward in_flight like a job) and then opens it here; drivers
// without it answer every open with an error.
type SessionDriver interface {
	// OpenSession prepares lane for the session with the given id: e.g. a
	// fresh browser page, with opts applied (checked by the agent; the
	// zero value is none). ctx bounds the opening only.
	OpenSession(ctx context.Context, lane int, sessionID string, opts messages.BrowserOptions) (Session, error)
}

// Session is one open session on a lane. The agent calls Do for one
// command at a time, in the order the hub sent them, and Close once.
type Session interface {
	// Do runs one command — the JSON object of session_command's Command,
	// {"op": ..., ...}, with any op but open and close — and returns its
	// result, a JSON value. ctx ends at the command's timeout or when the
	// session closes.
	Do(ctx context.Context, command json.RawMessage) (json.RawMessage, error)
	// Close frees what the session holds; the lane is free afterwards.
	Close() error
}

// CleanCloser is implemented by a Session that keeps something when it
// ends cleanly — closed by the hub or idle for too long, not when the
// agent stops or the driver failed: the profile it holds (README
// "Profiles and affinity"). The agent calls CloseClean instead of Close
// then; ctx bounds what it keeps, not the close.
type CleanCloser interface {
	CloseClean(ctx context.Context) error
}

// sessionSaveTimeout bounds what a clean close keeps (CleanCloser): below
// the hub's wait for the close's answer, after which the profile's lock
// is released and a late save is refused.
const sessionSaveTimeout = 8 * time.Second

// sessionCommand is the part of a session command the agent reads.
type sessionCommand struct {
	Op           string                   `json:"op"`
	TimeoutMS    int64                    `json:"timeout_ms"`
	IdleTimeoutS int64                    `json:"idle_timeout_s"`
	Options      *messages.BrowserOptions `json:"options"` // open only
}

// handleSessionCommand answers one session_command. It runs on the link's
// reader goroutine and never blocks: open starts the session's goroutine,
// other ops are queued to it.
func (a *Agent) handleSessionCommand(l *link, f messages.Frame) {
	var cmd sessionCommand
	if err := json.Unmarshal(f.Command, &cmd); err != nil || cmd.Op == "" {
		why := "command must be a JSON object with an op"
		if err != nil {
			why += ": " + err.Error()
		}
		replySession(l, f.SessionID, f.CommandID, nil, errors.New(why))
		return
	}
	switch cmd.Op {
	case SessionOpOpen:
		a.openSession(l, f, cmd)
	case SessionOpClose:
		a.closeSession(l, f)
	case messages.OpTargets:
		a.sessionTargets(l, f)
	case messages.OpProtocol:
		a.sessionProtocol(l, f)
	default:
		a.queueSessionCommand(l, f, cmd)
	}
}

// openSession reserves a lane and starts the session's goroutine, which
// opens the driver's session and answers.
func (a *Agent) openSession(l *link, f messages.Frame, cmd sessionCommand) {
	sd, ok := a.driver.(SessionDriver)
	if !ok {
		replySession(l, f.SessionID, f.CommandID, nil, fmt.Errorf("driver %s does not support sessions", a.driver.Name()))
		return
	}
	var opts messages.BrowserOptions
	if cmd.Options != nil {
		if err := cmd.Options.Validate(); err != nil {
			replySession(l, f.SessionID, f.CommandID, nil, fmt.Errorf("options: %w", err))
			return
		}
		opts = *cmd.Options
	}
	idle := DefaultSessionIdleTimeout
	if cmd.IdleTimeoutS > 0 {
		idle = time.Duration(cmd.IdleTimeoutS) * time.Second
	}
	a.mu.Lock()
	var why string
	switch {
	case a.sessions[f.SessionID] != nil:
		why = fmt.Sprintf("session %s is already open on this worker", f.SessionID)
	case a.stopping:
		why = "worker is stopping"
	case a.localDrain || a.hubDrain:
		why = "worker is draining"
	}
	lane := -1
	var skipped string
	if why == "" {
		var free bool
		if lane, skipped, free = a.lanes.acquire(f.Lane, messages.LaneSession, a.laneStater()); !free {
			why = fmt.Sprintf("no free lane (%d of %d busy)", a.lanes.inUse(), a.lanes.size())
		}
	}
	if why != "" {
		a.mu.Unlock()
		a.lg().Info("session refused", "session_id", f.SessionID, "why", why)
		replySession(l, f.SessionID, f.CommandID, nil, errors.New(why))
		return
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	s := &sessionRunner{
		a: a, id: f.SessionID, lane: lane, laneURL: a.lanes.urls[lane],
		idle: idle + min(idle/10, maxSessionIdleGrace), ctx: ctx, cancel: cancel,
		cmds: make(chan sessionCall, sessionQueueSize), opts: opts, touched: make(chan struct{}, 1),
	}
	a.sessions[f.SessionID] = s
	a.sessWG.Add(1) // under mu, ordered before stopSessions' Wait by the stopping flag
	a.mu.Unlock()
	if skipped != "" {
		a.lg().Info("no healthy lane free; session opens on a lane the hub skips", "session_id", f.SessionID, "lane", lane, "skipped", skipped)
	}
	go s.run(sd, sessionCall{l: l, commandID: f.CommandID})
}

// closeSession makes the session's goroutine abort its running command,
// close the driver's session, free the lane and then answer. Closing a
// session this worker does not have succeeds ({"was_open": false}), so a
// hub may repeat a close.
func (a *Agent) closeSession(l *link, f messages.Frame) {
	a.mu.Lock()
	s := a.sessions[f.SessionID]
	if s == nil {
		a.mu.Unlock()
		replySession(l, f.SessionID, f.CommandID, json.RawMessage(`{"was_open":false}`), nil)
		return
	}
	s.closers = append(s.closers, sessionCall{l: l, commandID: f.CommandID})
	a.mu.Unlock()
	s.cancel(errSessionClosed)
}

// queueSessionCommand hands a command to its session's goroutine.
func (a *Agent) queueSessionCommand(l *link, f messages.Frame, cmd sessionCommand) {
	timeout := sessionCommandTimeout
	if cmd.TimeoutMS > 0 {
		timeout = min(time.Duration(cmd.TimeoutMS)*time.Millisecond+sessionCommandMargin, maxSessionCommandTime)
	}
	c := sessionCall{l: l, commandID: f.CommandID, command: f.Command, op: cmd.Op, timeout: timeout}
	a.mu.Lock()
	s := a.sessions[f.SessionID]
	var err error
	switch {
	case s == nil:
		err = fmt.Errorf("no session %s on this worker", f.SessionID)
	case s.ctx.Err() != nil:
		err = fmt.Errorf("session %s is closing", f.SessionID)
	default:
		// The send happens under mu so that it cannot race with the
		// goroutine's final drain of the queue (see sessionRunner.end).
		select {
		case s.cmds <- c:
		default:
			err = fmt.Errorf("session %s has %d commands queued; wait for their results", f.SessionID, sessionQueueSize)
		}
	}
	a.mu.Unlock()
	if err != nil {
		replySession(l, f.SessionID, f.CommandID, nil, err)
	}
}

// stopSessions closes every session: part of the agent's stop.
func (a *Agent) stopSessions() {
	a.mu.Lock()
	n := len(a.sessions)
	for _, s := range a.sessions {
		s.cancel(errAgentStopping)
	}
	a.mu.Unlock()
	if n > 0 {
		a.lg().Info("closing sessions", "sessions", n)
	}
}

// waitSessions waits up to timeout for the session goroutines to end.
func (a *Agent) waitSessions(timeout time.Duration) {
	if !waitGroupFor(&a.sessWG, timeout) {
		a.lg().Error("sessions did not close in time; stopping without them", "timeout", timeout)
	}
}

// waitGroupFor waits up to timeout for wg; false when it timed out. The
// waiting goroutine then lives on until wg is done: its owner is wg's.
func waitGroupFor(wg *sync.WaitGroup, timeout time.Duration) bool {
	done := make(chan struct{})
	go func() { // ends when the last of wg does
		wg.Wait()
		close(done)
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}

// sessionCountLocked is the number of open sessions; caller holds mu.
func (a *Agent) sessionCountLocked() int { return len(a.sessions) }

// replySession sends a session_result: OK with result, or the error.
func replySession(l *link, sessionID, commandID string, result json.RawMessage, err error) {
	f := messages.Frame{Type: messages.TypeSessionResult, SessionID: sessionID, CommandID: commandID}
	if err != nil {
		f.Error = err.Error()
	} else {
		f.OK = true
		f.Result = result
		if len(f.Result) == 0 {
			f.Result = json.RawMessage("{}")
		}
	}
	l.send(f)
}
