package chromium

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chromedp/cdproto"
	"github.com/chromedp/cdproto/cdp"
	jsonv2 "github.com/chromedp/cdproto/cdp/jsonv2"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/remote"

	"github.com/paprika-hub/paprika/messages"
)

// A session's guard: the pages a raw CDP client opens on a session's lane
// (the gateway's Puppeteer, Playwright and chromedp clients, often in the
// browser's default context) get what the session's own page gets from
// its tab — the egress policy, the block option and answers to the
// proxy's challenges — through a DevTools connection of the driver's own
// to the lane's browser, held while the session is open.
//
// The guard enables Fetch on the browser target itself: Chromium then
// pauses every request the browser makes, whatever target makes it —
// pages and iframes of every BrowserContext, dedicated, shared and service
// workers, the browser's own — from the first, with no per-target state.
// The per-target alternative (Target.setAutoAttach with
// waitForDebuggerOnStart, Fetch.enable on each target attached, then
// Runtime.runIfWaitingForDebugger) was built and measured first, and it
// leaks: a dedicated worker has no Fetch domain, and a shared worker's
// requests escaped its own Fetch in 8 of 15 tries (apparently its loader
// is set up before the enable takes effect); with the browser's Fetch
// none of 15 escaped, and TestSecuritySessionGuardWithoutOptions checks
// every kind of target.
//
// Each paused request is judged as a tab judges it (judge: the block
// option, then the egress policy on the resolved addresses) and continued
// or failed with BlockedByClient; each proxy challenge is answered by the
// session's proxyAuth (source Proxy, from the session's proxy server, at
// most once per request; a website's own 401 is never answered).
//
// Several DevTools clients may intercept the same request: Chromium
// chains their interceptions, the newest session's first, and the
// browser's Fetch innermost, next to the network. A client's own Fetch
// interception keeps working — it sees each request first — and whatever
// it changes (Fetch.continueRequest with another URL) is judged by the
// guard after it (tested). What a client answers itself
// (Fetch.fulfillRequest) never reaches the network, so needs no check.
//
// Bounds: the reader never waits for a handler: a decision that needs no
// lookup (a blocked URL, a host decided before, a URL without a host) is
// answered by the reader at once; the rest queue for guardWorkers workers
// (guardQueue deep; a request that finds the queue full fails: closed)
// whose lookups are bounded by the egress policy's timeout; every call
// has guardCallTimeout and every write guardWriteTimeout. A guard whose
// connection fails while its session is open stops the lane's browser:
// pages a client opens must not run unguarded, and a browser that does
// not read its socket is wedged anyway.
//
// A session's close first locks the guard down (every request from then
// on fails), then closes the session's page and cleans the lane, and only
// then disconnects the guard: nothing a client left running (a page still
// loading, a service worker) reaches the network unjudged between the
// session's end and the cleanup.

const (
	guardWorkers      = 8
	guardQueue        = 1024
	guardCallTimeout  = 5 * time.Second
	guardWriteTimeout = 5 * time.Second
)

var errGuardStopped = errors.New("guard stopped")

// guard is one session's guard (see above). Its goroutines, the reader
// and the workers, end with stop.
type guard struct {
	// Fixed after startGuard.
	l     *lane
	b     *browserProc
	block *blocker
	auth  *proxyAuth
	conn  *remote.Conn
	log   *slog.Logger
	ctx   context.Context // ends at stop, or when the connection fails
	end   context.CancelCauseFunc
	queue chan guardPaused // paused requests whose host needs a lookup

	seen    egressCache
	nextID  atomic.Int64
	locked  atomic.Bool  // lockdown: every request fails, a lost connection is no news
	dropped atomic.Int64 // requests failed because the queue was full

	mu      sync.Mutex
	pending map[int64]chan *cdproto.Message // nil once the connection is gone

	wg      sync.WaitGroup
	endOnce sync.Once
}

// guardPaused is one paused request waiting for a worker.
type guardPaused struct {
	sid target.SessionID
	ev  fetch.EventRequestPaused
}

// startGuard connects to the tab's browser and guards every request of
// it, with the session's options o. ctx bounds the start only.
func (t *tab) startGuard(ctx context.Context, o *messages.BrowserOptions, sessionID string) (*guard, error) {
	start := time.Now()
	dctx, cancel := context.WithTimeout(ctx, guardCallTimeout)
	defer cancel()
	conn, err := remote.DialContext(dctx, t.b.wsURL)
	if err != nil {
		return nil, fmt.Errorf("guard: connect to the browser: %w", err)
	}
	g := &guard{l: t.l, b: t.b, block: newBlocker(o), auth: newProxyAuth(o), conn: conn,
		log:     t.l.d.log.With("lane", t.l.idx, "session_id", sessionID),
		queue:   make(chan guardPaused, guardQueue),
		pending: map[int64]chan *cdproto.Message{}}
	g.ctx, g.end = context.WithCancelCause(t.b.ctx)
	context.AfterFunc(g.ctx, g.lost) // closes the connection, which ends the reader
	g.wg.Go(g.read)
	for range guardWorkers {
		g.wg.Go(g.work)
	}
	var handleAuth *bool
	if g.auth != nil {
		handleAuth = new(true)
	}
	sctx, cancel := context.WithTimeout(ctx, guardCallTimeout)
	defer cancel()
	_, err = guardCall(sctx, g, "", fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{{URLPattern: "*"}}, HandleAuthRequests: handleAuth})
	if err != nil {
		g.lockdown()
		g.stop()
		return nil, fmt.Errorf("guard: intercept the browser's requests: %w", err)
	}
	g.log.Debug("guard started", "took", time.Since(start).Round(time.Microsecond))
	return g, nil
}

// lockdown makes every request from now on fail: the session is closing.
// Its guard stays connected until stop, so that nothing a client left
// running goes out unjudged before the lane is cleaned.
func (g *guard) lockdown() {
	if g != nil {
		g.locked.Store(true)
	}
}

// stop disconnects the guard and waits for its goroutines. Safe to call
// twice; nil stops nothing.
func (g *guard) stop() {
	if g == nil {
		return
	}
	g.locked.Store(true)
	g.end(errGuardStopped)
	g.lost() // closes the connection now, so the reader ends
	g.wg.Wait()
	if n := g.dropped.Load(); n > 0 {
		g.log.Warn("guard failed requests it could not judge in time", "requests", n)
	}
}

// lost runs once when g.ctx ends: it closes the connection and, when the
// session is still open and its browser up, stops the browser (see the
// top of this file).
func (g *guard) lost() {
	g.endOnce.Do(func() {
		_ = g.conn.Close()
		g.mu.Lock()
		g.pending = nil // calls still waiting end with g.ctx
		g.mu.Unlock()
		if g.locked.Load() || g.b.ctx.Err() != nil {
			return
		}
		g.log.Warn("guard lost its connection to the session's browser; stopping the browser", "cause", context.Cause(g.ctx))
		g.l.markSuspect("the session's guard failed")
		// Not on the caller's way: it may be the reader or a write's timer.
		// Added before stop's Wait: stop calls lost first, and endOnce
		// makes it wait for this run.
		g.wg.Go(g.b.stop)
	})
}

// read is the guard's only reader of the connection. It never waits for
// a handler: what it cannot answer at once goes to the workers' queue.
func (g *guard) read() {
	for {
		msg := new(cdproto.Message)
		if err := g.conn.Read(g.ctx, msg); err != nil {
			g.end(fmt.Errorf("read: %w", err))
			return
		}
		if msg.ID != 0 {
			g.mu.Lock()
			ch := g.pending[msg.ID]
			delete(g.pending, msg.ID)
			g.mu.Unlock()
			if ch != nil {
				ch <- msg // buffered
			} else if msg.Error != nil && g.ctx.Err() == nil {
				g.log.Debug("guard command failed", "err", msg.Error.Message)
			}
			continue
		}
		var err error
		switch msg.Method {
		case cdproto.EventFetchRequestPaused:
			var ev fetch.EventRequestPaused
			if err = jsonv2.Unmarshal(msg.Params, &ev, chromedp.DefaultUnmarshalOptions); err == nil {
				g.paused(msg.SessionID, ev)
			}
		case cdproto.EventFetchAuthRequired:
			var ev fetch.EventAuthRequired
			if err = jsonv2.Unmarshal(msg.Params, &ev, chromedp.DefaultUnmarshalOptions); err == nil {
				g.authRequired(msg.SessionID, &ev)
			}
		}
		if err != nil {
			g.log.Debug("guard: undecodable event", "method", msg.Method, "err", err)
		}
	}
}

// paused judges one paused request: at once when no lookup is needed,
// else through the workers' queue.
func (g *guard) paused(sid target.SessionID, ev fetch.EventRequestPaused) {
	u := requestURL(ev)
	if g.locked.Load() {
		g.answer(sid, ev, verdict{blockedBy: "the session is closing"})
		return
	}
	if blocked, why := g.block.blocks(ev.ResourceType, u); blocked {
		g.answer(sid, ev, verdict{blockedBy: why})
		return
	}
	if known, err := g.seen.known(u); known {
		g.answer(sid, ev, verdict{egress: err})
		return
	}
	select {
	case g.queue <- guardPaused{sid: sid, ev: ev}:
	default:
		// Fail closed: a request the guard cannot judge does not go out.
		g.dropped.Add(1)
		g.answer(sid, ev, verdict{blockedBy: "the guard's queue is full"})
	}
}

// work judges the queued requests; each lookup is bounded by the egress
// policy's timeout.
func (g *guard) work() {
	for {
		select {
		case <-g.ctx.Done():
			return
		case p := <-g.queue:
			v := judge(g.ctx, g.block, &g.seen, g.l.d.egress, p.ev.ResourceType, requestURL(p.ev))
			if g.locked.Load() {
				v = verdict{blockedBy: "the session is closing"}
			}
			g.answer(p.sid, p.ev, v)
		}
	}
}

// answer continues or fails one paused request.
func (g *guard) answer(sid target.SessionID, ev fetch.EventRequestPaused, v verdict) {
	if !v.fails() {
		g.send(sid, fetch.ContinueRequest.Method, fetch.ContinueRequestParams{RequestID: ev.RequestID})
		return
	}
	v.log(g.log, requestURL(ev), ev.ResourceType, "by", "guard")
	g.send(sid, fetch.FailRequest.Method, fetch.FailRequestParams{RequestID: ev.RequestID, ErrorReason: network.ErrorReasonBlockedByClient})
}

func requestURL(ev fetch.EventRequestPaused) string {
	if ev.Request == nil {
		return ""
	}
	return ev.Request.URL
}

// authRequired answers a challenge at once (proxyAuth.response needs no
// I/O). Nothing of the credentials is logged.
func (g *guard) authRequired(sid target.SessionID, ev *fetch.EventAuthRequired) {
	resp := g.auth.response(ev)
	g.send(sid, fetch.ContinueWithAuth.Method, fetch.ContinueWithAuthParams{RequestID: ev.RequestID, AuthChallengeResponse: resp})
	var origin string
	if ev.AuthChallenge != nil {
		origin = ev.AuthChallenge.Origin
	}
	g.log.Debug("guard answered an auth challenge", "origin", origin, "response", resp.Response)
}

// guardCall runs one command on a session of the guard's connection ("":
// the browser) and waits for its result.
func guardCall[P, R any](ctx context.Context, g *guard, sid target.SessionID, cmd cdp.Command[P, R], params P) (R, error) {
	var res R
	id := g.nextID.Add(1)
	ch := make(chan *cdproto.Message, 1)
	g.mu.Lock()
	if g.pending == nil {
		g.mu.Unlock()
		return res, context.Cause(g.ctx)
	}
	g.pending[id] = ch
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		if g.pending != nil {
			delete(g.pending, id)
		}
		g.mu.Unlock()
	}()
	if err := g.write(id, sid, cmd.Method, params); err != nil {
		return res, err
	}
	select {
	case msg := <-ch:
		if msg.Error != nil {
			return res, fmt.Errorf("%s: %s", cmd.Method, msg.Error.Message)
		}
		if len(msg.Result) > 0 {
			if err := jsonv2.Unmarshal(msg.Result, &res, chromedp.DefaultUnmarshalOptions); err != nil {
				return res, fmt.Errorf("%s: decode: %w", cmd.Method, err)
			}
		}
		return res, nil
	case <-ctx.Done():
		return res, fmt.Errorf("%s: %w", cmd.Method, context.Cause(ctx))
	case <-g.ctx.Done():
		return res, fmt.Errorf("%s: %w", cmd.Method, context.Cause(g.ctx))
	}
}

// send writes a command without waiting for its answer (the reader logs a
// failure at Debug): how the reader and the workers answer requests.
func (g *guard) send(sid target.SessionID, method string, params any) {
	if err := g.write(g.nextID.Add(1), sid, method, params); err != nil && g.ctx.Err() == nil {
		g.log.Debug("guard: send", "method", method, "err", err)
	}
}

// write sends one command. A write the browser does not take within
// guardWriteTimeout ends the guard (and lost stops the browser).
func (g *guard) write(id int64, sid target.SessionID, method string, params any) error {
	if err := g.ctx.Err(); err != nil {
		return context.Cause(g.ctx)
	}
	raw, err := jsonv2.Marshal(params, chromedp.DefaultMarshalOptions)
	if err != nil {
		return fmt.Errorf("%s: encode: %w", method, err)
	}
	timer := time.AfterFunc(guardWriteTimeout, func() {
		g.end(fmt.Errorf("the browser took no command within %s", guardWriteTimeout))
		_ = g.conn.Close() // unblocks the write
	})
	defer timer.Stop()
	if err := g.conn.Write(g.ctx, &cdproto.Message{ID: id, SessionID: sid, Method: cdproto.MethodType(method), Params: raw}); err != nil {
		g.end(fmt.Errorf("write: %w", err))
		return err
	}
	return nil
}
