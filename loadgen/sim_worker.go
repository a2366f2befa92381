package loadgen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/paprika-hub/paprika/messages"
	"github.com/paprika-hub/paprika/persistence"
)

// Link timings of a simulated worker.
const (
	welcomeWait      = 15 * time.Second
	defaultHeartbeat = 15 * time.Second
	closeWait        = 2 * time.Second
	writeWait        = 30 * time.Second
	// sendQueueLen is each worker's send queue, in frames. Once it is full
	// a job waits for room: that is how a slow hub slows the worker.
	sendQueueLen = 256
	// minTick is the shortest pacing tick of a job: above 1/minTick lines/s
	// a job sends its lines in small bursts rather than one per tick.
	minTick = 20 * time.Millisecond
)

// simWorker is one simulated worker: one WebSocket link, a reader goroutine
// (assignments, acks), a writer goroutine (the send queue and heartbeats)
// and one goroutine per running job. All of them end in close, or when the
// link fails.
type simWorker struct {
	// fixed after construction
	f      *fleet
	id     string
	quit   chan struct{} // closed by close: the writer stops
	dead   chan struct{} // closed when the link failed or closes: jobs stop
	queue  chan outFrame
	stalls stallCounter

	// set by connect, read-only afterwards
	conn       *websocket.Conn
	hbInterval time.Duration

	wg         sync.WaitGroup // reader, writer, jobs
	sent       atomic.Int64   // job_log frames written to the socket
	queueWaits atomic.Int64   // times a job found the send queue full
	deadOnce   sync.Once
	closing    atomic.Bool

	mu      sync.Mutex
	running map[string]*simJob
}

// simJob is one job on one lane of a simulated worker.
type simJob struct {
	id      string
	attempt int
	lane    string
	lines   int64
	prefix  []byte // `{"type":"job_log","job_id":"…","attempt":N,"seq":`
	cancel  chan struct{}
	once    sync.Once
}

// outFrame is one entry of the send queue: a job_log line (job and seq,
// rendered and time-stamped by the writer) or a ready frame.
type outFrame struct {
	job *simJob
	seq int64
	raw []byte
}

func newSimWorker(f *fleet, id string) *simWorker {
	return &simWorker{
		f: f, id: id,
		quit:    make(chan struct{}),
		dead:    make(chan struct{}),
		queue:   make(chan outFrame, sendQueueLen),
		running: map[string]*simJob{},
	}
}

// connect dials the link, says hello and waits for welcome, then starts
// the reader and the writer.
func (w *simWorker) connect(ctx context.Context) error {
	hdr := http.Header{}
	if w.f.o.WorkerToken != "" {
		hdr.Set("Authorization", "Bearer "+w.f.o.WorkerToken)
	}
	nd := &net.Dialer{Timeout: 10 * time.Second, Control: sendBufferControl(w.f.o.SendBuffer)}
	d := websocket.Dialer{
		HandshakeTimeout: 10 * time.Second,
		ReadBufferSize:   4 << 10,
		WriteBufferSize:  4 << 10,
		NetDialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := nd.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return wrapStallConn(c, &w.stalls)
		},
	}
	u := w.f.linkURL(w.id)
	conn, res, err := d.DialContext(ctx, u, hdr)
	if err != nil {
		if res != nil {
			return fmt.Errorf("worker %s: dial %s: HTTP %d: %w", w.id, u, res.StatusCode, err)
		}
		return fmt.Errorf("worker %s: dial %s: %w", w.id, u, err)
	}
	w.conn = conn
	if err := w.handshake(); err != nil {
		_ = conn.Close()
		w.conn = nil // nothing for close to do
		return fmt.Errorf("worker %s: %w", w.id, err)
	}
	w.wg.Add(2)
	go w.readLoop()
	go w.writeLoop()
	return nil
}

func (w *simWorker) handshake() error {
	lanes := make([]string, w.f.o.Lanes)
	for i := range lanes {
		lanes[i] = fmt.Sprintf("sim://%s/lane-%d", w.id, i)
	}
	hello, err := messages.Frame{
		Type: messages.TypeHello, WorkerID: w.id, LanIP: "127.0.0.1", Version: "bench",
		Capabilities: &messages.Capabilities{MaxConcurrent: w.f.o.Lanes, LaneURLs: lanes, Drivers: []string{messages.DriverSimulated}},
		Stats:        &messages.Stats{DiskPct: 10},
	}.Encode()
	if err != nil {
		return err
	}
	_ = w.conn.SetWriteDeadline(time.Now().Add(welcomeWait))
	if err := w.conn.WriteMessage(websocket.TextMessage, hello); err != nil {
		return fmt.Errorf("send hello: %w", err)
	}
	_ = w.conn.SetWriteDeadline(time.Time{})
	_ = w.conn.SetReadDeadline(time.Now().Add(welcomeWait))
	defer func() { _ = w.conn.SetReadDeadline(time.Time{}) }()
	for {
		_, data, err := w.conn.ReadMessage()
		if err != nil {
			return fmt.Errorf("wait for welcome: %w", err)
		}
		f, err := messages.DecodeFrame(data)
		if err != nil {
			return fmt.Errorf("wait for welcome: %w", err)
		}
		switch f.Type {
		case messages.TypeWelcome:
			w.hbInterval = defaultHeartbeat
			if f.HeartbeatIntervalMS > 0 {
				w.hbInterval = time.Duration(f.HeartbeatIntervalMS) * time.Millisecond
			}
			return nil
		case messages.TypeError:
			return fmt.Errorf("hub refused hello: %s: %s", f.Code, f.Message)
		}
	}
}

// fail marks the link dead once: jobs stop, the writer stops, the fleet
// learns which jobs will never be acknowledged.
func (w *simWorker) fail(err error) {
	w.deadOnce.Do(func() {
		close(w.dead)
		if !w.closing.Load() {
			w.f.linkLost(w.id, err)
		}
		_ = w.conn.Close()
	})
}

// close ends the link normally and waits for every goroutine of the worker.
// Safe to call twice and on a worker that never connected.
func (w *simWorker) close() {
	if w.conn == nil {
		return
	}
	if w.closing.Swap(true) {
		w.wg.Wait()
		return
	}
	close(w.quit)
	msg := websocket.FormatCloseMessage(websocket.CloseNormalClosure, "bench done")
	_ = w.conn.WriteControl(websocket.CloseMessage, msg, time.Now().Add(closeWait))
	// The reader returns when the hub answers the close; do not wait for
	// a hub that does not.
	t := time.AfterFunc(closeWait, func() { w.fail(errors.New("close timed out")) })
	w.wg.Wait()
	t.Stop()
	w.fail(errors.New("closed"))
}

func (w *simWorker) readLoop() {
	defer w.wg.Done()
	for {
		_, data, err := w.conn.ReadMessage()
		if err != nil {
			w.fail(fmt.Errorf("read: %w", err))
			return
		}
		f, err := messages.DecodeFrame(data)
		if err != nil {
			w.f.noteErrorFrame(w.id, "undecodable", err.Error())
			continue
		}
		switch f.Type {
		case messages.TypeAssignJob:
			w.assign(f)
		case messages.TypeJobAck:
			w.f.jobAcked(f.JobID)
		case messages.TypeCancelJob:
			w.mu.Lock()
			if j := w.running[f.JobID]; j != nil {
				j.once.Do(func() { close(j.cancel) })
			}
			w.mu.Unlock()
		case messages.TypeError:
			w.f.noteErrorFrame(w.id, f.Code, f.Message)
		case messages.TypeSessionCommand:
			w.enqueueRaw(messages.Frame{Type: messages.TypeSessionResult, SessionID: f.SessionID,
				CommandID: f.CommandID, Error: "simulated workers have no sessions"})
		}
	}
}

// assign starts a job on a free lane, or rejects it as a real agent would.
func (w *simWorker) assign(f messages.Frame) {
	var p struct {
		Lines int64 `json:"lines"`
	}
	_ = json.Unmarshal(f.Params, &p) // a bad params blob is a job of 0 lines
	w.mu.Lock()
	if _, dup := w.running[f.JobID]; dup || len(w.running) >= w.f.o.Lanes || w.closing.Load() {
		w.mu.Unlock()
		w.f.noteRejected()
		w.enqueueRaw(messages.Frame{Type: messages.TypeJobFailed, JobID: f.JobID, Attempt: f.Attempt,
			Reason: persistence.ReasonRejected, Error: "no free lane"})
		return
	}
	idJSON, _ := json.Marshal(f.JobID)
	j := &simJob{
		id: f.JobID, attempt: f.Attempt, lines: max(p.Lines, 0), cancel: make(chan struct{}),
		lane:   fmt.Sprintf("sim://%s/lane-%d", w.id, len(w.running)),
		prefix: fmt.Appendf(nil, `{"type":"job_log","job_id":%s,"attempt":%d,"seq":`, idJSON, f.Attempt),
	}
	w.running[f.JobID] = j
	w.wg.Add(1)
	w.mu.Unlock()
	go w.runJob(j)
}

// jobEnd is how a job's line loop ended.
type jobEnd int

const (
	endLines    jobEnd = iota // every line sent, or the window ended
	endCanceled               // the hub canceled the job
	endDead                   // the link failed
)

// runJob streams one job's lines at the fleet's rate (or flat out), then
// reports it done.
func (w *simWorker) runJob(j *simJob) {
	defer w.wg.Done()
	defer func() {
		w.mu.Lock()
		delete(w.running, j.id)
		w.mu.Unlock()
	}()
	started, _ := messages.Frame{Type: messages.TypeJobStarted, JobID: j.id, Attempt: j.attempt, Lane: j.lane}.Encode()
	if !w.enqueue(outFrame{raw: started}) {
		return
	}
	w.f.jobStarted(j.id, w.id)
	var sent int64
	var end jobEnd
	if w.f.rate > 0 {
		sent, end = w.paced(j)
	} else {
		sent, end = w.flatOut(j)
	}
	var fin messages.Frame
	switch end {
	case endDead:
		return
	case endCanceled:
		fin = messages.Frame{Type: messages.TypeJobFailed, JobID: j.id, Attempt: j.attempt, Reason: persistence.ReasonCanceled, Error: "canceled by the hub"}
	default:
		fin = messages.Frame{Type: messages.TypeJobDone, JobID: j.id, Attempt: j.attempt,
			Result: fmt.Appendf(nil, `{"lines":%d}`, sent)}
	}
	raw, _ := fin.Encode()
	if w.enqueue(outFrame{raw: raw}) {
		w.f.jobFinished(j.id)
	}
}

// paced sends lines at the fleet's rate: on each tick, every line due by
// then. A job held up by a full queue catches up afterwards, as a real
// worker's outbox would.
func (w *simWorker) paced(j *simJob) (int64, jobEnd) {
	rate := w.f.rate
	tick := max(time.Duration(float64(time.Second)/rate), minTick)
	t := time.NewTicker(tick)
	defer t.Stop()
	start := time.Now()
	var seq int64
	for seq < j.lines {
		due := min(int64(time.Since(start).Seconds()*rate)+1, j.lines)
		for ; seq < due; seq++ {
			if end, ok := w.enqueueLine(j, seq); !ok {
				return seq, end
			}
		}
		if seq >= j.lines {
			break
		}
		select {
		case <-w.f.stop:
			return seq, endLines
		case <-j.cancel:
			return seq, endCanceled
		case <-w.dead:
			return seq, endDead
		case <-t.C:
		}
	}
	return seq, endLines
}

// flatOut sends lines as fast as the link takes them.
func (w *simWorker) flatOut(j *simJob) (int64, jobEnd) {
	var seq int64
	for ; seq < j.lines; seq++ {
		if end, ok := w.enqueueLine(j, seq); !ok {
			return seq, end
		}
	}
	return seq, endLines
}

// enqueueLine queues one line; false (and why) when the job must stop.
func (w *simWorker) enqueueLine(j *simJob, seq int64) (jobEnd, bool) {
	select {
	case <-w.f.stop:
		return endLines, false
	case <-j.cancel:
		return endCanceled, false
	default:
	}
	select {
	case w.queue <- outFrame{job: j, seq: seq}:
		return endLines, true
	default:
	}
	w.queueWaits.Add(1)
	select {
	case w.queue <- outFrame{job: j, seq: seq}:
		return endLines, true
	case <-w.f.stop:
		return endLines, false
	case <-j.cancel:
		return endCanceled, false
	case <-w.dead:
		return endDead, false
	}
}

// enqueue queues a frame, waiting for room; false when the link is dead.
func (w *simWorker) enqueue(f outFrame) bool {
	select {
	case w.queue <- f:
		return true
	case <-w.dead:
		return false
	}
}

// enqueueRaw encodes and queues a frame from the reader without blocking
// it: a full queue hands the frame to a goroutine of its own.
func (w *simWorker) enqueueRaw(f messages.Frame) {
	raw, err := f.Encode()
	if err != nil {
		return
	}
	select {
	case w.queue <- outFrame{raw: raw}:
	default:
		w.wg.Add(1)
		go func() { defer w.wg.Done(); w.enqueue(outFrame{raw: raw}) }()
	}
}

// writeLoop owns every data write to the socket: the send queue in order,
// and a heartbeat every interval.
func (w *simWorker) writeLoop() {
	defer w.wg.Done()
	hb := time.NewTicker(w.hbInterval)
	defer hb.Stop()
	buf := make([]byte, 0, 256+w.f.o.LineBytes)
	for {
		var err error
		select {
		case <-w.quit:
			return
		case <-w.dead:
			return
		case of := <-w.queue:
			_ = w.conn.SetWriteDeadline(time.Now().Add(writeWait))
			if of.job == nil {
				err = w.conn.WriteMessage(websocket.TextMessage, of.raw)
				break
			}
			buf = w.renderLine(buf[:0], of.job, of.seq)
			if err = w.conn.WriteMessage(websocket.TextMessage, buf); err == nil {
				w.sent.Add(1)
			}
		case <-hb.C:
			err = w.heartbeat()
		}
		if err != nil {
			w.fail(fmt.Errorf("write: %w", err))
			return
		}
	}
}

// renderLine builds a job_log frame whose line carries the time it is
// handed to the socket: "t=<unix ns> seq=<n>", padded to LineBytes.
func (w *simWorker) renderLine(b []byte, j *simJob, seq int64) []byte {
	b = append(b, j.prefix...)
	b = strconv.AppendInt(b, seq, 10)
	b = append(b, `,"line":"t=`...)
	start := len(b) - 2
	b = strconv.AppendInt(b, time.Now().UnixNano(), 10)
	b = append(b, " seq="...)
	b = strconv.AppendInt(b, seq, 10)
	for n := len(b) - start; n < w.f.o.LineBytes; n++ {
		b = append(b, 'x')
	}
	return append(b, `"}`...)
}

func (w *simWorker) heartbeat() error {
	w.mu.Lock()
	ids := make([]string, 0, len(w.running))
	for id := range w.running {
		ids = append(ids, id)
	}
	w.mu.Unlock()
	raw, err := messages.Frame{Type: messages.TypeHeartbeat, Running: ids,
		Stats: &messages.Stats{InFlight: len(ids), CPUPct: 5, MemPct: 10, DiskPct: 10}}.Encode()
	if err != nil {
		return err
	}
	return w.conn.WriteMessage(websocket.TextMessage, raw)
}
