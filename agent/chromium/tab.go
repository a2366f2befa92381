package chromium

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/inspector"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/paprika-hub/paprika/agent"
	"github.com/paprika-hub/paprika/messages"
)

// Causes that end a tab's context; failure maps them to a reason.
var (
	errRendererCrashed = errors.New("renderer crashed")
	errTabClosed       = errors.New("tab closed")
)

// tab is the one page a job or session has on its lane, in a BrowserContext
// of its own: cookies, storage, cache and permissions start empty and are
// thrown away with the context when the tab closes, so nothing a job leaves
// behind reaches the next job on the lane. A tab is used by one goroutine at
// a time (its job's, or its session's command runner); crashed and the popup
// guard's goroutine are the only concurrent parts.
type tab struct {
	// Fixed after openTab.
	l      *lane
	b      *browserProc
	ctx    context.Context         // chromedp context of the page; ends when the tab closes
	cancel context.CancelCauseFunc // ends ctx with a cause (crash, close)
	id     target.ID
	bcID   cdp.BrowserContextID
	opts   *messages.BrowserOptions // the job's or session's browser options; nil = none
	block  *blocker                 // nil: nothing blocked
	auth   *proxyAuth               // nil: no proxy credentials

	aux sync.WaitGroup // goroutines answering auth challenges; close waits

	crashed    atomic.Bool
	guardDone  chan struct{}               // closed when the popup guard's goroutine ends
	egressDone chan struct{}               // closed when the egress guard's goroutine (and its checks) ended
	egressSeen egressCache                 // the policy's decisions for this tab's hosts
	docBlocked atomic.Pointer[EgressError] // the last main-frame document the egress guard failed
	seed       atomic.Pointer[string]      // while a profile's IndexedDB is restored: the seed document's URL (profile_idb.go)
	closeOnce  sync.Once
}

// openTab creates a BrowserContext and a page in it, with the browser
// options o applied (nil: none; see options.go). ctx bounds the creation
// only; the tab lives until close.
func (l *lane) openTab(ctx context.Context, b *browserProc, o *messages.BrowserOptions) (*tab, error) {
	pctx, cancel := context.WithCancelCause(b.ctx)
	tctx, _ := chromedp.NewContext(pctx, chromedp.WithNewBrowserContext(contextOptions(o)...)) // its cancel is chromedp.Cancel(tctx), in close
	t := &tab{l: l, b: b, ctx: tctx, cancel: cancel, guardDone: make(chan struct{}), egressDone: make(chan struct{}),
		opts: o, block: newBlocker(o), auth: newProxyAuth(o)}

	// The page's event loop lives as long as the context of the first call,
	// so that call gets tctx itself, cut short from outside if ctx ends.
	stop := context.AfterFunc(ctx, func() { cancel(context.Cause(ctx)) })
	err := chromedp.Do(tctx)
	stop()
	if err == nil {
		err = t.applyOptions(tctx)
	}
	if err == nil {
		c := chromedp.FromContext(tctx)
		t.id, t.bcID = c.Target.TargetID, c.BrowserContextID
		err = chromedp.Listen(tctx, t.onEvent)
	}
	egressStarted := false
	if err == nil {
		// Every request of the page pauses until the egress guard let it
		// go: subscribed before Fetch.enable, so none is missed.
		paused := chromedp.Events(tctx, fetch.RequestPaused)
		go t.guardEgress(paused)
		egressStarted = true
		// With proxy credentials the page's 407s pause too (answerAuth).
		var handleAuth *bool
		if t.auth != nil {
			handleAuth = new(true)
		}
		_, err = chromedp.Call(tctx, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{{URLPattern: "*"}}, HandleAuthRequests: handleAuth})
		if err != nil {
			err = fmt.Errorf("enable the egress policy: %w", err)
		}
	}
	if err != nil {
		close(t.guardDone)
		if !egressStarted {
			close(t.egressDone)
		}
		t.close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("open a page: %w", err)
	}
	events := chromedp.BrowserEvents(tctx, target.TargetCreated) // subscribed from here on
	go t.guardPopups(events)
	return t, nil
}

// onEvent runs on the page's event loop: it must return at once.
func (t *tab) onEvent(ev any) {
	switch ev := ev.(type) {
	case *inspector.EventTargetCrashed:
		if t.crashed.CompareAndSwap(false, true) {
			t.l.events.crash()
			t.l.markSuspect("the renderer crashed in the previous job or session")
			t.cancel(errRendererCrashed) // whatever waits on the page fails now, not at its deadline
		}
	case *fetch.EventAuthRequired:
		if t.ctx.Err() == nil {
			t.aux.Go(func() { t.answerAuth(ev) })
		}
	}
}

// guardPopups closes every other page that appears in the tab's
// BrowserContext (window.open, target=_blank), so that a lane never holds
// more than its one page for longer than the browser takes to report a new
// target. It ends with the tab (the iterator ends with t.ctx).
func (t *tab) guardPopups(events iter.Seq2[target.EventTargetCreated, error]) {
	defer close(t.guardDone)
	for ev, err := range events {
		if err != nil {
			return
		}
		info := ev.TargetInfo
		if info == nil || info.Type != "page" || info.BrowserContextID != t.bcID || info.TargetID == t.id {
			continue
		}
		if err := t.b.closeTarget(info.TargetID); err != nil && t.ctx.Err() == nil {
			t.l.d.log.Warn("close popup", "lane", t.l.idx, "url", info.URL, "err", err)
			continue
		}
		t.l.d.log.Debug("closed popup", "lane", t.l.idx, "url", info.URL)
	}
}

// maxEgressChecks bounds the requests of one tab checked at once (each may
// wait for a DNS lookup); more wait paused in Chromium.
const maxEgressChecks = 16

// guardEgress lets each paused request of the page go on, or fails it
// with BlockedByClient when the egress policy denies its host. It ends
// with the tab (the iterator ends with t.ctx), after its checks.
func (t *tab) guardEgress(paused iter.Seq2[fetch.EventRequestPaused, error]) {
	var wg sync.WaitGroup
	defer close(t.egressDone)
	defer wg.Wait()
	sem := make(chan struct{}, maxEgressChecks)
	for ev, err := range paused {
		if err != nil {
			return
		}
		select {
		case sem <- struct{}{}:
		case <-t.ctx.Done():
			return
		}
		wg.Go(func() {
			defer func() { <-sem }()
			t.decideRequest(ev)
		})
	}
}

// decideRequest answers one paused request of the tab's page (verdict
// says what is checked, and what is not).
func (t *tab) decideRequest(ev fetch.EventRequestPaused) {
	if t.seedFulfilled(ev) {
		return
	}
	var u string
	if ev.Request != nil {
		u = ev.Request.URL
	}
	v := judge(t.ctx, t.block, &t.egressSeen, t.l.d.egress, ev.ResourceType, u)
	if !v.fails() {
		if _, err := chromedp.Call(t.ctx, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: ev.RequestID}); err != nil && t.ctx.Err() == nil {
			t.l.d.log.Debug("continue request", "lane", t.l.idx, "url", u, "err", err)
		}
		return
	}
	var ee *EgressError
	if errors.As(v.egress, &ee) && ev.ResourceType == network.ResourceTypeDocument && ev.FrameID == cdp.FrameID(t.id) {
		t.docBlocked.Store(ee) // navigate reports it instead of Chromium's ERR_BLOCKED_BY_CLIENT
	}
	v.log(t.l.d.log, u, ev.ResourceType, "lane", t.l.idx)
	if _, err := chromedp.Call(t.ctx, fetch.FailRequest, fetch.FailRequestParams{RequestID: ev.RequestID, ErrorReason: network.ErrorReasonBlockedByClient}); err != nil && t.ctx.Err() == nil {
		t.l.d.log.Debug("fail request", "lane", t.l.idx, "url", u, "err", err)
	}
}

// verdict is what a Fetch pause does with one request: continue it, or
// fail it with BlockedByClient because the block option or the egress
// policy refuses it. A job's or session's own page (tab) and the pages a
// raw CDP client opens on a session's lane (guard) are judged alike.
type verdict struct {
	blockedBy string // the block option's rule that refuses the request, or ""
	egress    error  // the egress policy's refusal (*EgressError), or nil
}

func (v verdict) fails() bool { return v.blockedBy != "" || v.egress != nil }

// log records a refusal: the egress policy's at Info (an operator wants
// to see what a user tried to reach), the options' at Debug.
func (v verdict) log(log *slog.Logger, url string, rt network.ResourceType, attrs ...any) {
	if v.blockedBy != "" {
		log.Debug("options blocked a request", append(attrs, "url", url, "why", v.blockedBy)...)
		return
	}
	log.Info("egress policy blocked a request", append(attrs, "url", url, "type", rt, "err", v.egress)...)
}

// judge decides one request. The egress check is on the addresses the
// worker resolves now; Chromium resolves the name again when it connects,
// so a name whose DNS answer changes in between (DNS rebinding, a TTL of
// 0) can still reach a denied address. That residual risk is accepted
// here; a deny list that must hold against it belongs in the worker's
// firewall as well. Requests Chromium does not pause through a target's
// Fetch domain (WebSocket and WebRTC connections) are not checked either.
func judge(ctx context.Context, b *blocker, seen *egressCache, p *egressPolicy, rt network.ResourceType, url string) verdict {
	if blocked, why := b.blocks(rt, url); blocked {
		return verdict{blockedBy: why}
	}
	return verdict{egress: seen.check(ctx, p, url)}
}

// bind derives from the tab's context one that also ends when ctx does,
// carrying ctx's cause (e.g. the job's deadline). Actions run under it.
func (t *tab) bind(ctx context.Context) (context.Context, context.CancelFunc) {
	rctx, cancel := context.WithCancelCause(t.ctx)
	stop := context.AfterFunc(ctx, func() { cancel(context.Cause(ctx)) })
	return rctx, func() { stop(); cancel(nil) }
}

// failure turns an error of an action run under rctx into the job error
// to report: a crashed renderer or a dead browser is the lane's fault
// (lane_error), a deadline or cancellation is reported as such (the agent
// maps it), the rest is the job's (job_error).
func (t *tab) failure(rctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	switch {
	case t.crashed.Load():
		return agent.Fail(agent.ReasonLaneError, "%v", errRendererCrashed)
	case t.b.ctx.Err() != nil:
		t.l.markSuspect("the browser exited during the previous job")
		return agent.Fail(agent.ReasonLaneError, "browser exited: %v", t.b.exitCause())
	case rctx.Err() != nil:
		return context.Cause(rctx)
	}
	return err
}

// close closes the page and disposes of its BrowserContext (cookies,
// storage, every tab of it), then waits for the popup guard. A failure
// marks the lane for a restart, so that the next job starts clean anyway.
// Safe to call twice.
func (t *tab) close() {
	t.closeOnce.Do(func() {
		start := time.Now()
		// chromedp.Cancel detaches, closes the target and disposes of the
		// BrowserContext with a 5s budget of its own, then ends t.ctx.
		err := chromedp.Cancel(t.ctx)
		t.cancel(errTabClosed)
		<-t.guardDone
		<-t.egressDone
		t.aux.Wait()
		if err != nil && t.b.ctx.Err() == nil && !t.crashed.Load() {
			t.l.markSuspect(fmt.Sprintf("closing the previous page failed: %v", err))
		}
		t.l.d.log.Debug("tab closed", "lane", t.l.idx, "took", time.Since(start), "err", err)
	})
}
