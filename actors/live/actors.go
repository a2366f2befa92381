package live

import (
	"errors"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/gorilla/websocket"

	"github.com/paprika-hub/paprika/actors/supervise"
	"github.com/paprika-hub/paprika/messages"
	"github.com/paprika-hub/paprika/metrics"
)

// Actors is a hub's handle on its live-view actors: the parent of every
// viewer and source on this hub, which closes them all with 1001 when the
// hub stops (Stop).
type Actors struct{ *supervise.Children }

// ErrStopping refuses a new viewer or source on a hub that is shutting down.
var ErrStopping = supervise.ErrStopping

// ReasonShutdown is the close reason of a socket whose hub stops.
const ReasonShutdown = "a hub on the live view's path is shutting down; reconnect"

// Socket hands an actor its socket after the upgrade.
type Socket struct{ Conn *websocket.Conn }

// shutdown closes an actor's socket with 1001.
type shutdown struct{}

// Start spawns the parent with spawn (under the hub's supervisor).
func Start(system *actor.ActorSystem, log *slog.Logger, m *metrics.Metrics, spawn func(*actor.Props, string) (*actor.PID, error)) (*Actors, error) {
	c, err := supervise.StartChildren(system, supervise.ChildrenConfig{Name: "live", Kind: "live_actors", What: "live actor",
		Close: func() any { return &shutdown{} }, Log: log, Metrics: m}, spawn)
	if err != nil {
		return nil, err
	}
	return &Actors{Children: c}, nil
}

// SpawnViewer starts a viewer actor (before its socket's upgrade).
func (a *Actors) SpawnViewer(cfg ViewerConfig) (*actor.PID, error) {
	return a.Spawn(actor.PropsFromProducer(func() actor.Actor { return &viewer{cfg: cfg} }), "v-"+messages.NewLiveID(cfg.Identity))
}

// SpawnSource starts a source actor (before its socket's upgrade).
func (a *Actors) SpawnSource(cfg SourceConfig) (*actor.PID, error) {
	return a.Spawn(actor.PropsFromProducer(func() actor.Actor { return &source{cfg: cfg} }), "s-"+cfg.LiveID)
}

// sockWriter is a socket's writer goroutine: it writes queued text
// messages, then the close. The queue is small: what fills it is bounded
// by acknowledgements (one frame at a time) and a few status lines.
type sockWriter struct {
	out  chan []byte
	stop chan struct{}
	done chan struct{}
	// closeMsg is written after the queue when closing is set.
	closeCode   int
	closeReason string
	closing     chan struct{}
}

const (
	writerQueue = 8
	writeWait   = 10 * time.Second
	controlWait = time.Second
	closeLinger = time.Second
)

func newSockWriter() *sockWriter {
	return &sockWriter{out: make(chan []byte, writerQueue), stop: make(chan struct{}), done: make(chan struct{}),
		closing: make(chan struct{})}
}

// queue adds a message; false when the queue is full (the message is dropped).
func (w *sockWriter) queue(b []byte) bool {
	select {
	case w.out <- b:
		return true
	default:
		return false
	}
}

// close asks the writer to close the socket after what is queued (once).
func (w *sockWriter) close(code int, reason string) {
	select {
	case <-w.closing:
		return
	default:
	}
	w.closeCode, w.closeReason = code, reason
	close(w.closing)
}

// run writes until the close or a failure, then closes the socket and
// sends done (or failed) to self.
func (w *sockWriter) run(root *actor.RootContext, self *actor.PID, ws *websocket.Conn, readerDone <-chan struct{}) {
	defer close(w.done)
	for {
		select {
		case b := <-w.out:
			_ = ws.SetWriteDeadline(time.Now().Add(writeWait))
			if err := ws.WriteMessage(websocket.TextMessage, b); err != nil {
				_ = ws.Close()
				root.Send(self, &writeFailed{err: err})
				return
			}
			continue
		case <-w.stop:
			_ = ws.Close()
			return
		case <-w.closing:
		}
		// Drain what was queued before the close.
		for len(w.out) > 0 {
			_ = ws.SetWriteDeadline(time.Now().Add(writeWait))
			if ws.WriteMessage(websocket.TextMessage, <-w.out) != nil {
				break
			}
		}
		msg := websocket.FormatCloseMessage(w.closeCode, messages.CloseReason(w.closeReason))
		_ = ws.WriteControl(websocket.CloseMessage, msg, time.Now().Add(controlWait))
		t := time.NewTimer(closeLinger)
		select {
		case <-readerDone:
		case <-t.C:
		case <-w.stop:
		}
		t.Stop()
		_ = ws.Close()
		root.Send(self, &writerDone{})
		return
	}
}

type (
	writeFailed struct{ err error }
	writerDone  struct{}
	readEnded   struct {
		code   int
		reason string
	}
	grainGone struct{}
)

func readError(err error) *readEnded {
	var ce *websocket.CloseError
	switch {
	case errors.As(err, &ce):
		return &readEnded{code: ce.Code, reason: ce.Text}
	case errors.Is(err, websocket.ErrReadLimit):
		return &readEnded{code: messages.CloseTooBig, reason: "message too large"}
	}
	return &readEnded{code: websocket.CloseAbnormalClosure, reason: err.Error()}
}
