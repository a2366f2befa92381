package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"time"

	"github.com/gorilla/websocket"

	"github.com/paprika-hub/paprika/internal/backoff"
	"github.com/paprika-hub/paprika/internal/cork"
	"github.com/paprika-hub/paprika/messages"
)

// Handshake timing.
const (
	// dialTimeout bounds the TCP connect plus the WebSocket upgrade.
	dialTimeout = 10 * time.Second
	// welcomeTimeout bounds the wait for welcome after hello.
	welcomeTimeout = 10 * time.Second
)

// CodeIDTaken is the error frame code with which a hub refuses a hello whose
// worker id is held by another IP; the agent then retries with LongID.
const CodeIDTaken = string(messages.CodeIDTaken)

// errIDTaken marks a session ended by an id_taken answer.
var errIDTaken = errors.New("worker id taken by another host")

// relinkError ends a session the hub answered with relink: the worker's
// grain lives on the hub at URL, one of Config.HubURLs.
type relinkError struct{ URL string }

func (e *relinkError) Error() string { return "hub asked to link to " + e.URL + " instead" }

// connectLoop keeps one link up until ctx ends, moving to the next hub URL
// after every failed dial or lost link, with exponential backoff and jitter.
func (a *Agent) connectLoop(ctx context.Context) {
	failures := 0 // since the last link that worked
	idx := 0
	// follow: hello lists the hub URLs, so a hub may send the link on. Off
	// on the link that follows a relink, and after that link failed before
	// its welcome until a link is welcomed: a hub URL the worker cannot
	// reach is never chosen for it again and again.
	follow := true
	for ctx.Err() == nil {
		base := a.cfg.HubURLs[idx]
		welcomed, retryNow, err := a.session(ctx, base, follow)
		if ctx.Err() != nil {
			return
		}
		if retryNow {
			// Same hub, new id: nothing is wrong with the hub.
			a.lg().Info("worker id taken; retrying with the long form", "hub_url", base, "err", err)
			continue
		}
		var rl *relinkError
		if errors.As(err, &rl) {
			if to := slices.Index(a.cfg.HubURLs, rl.URL); to >= 0 {
				// At once, and once: that link's hello lists no URLs, so
				// two hubs that disagree on the owner cannot bounce it.
				a.lg().Info("hub asked the worker to link where its grain lives", "hub_url", base, "next_hub_url", rl.URL)
				idx, follow = to, false
				continue
			}
			err = fmt.Errorf("hub asked to link to %q, which this worker was not given: %w", rl.URL, err)
		}
		if welcomed {
			failures = 0
			follow = true
		}
		idx = (idx + 1) % len(a.cfg.HubURLs)
		delay := reconnectBackoff.Delay(failures)
		failures++
		a.lg().Warn("hub link down; reconnecting", "hub_url", base, "next_hub_url", a.cfg.HubURLs[idx], "retry_in", delay, "err", err)
		if backoff.Sleep(ctx, delay) != nil {
			return
		}
	}
}

// session dials one hub, says hello, waits for welcome, then attaches the
// outbox and sends heartbeats until the link fails or ctx ends (then it
// closes the link normally). welcomed reports whether the hub accepted the
// worker; retryNow asks for an immediate redial (the id changed). With
// follow, hello lists the worker's hub URLs, and a hub may answer relink
// instead of welcome (a *relinkError).
func (a *Agent) session(ctx context.Context, base string, follow bool) (welcomed, retryNow bool, err error) {
	id := a.ID()
	u, err := linkURL(base, id)
	if err != nil {
		return false, false, err
	}
	conn, resp, err := a.dialHub(ctx, u)
	if err != nil {
		if resp != nil {
			return false, false, fmt.Errorf("dial %s: HTTP %d: %w", u, resp.StatusCode, err)
		}
		return false, false, fmt.Errorf("dial %s: %w", u, err)
	}
	// Before the reader starts: the hub may send its lane_skip ahead of
	// welcome.
	a.clearLaneSkips()
	l := newLink(conn, a.box, a.cfg.PingInterval, a.lg().With("hub_url", base), a.handleFrame)
	l.start()

	running, stats := a.report()
	helloStates := a.laneStates()
	health := a.newHealthReport() // nil for a driver without health
	defer health.stop()
	hello := messages.Frame{
		Type:     messages.TypeHello,
		WorkerID: id,
		LanIP:    a.lanIP.String(),
		Version:  a.cfg.Version,
		Capabilities: &messages.Capabilities{
			MaxConcurrent: a.cfg.Lanes,
			LaneURLs:      a.laneURLs(),
			Drivers:       []string{a.driver.Name()},
			Modes:         a.cfg.Modes,
		},
		LaneStates: helloStates,
		Stats:      stats,
		Running:    running,
	}
	if follow && len(a.cfg.HubURLs) > 1 {
		hello.HubURLs = a.cfg.HubURLs
	}
	health.hello(&hello)
	l.send(hello)

	wt := time.NewTimer(welcomeTimeout)
	defer wt.Stop()
	select {
	case f := <-l.hs:
		if f.Type == messages.TypeRelink {
			l.closeNormal(closeWait)
			return false, false, &relinkError{URL: f.HubURL}
		}
		if f.Type != messages.TypeWelcome {
			l.closeNormal(closeWait)
			switched := a.onIDTaken(id)
			return false, switched, fmt.Errorf("hello as %s: %w: %s", id, errIDTaken, f.Message)
		}
	case <-l.done:
		l.abort()
		return false, false, fmt.Errorf("waiting for welcome: %w", l.err)
	case <-wt.C:
		l.abort()
		return false, false, fmt.Errorf("no welcome within %s", welcomeTimeout)
	case <-ctx.Done():
		l.closeNormal(closeWait)
		return false, false, ctx.Err()
	}

	a.lg().Info("linked to hub", "hub_url", base)
	a.hubURL.Store(&base) // where UploadAsset sends assets
	// From here on job frames flow: every kept frame first (the re-send),
	// then new ones as jobs emit them.
	a.box.attach(l.ready)
	interval := a.heartbeatInterval()
	hb := time.NewTicker(interval)
	defer hb.Stop()
	lanes := newLaneReport(helloStates)
	defer lanes.stop()
	var laneChanges <-chan struct{} // nil (never ready) for drivers whose lanes do not change
	if w, ok := a.driver.(LaneWatcher); ok {
		laneChanges = w.LaneChanges()
	}
	poolChanges := a.lanes.changed // fixed after New; read by one link at a time
	if a.leaving() {
		l.send(messages.Frame{Type: messages.TypeLeaving}) // this hub has not heard it yet
	}
	for {
		select {
		case <-ctx.Done():
			// Run has stopped: every assignment read from here on is
			// rejected, and leave_ack says none is still on its way.
			l.leave(leaveWait)
			l.closeNormal(closeWait)
			a.box.detach(l.ready)
			return true, false, nil
		case <-a.drained:
			l.send(messages.Frame{Type: messages.TypeLeaving})
		case <-l.done:
			l.abort()
			a.box.detach(l.ready)
			return true, false, fmt.Errorf("link: %w", l.err)
		case <-hb.C:
			a.heartbeat(l, lanes, health)
			if iv := a.heartbeatInterval(); iv != interval {
				interval = iv
				hb.Reset(iv)
			}
		case <-laneChanges:
			lanes.changed(time.Now())
		case <-poolChanges:
			lanes.changed(time.Now())
		case <-health.due():
			if health.sample() {
				a.heartbeat(l, lanes, health)
			}
		case <-lanes.due():
			lanes.fired()
			// Skipped when a regular heartbeat carried the change already,
			// or the lanes changed back.
			if lanes.differs(a.laneStates()) {
				a.heartbeat(l, lanes, health)
			}
		}
	}
}

// dialHub opens a WebSocket to the hub at u with the worker's credential,
// CA and proxy settings: the link, and each CDP tunnel's own socket.
func (a *Agent) dialHub(ctx context.Context, u string) (*websocket.Conn, *http.Response, error) {
	hdr := http.Header{}
	if a.cfg.Token != "" {
		hdr.Set("Authorization", "Bearer "+a.cfg.Token)
	}
	dialer := websocket.Dialer{Proxy: http.ProxyFromEnvironment, HandshakeTimeout: dialTimeout, TLSClientConfig: a.tlsConf,
		ReadBufferSize: tunnelBuffer, WriteBufferSize: tunnelBuffer,
		// A Conn beneath, so the link's writer can gather a batch of
		// frames into one write (link.writeJobFrames).
		NetDialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return cork.Wrap(c), nil
		}}
	dctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	return dialer.DialContext(dctx, u, hdr)
}

// heartbeat sends a heartbeat with the running jobs and host stats, and the
// lanes' states and health when they are news to this link's hub.
func (a *Agent) heartbeat(l *link, lanes *laneReport, health *healthReport) {
	running, stats := a.report()
	f := messages.Frame{Type: messages.TypeHeartbeat, Stats: stats, Running: running}
	states := a.laneStates()
	if lanes.differs(states) {
		f.LaneStates = states
	}
	health.attach(&f)
	// A dropped frame leaves the change unreported: the next heartbeat
	// carries it.
	sent := l.send(f)
	if sent {
		health.reported(&f)
	}
	if sent && f.LaneStates != nil {
		lanes.reported(states, time.Now())
		a.lg().Debug("lane states reported", "lane_states", states)
	}
}

// onIDTaken switches a derived short id to the long form. It reports false
// when there is nothing to switch to (id set by Config.ID, or already long);
// the connect loop then backs off and tries again, in case the other host
// goes away.
func (a *Agent) onIDTaken(id string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	long := LongID(a.lanIP)
	if a.cfg.ID != "" || a.id != id || id == long {
		a.lg().Error("worker id taken by another host and no other form to try", "taken_id", id)
		return false
	}
	a.setIDLocked(long)
	return true
}

// heartbeatInterval is the current heartbeat period.
func (a *Agent) heartbeatInterval() time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.hbInterval
}

// laneURLs is every lane's name as the driver reports it (hello's
// lane_urls; the hub counts them and keeps nothing else of them).
func (a *Agent) laneURLs() []string {
	id := a.ID()
	urls := make([]string, a.cfg.Lanes)
	for i := range urls {
		urls[i] = a.driver.LaneURL(id, i)
	}
	return urls
}

// laneStater is the driver as a LaneStater; nil when its lanes have no
// state of their own.
func (a *Agent) laneStater() LaneStater {
	ls, _ := a.driver.(LaneStater)
	return ls
}

// restarting reports whether ls (which may be nil) is (re)starting lane's
// browser. Called under the agent's mu, as LaneState must be.
func restarting(ls LaneStater, lane int) bool {
	return ls != nil && ls.LaneState(lane) == messages.LaneRestarting
}

// laneStates is every lane's state: restarting while the driver (re)starts
// its browser (LaneStater), else job or session while one holds it, else
// idle. Read under mu, like the pool it reads.
func (a *Agent) laneStates() []string {
	ls := a.laneStater()
	a.mu.Lock()
	defer a.mu.Unlock()
	states := make([]string, a.lanes.size())
	for i := range states {
		states[i] = a.lanes.state(i)
		if restarting(ls, i) {
			states[i] = messages.LaneRestarting
		}
	}
	return states
}
