package tunnel

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/gorilla/websocket"

	"github.com/paprika-hub/paprika/actors/supervise"
	"github.com/paprika-hub/paprika/messages"
)

// Flow control and timing of a tunnel end. Both ends of a tunnel run the
// same code, so they agree on the window without negotiating it.
const (
	// ChunkBytes bounds one TunnelData piece: small enough that one large
	// message interleaves with others on the cluster link, large enough
	// that a 20 MB screenshot is about 300 messages.
	ChunkBytes = 64 << 10
	// Window is the credit of one direction: what a reader may have sent
	// and the peer's writer not yet written. It bounds each end's memory.
	Window = 1 << 20
	// chunkCost is charged per piece on top of its bytes, so that a flood
	// of empty or tiny messages is bounded by the window too (at most
	// Window/chunkCost pieces in flight).
	chunkCost = 256
	// maxPieces is the writer queue's room: every piece the window allows,
	// plus the close.
	maxPieces = Window/chunkCost + 2
	// DefaultAttachTimeout bounds the client end's wait for the worker end.
	DefaultAttachTimeout = 10 * time.Second
	// closeLinger bounds the wait for the other side's close frame after
	// ours, before the TCP connection is closed.
	closeLinger = time.Second
	// controlWait bounds writing a close frame.
	controlWait = time.Second
)

// Reasons a tunnel end closes its socket (the close frame's reason).
const (
	ReasonAttachTimeout = "worker did not open the tunnel"
	ReasonOverrun       = "tunnel peer overran its flow-control window"
	ReasonShutdown      = "a hub on the tunnel's path is shutting down; reconnect to cdp_url"
	ReasonSessionClosed = "session closed"
)

// Role says which socket an end holds.
type Role string

// The two ends of a tunnel.
const (
	RoleClient Role = "client" // the CDP client's socket
	RoleWorker Role = "worker" // the worker's tunnel socket
)

// peerGone is the close reason when the peer end's actor is gone (its hub
// died or it stopped without a close).
func (r Role) peerGone() string {
	if r == RoleClient {
		return "the hub carrying the lane's tunnel went away; reconnect to cdp_url"
	}
	return "the hub holding the client's socket went away"
}

// Config is one tunnel end.
type Config struct {
	Role     Role
	TunnelID string
	Log      *slog.Logger
	// Conn is the end's socket when it exists at spawn (the worker end);
	// the client end is spawned before the upgrade and gets it in Socket.
	Conn *websocket.Conn
	// Peer is the other end when known at spawn (the worker end); the
	// client end learns it from TunnelAttach.
	Peer *actor.PID
	// MaxMessageBytes bounds one WebSocket message read from Conn; a
	// longer one closes the tunnel with 1009. 0: no bound.
	MaxMessageBytes int64
	// AttachTimeout bounds the wait for the peer (0: DefaultAttachTimeout).
	AttachTimeout time.Duration
	// Touch, when set, runs on the end's turn every TouchEvery while the
	// end lives (the client end keeps its session in use).
	Touch      func(ctx actor.Context)
	TouchEvery time.Duration
	// OnStop runs on the end's last turn.
	OnStop func(ctx actor.Context)
	// Counters, when set, counts the end's bytes (tests).
	Counters *Counters
}

// Counters are an end's byte counts.
type Counters struct {
	Sent    atomic.Int64 // bytes the reader sent to the peer
	Written atomic.Int64 // bytes the writer wrote to the socket
}

// Socket hands the client end its socket after the upgrade.
type Socket struct{ Conn *websocket.Conn }

// Local messages of an end (never cross hubs).
type (
	readEnded struct {
		code   int
		reason string
	}
	writerDone    struct{}
	writeFailed   struct{ err error }
	attachTimeout struct{}
	touchTick     struct{}
	peerGone      struct{}
)

// piece is one item of the writer's queue: data, or the close (last).
type piece struct {
	data  *messages.TunnelData
	close *messages.TunnelClose
}

// end is one tunnel end. Fields after the first group are confined to the
// actor, except the atomics and channels, which the goroutines share.
type end struct {
	cfg Config

	// shared with the goroutines
	out        chan piece    // the writer's queue; room guaranteed by the window
	stop       chan struct{} // closed when the actor stops
	readerDone chan struct{} // closed when the reader ends
	credit     atomic.Int64  // what the reader may still send
	creditNote chan struct{} // wakes a reader waiting for credit
	inflight   atomic.Int64  // received from the peer and not yet written
	peerRef    atomic.Pointer[actor.PID]

	// actor-confined
	ws            *websocket.Conn
	peer          *actor.PID
	closing       bool
	readerStarted bool
	writerStarted bool
	timers        *supervise.Timers
	stopAttach    supervise.Stop
	log           *slog.Logger
}

// Props builds an end's actor. Its supervisor must stop it on a panic
// (see Ends): a restarted end could not adopt the socket's goroutines.
func Props(cfg Config) *actor.Props {
	return actor.PropsFromProducer(func() actor.Actor { return &end{cfg: cfg} })
}

// Receive handles lifecycle first, then the tunnel's messages.
func (e *end) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		e.start(ctx)
	case *actor.Stopping:
		e.shutdown(ctx)
	case *actor.Restarting:
		e.shutdown(ctx)
	case *Socket:
		e.attachSocket(ctx, m.Conn)
	case *messages.TunnelAttach:
		e.attachPeer(ctx, actor.NewPID(m.GetPeer().GetAddress(), m.GetPeer().GetId()))
	case *messages.TunnelData:
		e.data(ctx, m)
	case *messages.TunnelCredit:
		e.addCredit(ctx, m.Bytes)
	case *messages.TunnelClose:
		e.closeSocket(ctx, int(m.Code), m.Reason, true)
	case *actor.Terminated:
		// A system message: it overtakes the peer's last user messages
		// (its TunnelClose with the real reason), so it is handled behind
		// them, as a message of our own.
		if e.peer != nil && m.Who.Equal(e.peer) {
			ctx.Send(ctx.Self(), &peerGone{})
		}
	case *peerGone:
		e.peer = nil // nobody to tell
		e.closeSocket(ctx, messages.CloseInternal, e.cfg.Role.peerGone(), false)
	case *attachTimeout:
		if e.peer == nil {
			e.closeSocket(ctx, messages.CloseInternal, ReasonAttachTimeout, false)
		}
	case *readEnded:
		e.readEnded(ctx, m)
	case *writeFailed:
		if !e.closing {
			e.log.Info("tunnel socket write failed", slog.Any("err", m.err))
			e.tellPeer(ctx, messages.CloseInternal, string(e.cfg.Role)+" connection lost")
			e.closing = true
		}
		ctx.Stop(ctx.Self())
	case *writerDone:
		ctx.Stop(ctx.Self())
	case *touchTick:
		if e.cfg.Touch != nil && !e.closing {
			e.cfg.Touch(ctx)
		}
	}
}

func (e *end) start(ctx actor.Context) {
	e.log = e.cfg.Log.With(slog.String("tunnel_id", e.cfg.TunnelID), slog.String("end", string(e.cfg.Role)))
	e.out = make(chan piece, maxPieces)
	e.stop = make(chan struct{})
	e.readerDone = make(chan struct{})
	e.creditNote = make(chan struct{}, 1)
	e.credit.Store(Window)
	e.timers = supervise.NewTimers(ctx, "tunnel_end")
	if e.cfg.Touch != nil && e.cfg.TouchEvery > 0 {
		e.timers.Every(e.cfg.TouchEvery, &touchTick{})
	}
	if e.cfg.Peer != nil {
		e.attachPeer(ctx, e.cfg.Peer)
		// The worker end announces itself before its reader sends data.
		ctx.Send(e.peer, &messages.TunnelAttach{Peer: &messages.Ref{Address: ctx.Self().Address, Id: ctx.Self().Id}})
	} else {
		wait := e.cfg.AttachTimeout
		if wait <= 0 {
			wait = DefaultAttachTimeout
		}
		e.stopAttach = e.timers.After(wait, &attachTimeout{})
	}
	if e.cfg.Conn != nil {
		e.attachSocket(ctx, e.cfg.Conn)
	}
}

func (e *end) attachSocket(ctx actor.Context, ws *websocket.Conn) {
	if e.ws != nil || ws == nil {
		return
	}
	e.ws = ws
	if e.cfg.MaxMessageBytes > 0 {
		ws.SetReadLimit(e.cfg.MaxMessageBytes)
	}
	self, root := ctx.Self(), ctx.ActorSystem().Root
	e.writerStarted = true
	go e.writeLoop(root, self, ws)
	e.maybeRead(ctx)
}

func (e *end) attachPeer(ctx actor.Context, pid *actor.PID) {
	if e.peer != nil || pid == nil || pid.Id == "" {
		return
	}
	if e.closing {
		// Closed before the peer came (the attach timed out, the session
		// closed): the peer must not keep its side open.
		ctx.Send(pid, &messages.TunnelClose{Code: messages.CloseInternal, Reason: "the client's end closed before the tunnel opened"})
		return
	}
	e.peer = pid
	e.peerRef.Store(pid)
	ctx.Watch(pid)
	if e.stopAttach != nil {
		e.stopAttach()
	}
	e.maybeRead(ctx)
}

// maybeRead starts the reader once the end has both its socket and its
// peer: before that there is nowhere to send what it reads.
func (e *end) maybeRead(ctx actor.Context) {
	if e.readerStarted || e.ws == nil || e.peer == nil || e.closing {
		return
	}
	e.readerStarted = true
	go e.readLoop(ctx.ActorSystem().Root, ctx.Self(), e.peer, e.ws)
}

// data queues one piece from the peer for the writer. The window makes
// room certain for a peer that keeps the protocol; one that does not is
// cut off rather than buffered.
func (e *end) data(ctx actor.Context, d *messages.TunnelData) {
	if e.closing {
		return
	}
	c := cost(len(d.Data))
	if e.inflight.Add(c) > Window {
		e.log.Warn("tunnel peer overran the window; closing", slog.Int64("window", Window))
		e.closeSocket(ctx, messages.ClosePolicy, ReasonOverrun, true)
		return
	}
	select {
	case e.out <- piece{data: d}:
	default:
		e.closeSocket(ctx, messages.ClosePolicy, ReasonOverrun, true)
	}
}

func (e *end) addCredit(ctx actor.Context, n int64) {
	if n <= 0 || e.closing {
		return
	}
	if e.credit.Add(n) > Window {
		e.log.Warn("tunnel peer returned more credit than it was given; closing")
		e.closeSocket(ctx, messages.ClosePolicy, ReasonOverrun, true)
		return
	}
	select {
	case e.creditNote <- struct{}{}:
	default:
	}
}

// closeSocket closes the end's socket with code and reason after what is
// queued for it, and (when tell) passes the close on to the peer. Only the
// first close counts.
func (e *end) closeSocket(ctx actor.Context, code int, reason string, tell bool) {
	if e.closing {
		return
	}
	e.closing = true
	e.log.Info("tunnel closing", slog.Int("code", code), slog.String("reason", reason))
	if tell {
		e.tellPeer(ctx, code, reason)
	}
	select {
	case e.out <- piece{close: &messages.TunnelClose{Code: int32(code), Reason: reason}}:
	default:
		// The queue is full only for a peer that broke the window; its
		// data is dropped with the socket.
		ctx.Stop(ctx.Self())
		return
	}
	if !e.writerStarted {
		// No socket yet (the client end before its upgrade): the writer
		// sends the close when Socket comes; if it never does, the end
		// stops on its own.
		e.timers.After(DefaultAttachTimeout, &writerDone{})
	}
}

func (e *end) tellPeer(ctx actor.Context, code int, reason string) {
	if e.peer != nil {
		ctx.Send(e.peer, &messages.TunnelClose{Code: int32(code), Reason: reason})
	}
}

// readEnded: the socket's reader stopped. Unless this end closed first,
// the other side closed (or broke) the socket: the peer is told, and the
// end stops.
func (e *end) readEnded(ctx actor.Context, m *readEnded) {
	if e.closing {
		return // our own close: the writer finishes and stops the end
	}
	e.closing = true
	code, reason := forwardable(m.code, m.reason, e.cfg.Role)
	e.log.Info("tunnel socket closed by its side", slog.Int("code", m.code), slog.String("reason", m.reason))
	e.tellPeer(ctx, code, reason)
	ctx.Stop(ctx.Self())
}

func (e *end) shutdown(ctx actor.Context) {
	if e.timers != nil {
		e.timers.StopAll()
	}
	select {
	case <-e.stop:
		return // already shut down (Restarting, then Stopping)
	default:
	}
	close(e.stop)
	if e.ws != nil {
		_ = e.ws.Close()
	} else if e.cfg.Conn != nil {
		_ = e.cfg.Conn.Close()
	}
	if !e.closing && e.peer != nil {
		e.tellPeer(ctx, messages.CloseInternal, "tunnel end stopped")
	}
	if e.cfg.OnStop != nil {
		e.cfg.OnStop(ctx)
	}
}

// cost is the credit one piece of n bytes takes.
func cost(n int) int64 { return int64(n) + chunkCost }

// forwardable maps what a socket's reader saw onto a close code the peer
// may send on its socket (1005, 1006 and 1015 are never sent on the wire).
func forwardable(code int, reason string, role Role) (int, string) {
	switch {
	case code == websocket.CloseNoStatusReceived:
		return messages.CloseNormal, reason
	case code == websocket.CloseAbnormalClosure, code == websocket.CloseTLSHandshake:
		return messages.CloseInternal, fmt.Sprintf("%s connection lost", role)
	case code >= 1000 && code <= 1003, code >= 1007 && code <= 1014, code >= 3000 && code <= 4999:
		return code, reason
	}
	return messages.CloseInternal, reason
}

// readLoop is owned by the end: it ends when the socket fails or closes
// (shutdown closes it) or when the end stops while it waits for credit.
func (e *end) readLoop(root *actor.RootContext, self, peer *actor.PID, ws *websocket.Conn) {
	defer close(e.readerDone)
	buf := make([]byte, ChunkBytes)
	for {
		mt, r, err := ws.NextReader()
		if err != nil {
			root.Send(self, e.readError(err))
			return
		}
		binary := mt == websocket.BinaryMessage
		for {
			n, rerr := io.ReadFull(r, buf)
			fin := rerr != nil // EOF, ErrUnexpectedEOF: the message ended; anything else ends the socket
			if rerr != nil && !errors.Is(rerr, io.EOF) && !errors.Is(rerr, io.ErrUnexpectedEOF) {
				root.Send(self, e.readError(rerr))
				return
			}
			if !e.waitCredit(cost(n)) {
				return
			}
			d := &messages.TunnelData{Data: append([]byte(nil), buf[:n]...), Binary: binary, Fin: fin}
			root.Send(peer, d)
			if e.cfg.Counters != nil {
				e.cfg.Counters.Sent.Add(int64(n))
			}
			if fin {
				break
			}
		}
	}
}

func (e *end) readError(err error) *readEnded {
	var ce *websocket.CloseError
	switch {
	case errors.As(err, &ce):
		return &readEnded{code: ce.Code, reason: ce.Text}
	case errors.Is(err, websocket.ErrReadLimit):
		return &readEnded{code: messages.CloseTooBig,
			reason: fmt.Sprintf("a message over %d bytes (limits.cdp_max_message_bytes)", e.cfg.MaxMessageBytes)}
	}
	return &readEnded{code: websocket.CloseAbnormalClosure, reason: err.Error()}
}

// waitCredit takes c credit, waiting for the peer's writer to return
// some; false when the end stopped meanwhile.
func (e *end) waitCredit(c int64) bool {
	for e.credit.Load() < c {
		select {
		case <-e.creditNote:
		case <-e.stop:
			return false
		}
	}
	e.credit.Add(-c)
	return true
}

// writeLoop is owned by the end: it writes the peer's pieces, one
// WebSocket message after another, returning credit as it goes; it ends
// after the close, when a write fails, or when the end stops.
func (e *end) writeLoop(root *actor.RootContext, self *actor.PID, ws *websocket.Conn) {
	var w io.WriteCloser
	var owed int64
	giveBack := func(force bool) {
		if owed == 0 || !(force || owed >= Window/4 || len(e.out) == 0) {
			return
		}
		if peer := e.peerRef.Load(); peer != nil {
			root.Send(peer, &messages.TunnelCredit{Bytes: owed})
		}
		owed = 0
	}
	for {
		var p piece
		select {
		case p = <-e.out:
		case <-e.stop:
			return
		}
		if p.close != nil {
			// A message cut short by the close is left unfinished (the
			// close frame interrupts it): finishing it would hand the
			// client a truncated message as if it were whole.
			msg := websocket.FormatCloseMessage(int(p.close.Code), messages.CloseReason(p.close.Reason))
			_ = ws.WriteControl(websocket.CloseMessage, msg, time.Now().Add(controlWait))
			t := time.NewTimer(closeLinger)
			select { // the other side's close frame ends the reader
			case <-e.readerDone:
			case <-t.C:
			case <-e.stop:
			}
			t.Stop()
			_ = ws.Close()
			root.Send(self, &writerDone{})
			return
		}
		d := p.data
		var err error
		if w == nil {
			mt := websocket.TextMessage
			if d.Binary {
				mt = websocket.BinaryMessage
			}
			w, err = ws.NextWriter(mt)
		}
		if err == nil && len(d.Data) > 0 {
			_, err = w.Write(d.Data)
		}
		if err == nil && d.Fin {
			err = w.Close()
			w = nil
		}
		if err != nil {
			root.Send(self, &writeFailed{err: err})
			return
		}
		c := cost(len(d.Data))
		e.inflight.Add(-c)
		owed += c
		if e.cfg.Counters != nil {
			e.cfg.Counters.Written.Add(int64(len(d.Data)))
		}
		giveBack(false)
	}
}
