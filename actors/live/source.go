package live

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/gorilla/websocket"

	"github.com/paprika-hub/paprika/messages"
	"github.com/paprika-hub/paprika/metrics"
)

// Bounds of what a worker's screencast socket may send.
const (
	// MaxFrameBytes bounds one frame message (its base64 JPEG and JSON).
	MaxFrameBytes = 8 << 20
	// maxFrameSide bounds a frame's width and height (pixels).
	maxFrameSide = 16384
)

// SourceConfig is one worker's screencast socket.
type SourceConfig struct {
	LiveID  string
	Grain   *actor.PID // the lane's live grain, watched
	Log     *slog.Logger
	Metrics *metrics.LiveMetrics
}

// source holds a worker's screencast socket: frames go to the grain one
// at a time (the reader takes the next only after the grain acknowledged
// one), acknowledgements and input go to the worker.
type source struct {
	cfg SourceConfig

	w          *sockWriter
	readerDone chan struct{}
	credit     chan struct{} // the grain acknowledged: the reader may take the next frame
	ws         *websocket.Conn
	closing    bool
	told       bool
	log        *slog.Logger
}

// workerFrame is one message of the worker's socket.
type workerFrame struct {
	Type   string `json:"type"`
	Data   string `json:"data"`
	Width  int    `json:"width"`
	Height int    `json:"height"`
}

func (s *source) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		s.log = s.cfg.Log.With(slog.String("live_id", s.cfg.LiveID))
		s.w = newSockWriter()
		s.readerDone = make(chan struct{})
		s.credit = make(chan struct{}, 1)
		s.cfg.Metrics.Sources.Inc()
		ctx.Watch(s.cfg.Grain)
	case *actor.Stopping:
		s.cfg.Metrics.Sources.Dec()
		close(s.w.stop)
		if s.ws != nil {
			_ = s.ws.Close()
		}
		s.tell(ctx, "the hub's screencast socket closed")
	case *Socket:
		if s.ws != nil || m.Conn == nil {
			return
		}
		s.ws = m.Conn
		s.ws.SetReadLimit(MaxFrameBytes)
		go s.w.run(ctx.ActorSystem().Root, ctx.Self(), s.ws, s.readerDone)
		go s.readLoop(ctx.ActorSystem().Root, ctx.Self(), s.ws)
	case *messages.LiveAck:
		if s.closing {
			return
		}
		s.w.queue([]byte(`{"type":"ack"}`))
		select {
		case s.credit <- struct{}{}:
		default:
		}
	case *messages.LiveInput:
		if s.closing || !json.Valid(m.Event) {
			return
		}
		b, _ := json.Marshal(map[string]any{"type": m.Input, "event": json.RawMessage(m.Event)})
		if !s.w.queue(b) {
			s.cfg.Metrics.Refused.WithLabelValues("input_queue").Inc()
		}
	case *messages.LiveStop:
		s.told = true
		s.close(ctx, messages.CloseNormal, m.Reason)
	case *actor.Terminated:
		if m.Who.Equal(s.cfg.Grain) {
			s.told = true
			s.close(ctx, messages.CloseNormal, "the live view's grain went away")
		}
	case *shutdown:
		s.close(ctx, messages.CloseGoingAway, ReasonShutdown)
	case *readEnded:
		reason := m.reason
		if reason == "" {
			reason = fmt.Sprintf("the worker closed the screencast (%d)", m.code)
		}
		s.tell(ctx, reason)
		if !s.closing {
			ctx.Stop(ctx.Self())
		}
	case *badFrame:
		s.cfg.Metrics.Refused.WithLabelValues("frame").Inc()
		s.log.Warn("worker sent a bad screencast frame; closing", slog.String("why", m.why))
		s.tell(ctx, "the worker sent a bad frame")
		s.close(ctx, messages.ClosePolicy, m.why)
	case *writeFailed:
		if errors.Is(m.err, websocket.ErrCloseSent) && !s.closing {
			// The worker closed the socket and its close frame was answered
			// (the reader's close handler): the reader has the worker's
			// reason ("session closed") and reports it next, in readEnded.
			// A write that lost that race is no failure of the socket.
			return
		}
		s.tell(ctx, "the worker's screencast socket failed")
		ctx.Stop(ctx.Self())
	case *writerDone:
		ctx.Stop(ctx.Self())
	}
}

type badFrame struct{ why string }

func (s *source) close(ctx actor.Context, code int, reason string) {
	if s.closing {
		return
	}
	s.closing = true
	if s.ws == nil {
		ctx.Stop(ctx.Self())
		return
	}
	s.w.close(code, reason)
}

// tell passes the socket's end to the grain (once), which tells the viewers.
func (s *source) tell(ctx actor.Context, reason string) {
	if s.told {
		return
	}
	s.told = true
	ctx.Send(s.cfg.Grain, &messages.LiveEnd{LiveId: s.cfg.LiveID, Reason: messages.CloseReason(reason)})
}

func (s *source) readLoop(root *actor.RootContext, self *actor.PID, ws *websocket.Conn) {
	defer close(s.readerDone)
	for {
		_, b, err := ws.ReadMessage()
		if err != nil {
			root.Send(self, readError(err))
			return
		}
		var f workerFrame
		if err := json.Unmarshal(b, &f); err != nil {
			root.Send(self, &badFrame{why: "a frame that is no JSON object"})
			return
		}
		if why := checkFrame(&f); why != "" {
			root.Send(self, &badFrame{why: why})
			return
		}
		s.cfg.Metrics.Frames.WithLabelValues(metrics.LiveFramesReceived).Inc()
		root.Send(s.cfg.Grain, &messages.LiveFrame{LiveId: s.cfg.LiveID, Data: []byte(f.Data),
			Width: int32(f.Width), Height: int32(f.Height)})
		select { // one frame in flight: wait for the grain's ack
		case <-s.credit:
		case <-s.w.stop:
			return
		}
	}
}

// checkFrame says what is wrong with a worker's frame, "" when nothing.
func checkFrame(f *workerFrame) string {
	switch {
	case f.Type != "frame":
		return fmt.Sprintf("unknown message type %q", f.Type)
	case f.Width < 1 || f.Width > maxFrameSide || f.Height < 1 || f.Height > maxFrameSide:
		return fmt.Sprintf("frame size %dx%d out of range", f.Width, f.Height)
	case f.Data == "" || len(f.Data)%4 != 0:
		return "frame data is not base64"
	}
	for i := 0; i < len(f.Data); i++ {
		c := f.Data[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '=' && i >= len(f.Data)-2) {
			return "frame data is not base64"
		}
	}
	return ""
}
