package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/paprika-hub/paprika/messages"
)

// Screencasts (the live view, messages.TypeLiveOpen). The hub asks for one
// per watched lane while someone watches; the worker opens a DevTools
// connection of its own to the lane's page, runs CDP Page.startScreencast
// on it and streams the frames over a dedicated socket to its hub, one at
// a time: Chromium's frame is acknowledged (Page.screencastFrameAck) only
// after the hub acknowledged it, which it does once a viewer did, so the
// viewers pace Chromium and nothing queues. A controlling viewer's mouse
// and key events come back the same socket (Input.dispatch*).
const (
	// Screencast settings: JPEG at this quality, scaled to fit the box.
	screencastQuality   = 60
	screencastMaxWidth  = 1280
	screencastMaxHeight = 800
	// pageWait bounds the wait for the lane to have a page to show.
	pageWait = 5 * time.Second
	// endGrace is how long a lost page waits for its job's or session's
	// end, to name that as the reason.
	endGrace = time.Second
	// maxScreencastMessage bounds what the worker reads from either side.
	maxScreencastMessage = 16 << 20
)

// screencasts counts each agent's running screencasts (tests, and the
// answer to "does anything run with nobody watching"), kept beside the
// Agent so that its struct stays as it is.
var screencasts sync.Map // *Agent → *atomic.Int64

func (a *Agent) screencastCount() *atomic.Int64 {
	c, _ := screencasts.LoadOrStore(a, new(atomic.Int64))
	return c.(*atomic.Int64)
}

// Screencasts is how many screencasts this worker runs now.
func (a *Agent) Screencasts() int { return int(a.screencastCount().Load()) }

// handleLiveOpen starts one screencast's goroutine. It runs on the link's
// reader and never blocks.
func (a *Agent) handleLiveOpen(f messages.Frame) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.stopping {
		return // the grain's attach timeout tells the viewers
	}
	a.sessWG.Add(1) // under mu, ordered before stop's wait by the stopping flag
	go func() {
		defer a.sessWG.Done()
		parent, lane, done, ended, why := a.liveLane(f)
		defer done()
		// The lane's browser may be (re)starting for the job: its URL is
		// read as the page is looked for.
		a.runScreencast(parent, f.LiveID, func() string { return a.laneDevTools(lane) }, why, ended)
	}()
}

// jobWait bounds the wait for a job the hub reports running to reach this
// worker: its assignment and the live_open may cross.
const jobWait = 2 * time.Second

// liveLane finds the lane of f's job or session: the context it ends
// with, done to call when the screencast stopped, the close reason of its
// end, or why there is none.
func (a *Agent) liveLane(f messages.Frame) (ctx context.Context, lane int, done func(), ended, why string) {
	done, ended = func() {}, "job ended"
	for deadline := time.Now().Add(jobWait); ; {
		a.mu.Lock()
		if f.JobID != "" {
			if rj := a.jobs[f.JobID]; rj != nil && rj.ctx.Err() == nil {
				a.mu.Unlock()
				return rj.ctx, rj.lane, done, ended, ""
			}
			why = fmt.Sprintf("job %s is not running on worker %s", f.JobID, a.id)
		} else {
			ended = "session closed"
			if s := a.sessions[f.SessionID]; s != nil && s.ctx.Err() == nil {
				// The session's lane is cleaned only after its last
				// client, this one included (it dispatches input), is gone.
				s.tunnelWG.Add(1)
				a.mu.Unlock()
				return s.ctx, s.lane, s.tunnelWG.Done, ended, ""
			}
			a.mu.Unlock()
			return context.Background(), -1, done, ended, fmt.Sprintf("session %s is not open on worker %s", f.SessionID, a.id)
		}
		stopping := a.stopping
		a.mu.Unlock()
		if stopping || time.Now().After(deadline) {
			return context.Background(), -1, done, ended, why
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// runScreencast dials the hub, then the lane's page, and streams until
// either side closes or the job or session ends.
func (a *Agent) runScreencast(ctx context.Context, liveID string, laneURL func() string, why, ended string) {
	log := a.lg().With("live_id", liveID)
	base := a.hubURL.Load()
	if base == nil {
		return
	}
	u, err := hubWSURL(*base, "/workers/"+a.ID()+"/live/"+liveID)
	var hub *websocket.Conn
	if err == nil {
		var resp *http.Response
		hub, resp, err = a.dialHub(ctx, u)
		if err != nil && resp != nil {
			err = fmt.Errorf("HTTP %d: %w", resp.StatusCode, err)
		}
	}
	if err != nil {
		log.Info("screencast: the hub did not take the socket", "err", err)
		return
	}
	defer hub.Close()
	hub.SetReadLimit(maxScreencastMessage)
	if why != "" {
		closeSocket(hub, messages.CloseNormal, why)
		return
	}
	page, err := dialLanePage(ctx, laneURL)
	if err != nil {
		closeSocket(hub, messages.CloseInternal, "lane browser unreachable: "+err.Error())
		return
	}
	defer page.Close()
	page.SetReadLimit(maxScreencastMessage)
	a.screencastCount().Add(1)
	defer a.screencastCount().Add(-1)
	log.Info("screencast started")
	code, reason := streamScreencast(ctx, page, hub, ended)
	log.Info("screencast stopped", "code", code, "reason", reason)
}

// dialLanePage connects to the lane's page the screencast shows: the
// first page of the lane's /json/list, which Chromium orders by last
// activity — the page a job or client worked on last.
func dialLanePage(ctx context.Context, laneURLOf func() string) (*websocket.Conn, error) {
	deadline := time.Now().Add(pageWait)
	for {
		var list []struct {
			ID   string `json:"id"`
			Type string `json:"type"`
		}
		laneURL := laneURLOf()
		err := laneHTTP(ctx, laneURL, "/json/list", &list)
		for _, t := range list {
			if t.Type == "page" {
				u, err := laneTarget(laneURL, t.ID)
				if err != nil {
					return nil, err
				}
				return dialLane(ctx, u)
			}
		}
		if time.Now().After(deadline) {
			if err != nil {
				return nil, err
			}
			return nil, errors.New("the lane has no page")
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// cdpConn writes CDP commands to a page socket from several goroutines.
type cdpConn struct {
	mu sync.Mutex
	c  *websocket.Conn
	id int64
}

func (p *cdpConn) send(method string, params any) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.id++
	_ = p.c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	return p.c.WriteJSON(map[string]any{"id": p.id, "method": method, "params": params})
}

// hubMsg is one message of the hub's side of a screencast socket.
type hubMsg struct {
	Type  string          `json:"type"`
	Event json.RawMessage `json:"event"`
}

// streamScreencast runs the screencast until one side ends; it returns
// the close the hub is sent. Both reading goroutines have ended when it
// returns (the sockets are closed by the caller's defers after).
func streamScreencast(ctx context.Context, page, hub *websocket.Conn, ended string) (int, string) {
	cdp := &cdpConn{c: page}
	var hubMu sync.Mutex
	acks := make(chan struct{}, 1)
	ends := make(chan sideEnd, 2)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // the hub's side: acks and input
		defer wg.Done()
		for {
			var m hubMsg
			_, b, err := hub.ReadMessage()
			if err != nil {
				ends <- readEnd(err, "hub")
				return
			}
			if json.Unmarshal(b, &m) != nil {
				continue
			}
			switch m.Type {
			case "ack":
				select {
				case acks <- struct{}{}:
				default:
				}
			case messages.LiveInputMouse, messages.LiveInputKey:
				method := "Input.dispatchMouseEvent"
				if m.Type == messages.LiveInputKey {
					method = "Input.dispatchKeyEvent"
				}
				if json.Valid(m.Event) && m.Event[0] == '{' {
					_ = cdp.send(method, m.Event)
				}
			}
		}
	}()
	go func() { // the page's side: frames, each acked once the hub acked
		defer wg.Done()
		for {
			var ev struct {
				Method string `json:"method"`
				Params struct {
					Data      string `json:"data"`
					SessionID int64  `json:"sessionId"`
					Metadata  struct {
						DeviceWidth  float64 `json:"deviceWidth"`
						DeviceHeight float64 `json:"deviceHeight"`
					} `json:"metadata"`
				} `json:"params"`
			}
			_, b, err := page.ReadMessage()
			if err != nil {
				ends <- readEnd(err, "lane")
				return
			}
			if json.Unmarshal(b, &ev) != nil || ev.Method != "Page.screencastFrame" {
				continue
			}
			p := ev.Params
			out, _ := json.Marshal(map[string]any{"type": "frame", "data": p.Data,
				"width": max(1, int(p.Metadata.DeviceWidth)), "height": max(1, int(p.Metadata.DeviceHeight))})
			hubMu.Lock()
			_ = hub.SetWriteDeadline(time.Now().Add(10 * time.Second))
			err = hub.WriteMessage(websocket.TextMessage, out)
			hubMu.Unlock()
			if err != nil {
				ends <- sideEnd{code: messages.CloseInternal, reason: "worker could not write the screencast"}
				return
			}
			select {
			case <-acks:
			case <-stop:
				return
			}
			if err := cdp.send("Page.screencastFrameAck", map[string]any{"sessionId": p.SessionID}); err != nil {
				ends <- readEnd(err, "lane")
				return
			}
		}
	}()
	var first sideEnd
	if err := cdp.send("Page.startScreencast", map[string]any{"format": "jpeg", "quality": screencastQuality,
		"maxWidth": screencastMaxWidth, "maxHeight": screencastMaxHeight}); err != nil {
		first = sideEnd{code: messages.CloseInternal, reason: "lane browser unreachable: " + err.Error()}
	} else {
		select {
		case first = <-ends:
			// A job's tab closes as the job ends, a moment before its
			// context does: that is the job's end, not a lost lane.
			t := time.NewTimer(endGrace)
			select {
			case <-ctx.Done():
				first = sideEnd{code: messages.CloseNormal, reason: ended}
			case <-t.C:
			}
			t.Stop()
		case <-ctx.Done():
			first = sideEnd{code: messages.CloseNormal, reason: ended}
			if errors.Is(context.Cause(ctx), errAgentStopping) {
				first = sideEnd{code: messages.CloseGoingAway, reason: "worker is stopping"}
			}
		}
	}
	close(stop)
	_ = cdp.send("Page.stopScreencast", map[string]any{})
	code, reason := sendableClose(first)
	hubMu.Lock()
	closeSocket(hub, code, reason)
	hubMu.Unlock()
	// The closes end both readers: the hub answers our close frame, the
	// page socket is closed outright.
	_ = page.Close()
	t := time.AfterFunc(tunnelCloseWait, func() { _ = hub.Close() })
	wg.Wait()
	t.Stop()
	return code, reason
}
