package live

import (
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/gorilla/websocket"

	"github.com/paprika-hub/paprika/actors/supervise"
	"github.com/paprika-hub/paprika/messages"
	"github.com/paprika-hub/paprika/metrics"
)

// Actors is a hub's handle on its live-view actors: the parent of every
// viewer and source on this hub, which closes them all when the hub stops.
type Actors struct {
	system   *actor.ActorSystem
	pid      *actor.PID
	stopping atomic.Bool
}

// ErrStopping refuses a new viewer or source on a hub that is shutting down.
var ErrStopping = errors.New("hub is shutting down")

// ReasonShutdown is the close reason of a socket whose hub stops.
const ReasonShutdown = "a hub on the live view's path is shutting down; reconnect"

// Socket hands an actor its socket after the upgrade.
type Socket struct{ Conn *websocket.Conn }

// shutdown closes an actor's socket with 1001.
type shutdown struct{}

type parent struct {
	children map[string]*actor.PID
	waiters  []*actor.PID
	timers   *supervise.Timers
}

type spawnChild struct {
	props *actor.Props
	name  string
}

type closeAll struct{ wait time.Duration }

type closeAllDone struct{}

func (p *parent) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		p.children = map[string]*actor.PID{}
		p.timers = supervise.NewTimers(ctx, "live_actors")
	case *actor.Stopping, *actor.Restarting:
		p.timers.StopAll()
	case *spawnChild:
		pid, err := ctx.SpawnNamed(m.props, m.name)
		if err != nil {
			ctx.Respond(err)
			return
		}
		p.children[pid.Id] = pid
		ctx.Respond(pid)
	case *actor.Terminated:
		delete(p.children, m.Who.Id)
		if len(p.children) == 0 {
			p.release(ctx)
		}
	case *closeAll:
		p.waiters = append(p.waiters, ctx.Sender())
		if len(p.children) == 0 {
			p.release(ctx)
			return
		}
		for _, pid := range p.children {
			ctx.Send(pid, &shutdown{})
		}
		p.timers.After(m.wait, &closeAllDone{})
	case *closeAllDone:
		p.release(ctx)
	}
}

func (p *parent) release(ctx actor.Context) {
	for _, w := range p.waiters {
		ctx.Send(w, true)
	}
	p.waiters = nil
}

// Start spawns the parent with spawn (under the hub's supervisor). A
// panicking child is stopped, not restarted: a fresh struct could not
// adopt its socket's goroutines.
func Start(system *actor.ActorSystem, log *slog.Logger, m *metrics.Metrics, spawn func(*actor.Props, string) (*actor.PID, error)) (*Actors, error) {
	stop := actor.NewOneForOneStrategy(1, time.Second, func(any) actor.Directive { return actor.StopDirective })
	props := actor.PropsFromProducer(func() actor.Actor { return &parent{} }, actor.WithSupervisor(stop),
		actor.WithReceiverMiddleware(supervise.Recover("live_actors", log, m)))
	pid, err := spawn(props, "live")
	if err != nil {
		return nil, err
	}
	return &Actors{system: system, pid: pid}, nil
}

func (a *Actors) spawn(props *actor.Props, name string) (*actor.PID, error) {
	if a.stopping.Load() {
		return nil, ErrStopping
	}
	res, err := a.system.Root.RequestFuture(a.pid, &spawnChild{props: props, name: name}, 5*time.Second).Result()
	if err != nil {
		return nil, fmt.Errorf("start live actor: %w", err)
	}
	switch v := res.(type) {
	case *actor.PID:
		return v, nil
	case error:
		return nil, fmt.Errorf("start live actor: %w", v)
	}
	return nil, fmt.Errorf("start live actor: unexpected %T", res)
}

// SpawnViewer starts a viewer actor (before its socket's upgrade).
func (a *Actors) SpawnViewer(cfg ViewerConfig) (*actor.PID, error) {
	return a.spawn(actor.PropsFromProducer(func() actor.Actor { return &viewer{cfg: cfg} }), "v-"+messages.NewLiveID(cfg.Identity))
}

// SpawnSource starts a source actor (before its socket's upgrade).
func (a *Actors) SpawnSource(cfg SourceConfig) (*actor.PID, error) {
	return a.spawn(actor.PropsFromProducer(func() actor.Actor { return &source{cfg: cfg} }), "s-"+cfg.LiveID)
}

// Send delivers msg to a live actor from outside the actors.
func (a *Actors) Send(pid *actor.PID, msg any) { a.system.Root.Send(pid, msg) }

// Stop refuses new actors and closes every open socket with 1001, waiting
// up to wait for them to go.
func (a *Actors) Stop(wait time.Duration) {
	if a == nil || !a.stopping.CompareAndSwap(false, true) {
		return
	}
	_, _ = a.system.Root.RequestFuture(a.pid, &closeAll{wait: wait}, wait+time.Second).Result()
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
