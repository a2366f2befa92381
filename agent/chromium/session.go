package chromium

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/chromedp/cdproto/storage"
	"github.com/chromedp/chromedp"

	"github.com/paprika-hub/paprika/agent"
	"github.com/paprika-hub/paprika/messages"
)

// maxSessionPNG bounds a session screenshot, which travels inline, base64
// encoded, in one session_result frame (1 MiB at most).
const maxSessionPNG = 640 << 10

// session is an interactive session on one lane: a page in a BrowserContext
// of its own, like a job's, kept until Close. The agent calls Do for one
// command at a time; mu makes that a rule rather than an assumption.
type session struct {
	// Fixed after OpenSession.
	d       *Driver
	id      string
	t       *tab
	dls     *downloads // uploads the page's downloads as they complete
	guard   *guard     // every request of the lane's browser (guard.go); nil only in a benchmark's baseline
	release func()
	rec     *recorder // record: true; nil otherwise
	// profile is the profile the session holds ("" none), prof its state
	// as restored, which a clean close updates and saves.
	profile string
	prof    messages.ProfileState

	mu     sync.Mutex
	closed bool
}

var (
	_ agent.Session     = (*session)(nil)
	_ agent.CleanCloser = (*session)(nil)
)

// OpenSession implements agent.SessionDriver: it takes the lane, checks or
// (re)starts its browser as a job would, and opens a fresh page.
func (d *Driver) OpenSession(ctx context.Context, lane int, sessionID string, opts messages.BrowserOptions) (agent.Session, error) {
	log := func(line string) { d.log.Info(line, "session_id", sessionID) }
	if line := describeOptions(&opts); line != "" {
		log(line)
	}
	t, release, err := d.openLaneTab(ctx, lane, log, &opts, sessionLaunch(&opts, sessionID))
	if err != nil {
		return nil, err
	}
	if len(opts.Cookies) > 0 {
		// The session's page has them in its own context; a raw CDP
		// client's pages in the default context get them too.
		rctx, done := t.bind(ctx)
		_, err := chromedp.CallBrowser(rctx, storage.SetCookies, storage.SetCookiesParams{Cookies: cookieParams(opts.Cookies)})
		done()
		if err != nil {
			t.close()
			release()
			return nil, fmt.Errorf("cookies: %w", err)
		}
	}
	var prof messages.ProfileState
	if opts.Profile != "" {
		// Before the open is answered: the client's first command already
		// finds the profile's cookies and localStorage in the session's tab.
		if prof, err = d.restoreProfile(ctx, t, messages.SessionSlotPrefix+sessionID, 0, opts.Profile, log); err != nil {
			t.close()
			release()
			return nil, err
		}
	}
	// Before the session is handed out, so before any CDP tunnel opens:
	// every page a client opens is guarded from its first request.
	var g *guard
	if !d.cfg.noGuard {
		if g, err = t.startGuard(ctx, &opts, sessionID); err != nil {
			t.close()
			if ctx.Err() != nil {
				release()
				return nil, ctx.Err()
			}
			t.l.markSuspect(err.Error())
			release()
			return nil, agent.Fail(agent.ReasonLaneError, "lane %d: %v", lane, err)
		}
		t.l.setBeforeFree(g.stop)
	}
	dls, err := watchDownloads(t, true, d.sessionDownloadStore(sessionID), log)
	if err != nil {
		g.lockdown()
		t.close()
		t.l.markSuspect(err.Error())
		release()
		return nil, agent.Fail(agent.ReasonLaneError, "lane %d: %v", lane, err)
	}
	sess := &session{d: d, id: sessionID, t: t, dls: dls, guard: g, release: release, profile: opts.Profile, prof: prof}
	if opts.Record {
		sess.rec = startRecording(ctx, t, log)
	}
	return sess, nil
}

// Do implements agent.Session: command is a step, as in a macro (op
// navigate, click, type, wait, screenshot, text or eval, with the same
// fields). The result is the step's result; a screenshot is returned
// inline as {"png_base64": ..., "bytes": N} since sessions have no job to
// attach assets to.
func (s *session) Do(ctx context.Context, command json.RawMessage) (json.RawMessage, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errors.New("session closed")
	}
	st, err := parseStep(command)
	if err != nil {
		return nil, err
	}
	if st.Op == messages.OpScreenshot && st.Name != "" {
		return nil, errors.New("screenshot: name is for macro assets; a session screenshot is returned inline")
	}
	out, err := s.t.runStep(ctx, st, s.d.cfg.StepTimeout)
	if err != nil {
		var je *agent.JobError
		if errors.As(err, &je) {
			err = je.Err // the reason means nothing to a session; keep the cause
		}
		return nil, fmt.Errorf("%s: %w", st.describe(), err)
	}
	if out.png != nil {
		if len(out.png) > maxSessionPNG {
			return nil, fmt.Errorf("%s: %d bytes, more than a session result carries (%d); screenshot an element (selector) or use a macro job", st.describe(), len(out.png), maxSessionPNG)
		}
		out.result["png_base64"] = base64.StdEncoding.EncodeToString(out.png)
	}
	b, err := json.Marshal(out.result)
	if err != nil {
		return nil, fmt.Errorf("encode result: %w", err)
	}
	return b, nil
}

// Close implements agent.Session: it locks the session's guard down,
// closes the page, disposes of its BrowserContext, cleans the lane
// (hygiene.go), frees it and disconnects the guard. A CDP tunnel
// to the lane's browser must be closed first. Safe to call twice.
func (s *session) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closeLocked()
	return nil
}

// CloseClean implements agent.CleanCloser: it saves the session's
// profile from its tab (cookies of its BrowserContext, localStorage of
// the page's origin), then closes as Close does. A failed save is
// returned, the session closed all the same.
func (s *session) CloseClean(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	var err error
	if s.profile != "" {
		// Before the guard's lockdown and the tab's close: the page still
		// shows the session's last document.
		log := func(line string) { s.d.log.Info(line, "session_id", s.id) }
		err = s.d.saveProfile(ctx, s.t, messages.SessionSlotPrefix+s.id, 0, s.profile, s.prof, log)
	}
	s.closeLocked()
	return err
}

// closeLocked is Close with s.mu held.
func (s *session) closeLocked() {
	if s.closed {
		return
	}
	s.closed = true
	// The CDP tunnels are closed already. Whatever a client left running
	// fails from here on, until the lane is clean (guard.go).
	s.guard.lockdown()
	if s.rec != nil {
		ctx, cancel := context.WithTimeout(context.Background(), recordStoreWait)
		s.d.storeSessionRecording(ctx, s.id, s.rec)
		cancel()
	}
	s.dls.close() // uploads what completed, removes the files; before the tab closes
	s.t.close()
	s.release() // disconnects the guard once the lane is clean (beforeFree)
	s.guard.stop()
}
