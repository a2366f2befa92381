package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/paprika-hub/paprika/messages"
)

// sessionCall is one command to answer: where it came from, and what it
// asks (command and timeout are unset for open and close).
type sessionCall struct {
	l         *link
	commandID string
	command   json.RawMessage
	op        string
	timeout   time.Duration
}

// sessionRunner is one open session. Its goroutine (run) is owned by the
// Agent (sessWG): it opens the driver's session, runs the queued commands
// one at a time in arrival order, and ends — closing the driver's session
// and freeing the lane — when ctx ends: on close, when idle for too long,
// or when the agent stops.
type sessionRunner struct {
	// Fixed at open.
	a       *Agent
	id      string
	lane    int
	laneURL string
	idle    time.Duration
	ctx     context.Context // ends with the session; the cause says why
	cancel  context.CancelCauseFunc
	cmds    chan sessionCall // written under a.mu, while the session is registered
	opts    messages.BrowserOptions
	touched chan struct{} // a CDP tunnel ended: restart the idle timer (buffer of one)
	// tunnelWG counts the session's tunnel goroutines (tunnel.go): the
	// driver's session is closed — and its lane cleaned — only after the
	// last one stopped, or a client could open a page after the cleanup
	// checked the lane.
	tunnelWG sync.WaitGroup

	// Guarded by a.mu.
	closers []sessionCall // close commands to answer once the lane is free
	tunnels int           // open CDP tunnels (tunnel.go): the session is in use
}

// touch restarts the session's idle timer from outside its goroutine.
func (s *sessionRunner) touch() {
	select {
	case s.touched <- struct{}{}:
	default:
	}
}

func (s *sessionRunner) tunnelCount() int {
	s.a.mu.Lock()
	defer s.a.mu.Unlock()
	return s.tunnels
}

// run is the session's goroutine.
func (s *sessionRunner) run(sd SessionDriver, open sessionCall) {
	a := s.a
	defer a.sessWG.Done()
	log := a.lg().With("session_id", s.id, "lane", s.laneURL)

	octx, cancel := context.WithTimeout(s.ctx, sessionOpenTimeout)
	sess, err := sd.OpenSession(octx, s.lane, s.id, s.opts)
	cancel()
	if err != nil {
		s.end(log, fmt.Errorf("open session: %w", err))
		replySession(open.l, s.id, open.commandID, nil, fmt.Errorf("open session: %w", err))
		return
	}
	// The lane's name only: a browser's DevTools address never leaves the
	// worker (a CDP client reaches the lane through the hub).
	res := map[string]any{"lane": s.laneURL}
	if u := a.laneDevTools(s.lane); u != "" {
		if v := laneVersion(s.ctx, u); v != nil {
			res["browser"] = v // what the hub's /sessions/{id}/json/version repeats
		}
	}
	b, _ := json.Marshal(res) // strings only: cannot fail
	replySession(open.l, s.id, open.commandID, b, nil)
	log.Info("session opened")

	s.serve(sess, log)

	s.waitTunnels(log)
	why := context.Cause(s.ctx)
	if cc, ok := sess.(CleanCloser); ok && (errors.Is(why, errSessionClosed) || errors.Is(why, errSessionIdle)) {
		ctx, cancel := context.WithTimeout(context.Background(), sessionSaveTimeout)
		err := cc.CloseClean(ctx)
		cancel()
		if err != nil {
			log.Warn("close session", "err", err)
		}
	} else if err := sess.Close(); err != nil {
		log.Warn("close session", "err", err)
	}
	s.end(log, why)
}

// LaneSuspecter is implemented by a Driver that can be told a lane's
// browser is not to be trusted: its next user restarts it first.
type LaneSuspecter interface {
	MarkLaneSuspect(lane int, why string)
}

// tunnelDrain bounds the wait for a closing session's tunnels; their
// sockets are closed when the session's context ends, so they stop at once
// unless a socket write hangs.
const tunnelDrain = 5 * time.Second

// waitTunnels waits for the session's tunnel goroutines to stop. One that
// does not within tunnelDrain makes the lane suspect: the cleanup after it
// cannot be trusted, and the lane's next user gets a fresh browser.
func (s *sessionRunner) waitTunnels(log *slog.Logger) {
	if !waitGroupFor(&s.tunnelWG, tunnelDrain) {
		log.Warn("CDP tunnels did not stop in time; closing the session without them", "timeout", tunnelDrain)
		if m, ok := s.a.driver.(LaneSuspecter); ok {
			m.MarkLaneSuspect(s.lane, "a CDP tunnel outlived its session")
		}
	}
}

// serve runs commands until the session's context ends.
func (s *sessionRunner) serve(sess Session, log *slog.Logger) {
	idle := time.NewTimer(s.idle)
	defer idle.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-s.touched:
			idle.Reset(s.idle)
		case <-idle.C:
			if s.tunnelCount() > 0 {
				idle.Reset(s.idle) // a CDP client is attached: in use, however quiet
				continue
			}
			log.Info("session idle; closing it", "idle", s.idle)
			s.cancel(errSessionIdle)
			return
		case c := <-s.cmds:
			res, err := s.exec(sess, c)
			if s.ctx.Err() != nil {
				replySession(c.l, s.id, c.commandID, nil, fmt.Errorf("%s: %w", c.op, context.Cause(s.ctx)))
				return
			}
			replySession(c.l, s.id, c.commandID, res, err)
			idle.Reset(s.idle)
		}
	}
}

// exec runs one command with its timeout.
func (s *sessionRunner) exec(sess Session, c sessionCall) (res json.RawMessage, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("driver panic: %v", p)
		}
	}()
	ctx, cancel := context.WithTimeout(s.ctx, c.timeout)
	defer cancel()
	res, err = sess.Do(ctx, c.command)
	switch {
	case err != nil:
		return nil, err
	case len(res) > maxSessionResultBytes:
		return nil, fmt.Errorf("%s: result of %d bytes exceeds the limit of %d", c.op, len(res), maxSessionResultBytes)
	case len(res) > 0 && !json.Valid(res):
		return nil, fmt.Errorf("%s: driver %s returned an invalid result", c.op, s.a.driver.Name())
	}
	return res, nil
}

// end unregisters the session and frees its lane, then answers what is
// still queued (with an error) and the close commands (with success). The
// lane is free before any close is answered, so a hub that opens a new
// session right after the close finds it free.
func (s *sessionRunner) end(log *slog.Logger, why error) {
	a := s.a
	a.mu.Lock()
	if a.sessions[s.id] == s {
		delete(a.sessions, s.id)
	}
	a.lanes.release(s.lane)
	closers := s.closers
	s.closers = nil
	a.mu.Unlock()
	s.cancel(why)

	// Unregistered under mu: nothing can be queued or added to closers any
	// more, so this drain answers every command that is left.
	for {
		select {
		case c := <-s.cmds:
			replySession(c.l, s.id, c.commandID, nil, fmt.Errorf("%s: %w", c.op, errSessionClosed))
			continue
		default:
		}
		break
	}
	for _, c := range closers {
		replySession(c.l, s.id, c.commandID, json.RawMessage(`{"was_open":true}`), nil)
	}
	if why == nil || errors.Is(why, errSessionClosed) {
		why = errSessionClosed
	}
	log.Info("session ended", "why", why.Error())
}
