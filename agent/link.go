package agent

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/paprika-hub/paprika/internal/cork"
	"github.com/paprika-hub/paprika/internal/wsread"
	"github.com/paprika-hub/paprika/messages"
)

// Link tuning.
const (
	// ctrlQueueSize bounds the control frames (hello, heartbeat, rejections)
	// waiting for the writer. A full queue means the hub does not read; the
	// write deadline then fails the link, so dropping a heartbeat is safe.
	ctrlQueueSize = 64
	// writeBatch is how many job frames the writer takes from the outbox at
	// once.
	writeBatch = 64
	// writeTimeout bounds one write; a hub that does not read for this long
	// loses the link (nats' slow-consumer rule, seen from the client side).
	writeTimeout = 10 * time.Second
	// readTimeoutPings is how many ping periods may pass without any traffic
	// from the hub before the link is considered dead.
	readTimeoutPings = 3
)

// link is one WebSocket to a hub: a reader goroutine that turns frames into
// calls of handle, and a writer goroutine that writes control frames from a
// bounded queue and job frames from the outbox. Both goroutines are owned by
// the link and end by closeNormal or abort, which wait for them.
type link struct {
	// Fixed after newLink.
	conn         *websocket.Conn
	log          *slog.Logger
	box          *outbox
	handle       func(*link, messages.Frame) // runs on the reader goroutine
	pingInterval time.Duration

	ctrl     chan []byte         // bounded queue of control frames
	ready    chan struct{}       // outbox wake-up, capacity 1
	hs       chan messages.Frame // welcome or id_taken, read by the handshake
	closeReq chan struct{}       // asks the writer to flush and send a close frame
	left     chan struct{}       // closed when the hub's leave_ack came
	leftOnce sync.Once

	closeOnce  sync.Once
	failOnce   sync.Once
	done       chan struct{} // closed when either goroutine stopped on an error
	err        error         // why done was closed; read after <-done
	readerDone chan struct{}
	writerDone chan struct{}
}

func newLink(conn *websocket.Conn, box *outbox, pingInterval time.Duration, log *slog.Logger, handle func(*link, messages.Frame)) *link {
	return &link{
		conn:         conn,
		log:          log,
		box:          box,
		handle:       handle,
		pingInterval: pingInterval,
		ctrl:         make(chan []byte, ctrlQueueSize),
		ready:        make(chan struct{}, 1),
		hs:           make(chan messages.Frame, 4),
		closeReq:     make(chan struct{}),
		left:         make(chan struct{}),
		done:         make(chan struct{}),
		readerDone:   make(chan struct{}),
		writerDone:   make(chan struct{}),
	}
}

// start launches the reader and the writer.
func (l *link) start() {
	go l.readLoop()
	go l.writeLoop()
}

// send queues a control frame without blocking. It reports false when the
// queue is full (the hub is not reading) or the frame cannot be encoded.
func (l *link) send(f messages.Frame) bool {
	b, err := f.Encode()
	if err != nil {
		l.log.Error("encode frame", "type", f.Type, "err", err)
		return false
	}
	select {
	case l.ctrl <- b:
		return true
	default:
		l.log.Warn("link send queue full, frame dropped", "type", f.Type, "queue", ctrlQueueSize)
		return false
	}
}

// handshake hands a welcome or id_taken frame to the waiting handshake.
func (l *link) handshake(f messages.Frame) {
	select {
	case l.hs <- f:
	default:
	}
}

// leaveAcked records the hub's leave_ack (any number of them).
func (l *link) leaveAcked() { l.leftOnce.Do(func() { close(l.left) }) }

// leave tells the hub the worker takes no more work and waits, up to wait,
// for its leave_ack: by then every assignment the hub sent has been read
// and answered, and the answers are queued ahead of the close frame.
func (l *link) leave(wait time.Duration) {
	if !l.send(messages.Frame{Type: messages.TypeLeaving}) {
		return
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-l.left:
	case <-l.done:
	case <-t.C:
		l.log.Warn("no leave_ack from the hub; closing the link anyway", "waited", wait)
	}
}

// fail records the first error and wakes everyone waiting on done.
func (l *link) fail(err error) {
	l.failOnce.Do(func() {
		l.err = err
		close(l.done)
	})
}

// closeNormal flushes the job frames the outbox holds for this link, sends a
// normal close frame, waits up to wait for the hub's answering close, then
// closes the socket and waits for both goroutines.
func (l *link) closeNormal(wait time.Duration) {
	l.closeOnce.Do(func() { close(l.closeReq) })
	<-l.writerDone
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-l.readerDone:
	case <-t.C:
	}
	l.abort()
}

// abort closes the socket at once and waits for both goroutines.
func (l *link) abort() {
	l.closeOnce.Do(func() { close(l.closeReq) })
	l.fail(errors.New("link closed"))
	_ = l.conn.Close()
	<-l.readerDone
	<-l.writerDone
}

func (l *link) readLoop() {
	defer close(l.readerDone)
	readTimeout := readTimeoutPings * l.pingInterval
	extend := func() { _ = l.conn.SetReadDeadline(time.Now().Add(readTimeout)) }
	l.conn.SetReadLimit(messages.MaxFrameBytes)
	extend()
	l.conn.SetPongHandler(func(string) error { extend(); return nil })
	l.conn.SetPingHandler(func(data string) error {
		extend()
		err := l.conn.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(writeTimeout))
		var ne net.Error
		if errors.Is(err, websocket.ErrCloseSent) || (errors.As(err, &ne) && ne.Timeout()) {
			return nil
		}
		return err
	})
	// Each message is read into buf and decoded into f, both kept from one
	// to the next: the decode copies what it keeps out of buf, and the
	// handler is given a copy of f.
	var buf bytes.Buffer
	var f messages.Frame
	for {
		mt, data, err := wsread.Message(l.conn, &buf, messages.MaxFrameBytes)
		if err != nil {
			l.fail(fmt.Errorf("read: %w", err))
			return
		}
		extend()
		if mt != websocket.TextMessage {
			continue
		}
		if err := messages.DecodeFrameInto(data, &f); err != nil {
			l.log.Warn("bad frame from hub", "err", err)
			continue
		}
		l.handle(l, f)
	}
}

func (l *link) writeLoop() {
	defer close(l.writerDone)
	ping := time.NewTicker(l.pingInterval)
	defer ping.Stop()
	for {
		var err error
		select {
		case <-l.done:
			return
		case <-l.closeReq:
			l.flushAndClose()
			return
		case b := <-l.ctrl:
			err = l.write(b)
		case <-l.ready:
			err = l.writeJobFrames()
		case <-ping.C:
			err = l.conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(writeTimeout))
		}
		if err != nil {
			l.fail(fmt.Errorf("write: %w", err))
			return
		}
	}
}

// writeJobFrames writes one batch of the outbox's pending frames; the outbox
// signals ready again while more remain.
//
// The batch goes out in one write when the socket can (cork): a job's
// job_started and job_done, and other jobs' frames queued meanwhile, cost
// one system call.
func (l *link) writeJobFrames() error {
	frames := l.box.take(l.ready, writeBatch)
	return cork.Gather(l.conn.NetConn(), func() error {
		for _, b := range frames {
			if err := l.write(b); err != nil {
				return err
			}
		}
		return nil
	})
}

// flushAndClose writes the queued control frames and every pending job
// frame, then a normal close frame.
func (l *link) flushAndClose() {
	for {
		select {
		case b := <-l.ctrl:
			if err := l.write(b); err != nil {
				l.fail(fmt.Errorf("write: %w", err))
				return
			}
			continue
		default:
		}
		frames := l.box.take(l.ready, writeBatch)
		if len(frames) == 0 {
			break
		}
		for _, b := range frames {
			if err := l.write(b); err != nil {
				l.fail(fmt.Errorf("write: %w", err))
				return
			}
		}
	}
	msg := websocket.FormatCloseMessage(websocket.CloseNormalClosure, "worker stopping")
	if err := l.conn.WriteControl(websocket.CloseMessage, msg, time.Now().Add(writeTimeout)); err != nil {
		l.fail(fmt.Errorf("write close: %w", err))
	}
}

func (l *link) write(b []byte) error {
	if err := l.conn.SetWriteDeadline(time.Now().Add(writeTimeout)); err != nil {
		return fmt.Errorf("set write deadline: %w", err)
	}
	if err := l.conn.WriteMessage(websocket.TextMessage, b); err != nil {
		return fmt.Errorf("write frame: %w", err)
	}
	return nil
}
