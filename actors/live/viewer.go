package live

import (
	"encoding/json"
	"log/slog"
	"strconv"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/gorilla/websocket"

	"github.com/paprika-hub/paprika/messages"
	"github.com/paprika-hub/paprika/metrics"
)

// maxViewerMessage bounds one message a viewer sends (acks and input
// events are tens of bytes).
const maxViewerMessage = 16 << 10

// ViewerConfig is one viewer's socket.
type ViewerConfig struct {
	// Identity is the lane's live grain (messages.LiveIdentity); Grain its
	// activation, watched: when its hub dies the viewer is told.
	Identity string
	Grain    *actor.PID
	// Control lets the viewer send mouse and key events (a session's
	// ?control=1).
	Control bool
	Log     *slog.Logger
	Metrics *metrics.LiveMetrics
}

// viewer holds one viewer's socket.
type viewer struct {
	cfg ViewerConfig

	w          *sockWriter
	readerDone chan struct{}
	ws         *websocket.Conn
	closing    bool
	left       bool
	rate       *rateLimit
	log        *slog.Logger
}

// viewerMsg is what the reader read of one message.
type viewerMsg struct {
	Type  string          `json:"type"`
	Seq   int64           `json:"seq"`
	Event json.RawMessage `json:"event"`
	bad   string          // why it does not parse
}

func (v *viewer) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		v.log = v.cfg.Log.With(slog.String("live", v.cfg.Identity), slog.String("viewer", ctx.Self().Id))
		v.w = newSockWriter()
		v.readerDone = make(chan struct{})
		v.rate = newRateLimit(InputRate, InputBurst, time.Now)
		v.cfg.Metrics.Viewers.Inc()
		if v.cfg.Grain != nil {
			ctx.Watch(v.cfg.Grain)
		}
	case *actor.Stopping:
		v.cfg.Metrics.Viewers.Dec()
		close(v.w.stop)
		if v.ws != nil {
			_ = v.ws.Close()
		}
		v.leave(ctx)
	case *Socket:
		if v.ws != nil || m.Conn == nil {
			return
		}
		v.ws = m.Conn
		v.ws.SetReadLimit(maxViewerMessage)
		go v.w.run(ctx.ActorSystem().Root, ctx.Self(), v.ws, v.readerDone)
		go v.readLoop(ctx.ActorSystem().Root, ctx.Self(), v.ws)
	case *messages.LiveStatus:
		b, _ := json.Marshal(map[string]string{"type": "status", "state": m.State, "reason": m.Reason})
		v.w.queue(b)
		if m.State == messages.LiveEnded {
			v.left = true // the grain forgot this viewer already
			v.close(ctx, messages.CloseNormal, m.Reason)
		}
	case *messages.LiveFrame:
		if v.closing {
			return
		}
		if v.w.queue(frameJSON(m)) {
			v.cfg.Metrics.Frames.WithLabelValues(metrics.LiveFramesSent).Inc()
		}
	case *viewerMsg:
		v.message(ctx, m)
	case *actor.Terminated:
		if v.cfg.Grain != nil && m.Who.Equal(v.cfg.Grain) {
			v.left = true
			v.close(ctx, messages.CloseInternal, "the hub holding the live view went away; reconnect")
		}
	case *shutdown:
		v.close(ctx, messages.CloseGoingAway, ReasonShutdown)
	case *readEnded:
		if !v.closing {
			v.leave(ctx)
			ctx.Stop(ctx.Self())
		}
	case *writeFailed:
		v.log.Info("live viewer write failed", slog.Any("err", m.err))
		ctx.Stop(ctx.Self())
	case *writerDone:
		ctx.Stop(ctx.Self())
	}
}

// close closes the socket after what is queued; a viewer without a
// socket yet just stops.
func (v *viewer) close(ctx actor.Context, code int, reason string) {
	if v.closing {
		return
	}
	v.closing = true
	v.leave(ctx)
	if v.ws == nil {
		ctx.Stop(ctx.Self())
		return
	}
	v.w.close(code, reason)
}

func (v *viewer) leave(ctx actor.Context) {
	if v.left || v.cfg.Grain == nil {
		return
	}
	v.left = true
	ctx.Send(v.cfg.Grain, &messages.LiveLeave{Viewer: ref(ctx.Self())})
}

func (v *viewer) message(ctx actor.Context, m *viewerMsg) {
	if v.closing {
		return
	}
	if m.bad != "" {
		v.refuse("message", m.bad)
		return
	}
	switch m.Type {
	case "ack":
		v.cfg.Metrics.Frames.WithLabelValues(metrics.LiveFramesAcked).Inc()
		ctx.Send(v.cfg.Grain, &messages.LiveAck{Viewer: ref(ctx.Self()), Seq: m.Seq})
	case messages.LiveInputMouse, messages.LiveInputKey:
		if !v.cfg.Control {
			v.refuse("message", "this viewer is view-only: open a session's live view with ?control=1 to send input")
			return
		}
		ev, err := CheckInput(m.Type, m.Event)
		if err != nil {
			v.refuse("message", err.Error())
			return
		}
		if !v.rate.allow() {
			v.refuse("input_rate", "more than "+strconv.Itoa(InputRate)+" input events a second; this one was dropped")
			return
		}
		v.cfg.Metrics.InputsSent.Inc()
		ctx.Send(v.cfg.Grain, &messages.LiveInput{Viewer: ref(ctx.Self()), Input: m.Type, Event: ev})
	default:
		v.refuse("message", "unknown message type "+strconv.Quote(m.Type)+": send ack, mouse or key")
	}
}

// refuse answers a bad message with an error message; the socket stays
// open. Errors never take the room of frames: past half the queue they
// are only counted.
func (v *viewer) refuse(what, msg string) {
	v.cfg.Metrics.Refused.WithLabelValues(what).Inc()
	if len(v.w.out) >= writerQueue/2 {
		return // room is kept for the frame in flight and the statuses
	}
	b, _ := json.Marshal(map[string]string{"type": "error", "message": msg})
	v.w.queue(b)
}

func (v *viewer) readLoop(root *actor.RootContext, self *actor.PID, ws *websocket.Conn) {
	defer close(v.readerDone)
	for {
		_, b, err := ws.ReadMessage()
		if err != nil {
			root.Send(self, readError(err))
			return
		}
		m := &viewerMsg{}
		if err := json.Unmarshal(b, m); err != nil {
			m.bad = "a message must be a JSON object: " + err.Error()
		}
		root.Send(self, m)
	}
}

// frameJSON is a frame's message to a viewer. The data is base64 already
// (checked by the source), so it is copied, not encoded.
func frameJSON(m *messages.LiveFrame) []byte {
	b := make([]byte, 0, len(m.Data)+128)
	b = append(b, `{"type":"frame","seq":`...)
	b = strconv.AppendInt(b, m.Seq, 10)
	b = append(b, `,"format":"jpeg","data":"`...)
	b = append(b, m.Data...)
	b = append(b, `","width":`...)
	b = strconv.AppendInt(b, int64(m.Width), 10)
	b = append(b, `,"height":`...)
	b = strconv.AppendInt(b, int64(m.Height), 10)
	return append(b, '}')
}

func ref(pid *actor.PID) *messages.Ref { return &messages.Ref{Address: pid.Address, Id: pid.Id} }
