package link

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/gorilla/websocket"

	"github.com/paprika-hub/paprika/actors/grains"
	"github.com/paprika-hub/paprika/actors/logpipe"
	"github.com/paprika-hub/paprika/actors/supervise"
	"github.com/paprika-hub/paprika/internal/backoff"
	"github.com/paprika-hub/paprika/internal/cork"
	"github.com/paprika-hub/paprika/internal/deadline"
	"github.com/paprika-hub/paprika/internal/wsread"
	"github.com/paprika-hub/paprika/messages"
	"github.com/paprika-hub/paprika/persistence"
)

// Link limits. A worker that does not read its socket for writeWait is cut
// off with a typed reason rather than allowed to block anyone else.
const (
	writeWait     = 10 * time.Second
	helloWait     = 10 * time.Second
	pingEvery     = 20 * time.Second
	outQueueLen   = 1024
	finishRetries = 5
	// probeWait bounds a liveness probe: a pong takes one round trip.
	probeWait = time.Second
	// maxEarlyFrames bounds the frames kept while hello is being accepted:
	// an honest worker sends a few (heartbeat, re-sent reports).
	maxEarlyFrames = 256
)

// finishRetry spaces the tries to report a job's end (100 ms doubling:
// 1.5 s over finishRetries before the link is dropped).
var finishRetry = backoff.Policy{Base: 100 * time.Millisecond}

// workerConn owns one worker's WebSocket on this hub: one reader goroutine
// turns frames into messages (log lines go straight to the job's LogStream,
// the rest to this actor, in order), one writer goroutine drains a bounded
// queue. It forwards to the worker grain, which is where the worker's state
// lives; this actor holds only the socket.
type workerConn struct {
	// fixed after construction
	deps     *grains.Deps
	ws       *websocket.Conn
	workerID string
	logs     *logpipe.Router

	// actor-confined state
	log       *slog.Logger
	out       chan []byte
	stop      chan struct{}
	wg        sync.WaitGroup
	helloDone bool
	helloing  bool       // hello is with the worker grain
	early     []*inFrame // frames that came meanwhile, handled after the welcome
	closing   bool
	pingNow   chan struct{}  // asks the writer for a ping now (a probe)
	probers   []*actor.PID   // waiting for the next pong
	probeStop supervise.Stop // the probe's timeout
	startedAt int64          // unix ns the socket was accepted
	timers    *supervise.Timers
}

type inFrame struct {
	f messages.Frame
	// raw is the frame as it came, for the hello and the heartbeat alone:
	// the worker grain reads those whole. Job frames go on decoded.
	raw []byte
	// read is when a job's end (job_done, job_failed) was read off the
	// socket: its finished_at, whatever waits before the grain has it.
	read time.Time
}

// badFrame is a frame the link refused; f holds what could be decoded.
type badFrame struct {
	err error
	f   messages.Frame
}
type connClosed struct{ err error }

// frameTooLarge: the worker sent a message over messages.MaxFrameBytes; the
// reader stopped reading (the rest of it is still in the socket).
type frameTooLarge struct{}
type helloTimeout struct{}

// pongSeen: the worker answered a ping (the reader saw its pong).
type pongSeen struct{}

// probeTimeout: no pong came within probeWait.
type probeTimeout struct{}
type closeNow struct{}
type retryFinish struct {
	payload *inFrame
	try     int
}

// NewWorkerConnProps builds the props of a WorkerConn for an upgraded socket.
func NewWorkerConnProps(d *grains.Deps, ws *websocket.Conn, workerID string, logs *logpipe.Router) *actor.Props {
	return actor.PropsFromProducer(func() actor.Actor {
		return &workerConn{deps: d, ws: ws, workerID: workerID, logs: logs}
	}, actor.WithReceiverMiddleware(supervise.Recover("worker_conn", d.Log, d.Metrics)), actor.WithDispatcher(d.Dispatcher))
}

func (c *workerConn) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		c.start(ctx)
	case *actor.Restarting:
		// A fresh actor cannot adopt the socket's goroutines: drop the link
		// (the worker reconnects and re-sends what was not acknowledged).
		if c.helloDone {
			grains.Send(ctx, c.deps.Cluster(), c.workerID, grains.KindWorker, &messages.WorkerDisconnected{Conn: grains.RefOf(ctx.Self())})
			c.helloDone = false
		}
		c.timers.StopAll()
		c.shutdownIO()
		c.logs.LinkClosed(ctx.Self().Id)
	case *supervise.InjectPanic:
		panic("injected panic in worker connection " + c.workerID)
	case *actor.Stopping:
		c.timers.StopAll()
		c.shutdownIO()
		c.logs.LinkClosed(ctx.Self().Id)
	case *grains.GrainCall:
		msg.Run(ctx)
	case *messages.Reply, *supervise.CallSweep:
		grains.Answered(c.timers, msg)
	case *inFrame:
		c.frame(ctx, msg)
	case *badFrame:
		c.deps.Metrics.LinkBadFrames.Inc()
		c.log.Warn("bad frame from worker", slog.Any("err", msg.err))
		c.sendFrame(ctx, messages.Frame{Type: messages.TypeError, Code: "bad_frame", Message: msg.err.Error()})
		if f := msg.f; (f.Type == messages.TypeJobDone || f.Type == messages.TypeJobFailed) && f.JobID != "" {
			// A report refused for good is acknowledged as decided, so the
			// worker drops it instead of re-sending it on every reconnect.
			_ = c.enqueue(ctx, messages.JobAckFrame(f.JobID, f.Attempt))
		}
	case *frameTooLarge:
		// Counted and answered before the close: the reader cannot find
		// the next frame's start without reading the rest of this one.
		c.deps.Metrics.LinkBadFrames.Inc()
		c.log.Warn("oversize frame from worker; closing its link", slog.Int("limit_bytes", messages.MaxFrameBytes))
		c.closeWith(ctx, string(messages.CodeFrameTooLarge), fmt.Sprintf("a frame is at most %d bytes", messages.MaxFrameBytes))
	case *connClosed:
		c.closed(ctx, msg.err)
	case *helloTimeout:
		if !c.helloDone {
			c.closeWith(ctx, "hello_timeout", "no hello within "+helloWait.String())
		}
	case *messages.ConnSend:
		if from := ctx.Sender(); msg.Ack && from != nil && !grains.MemberAddress(c.deps.Cluster(), from.Address) {
			// A hub the cluster dropped (frozen past the member timeout)
			// still sends what its actors had queued when it resumes; its
			// assignment may be of an attempt that has run since, and its
			// job grain's PID is no one's now.
			c.log.Warn("assignment from a hub that is not a cluster member refused", slog.String("from", from.Address),
				slog.String("job_id", msg.JobId))
			grains.Respond(ctx, messages.Fail(messages.CodeNotMember, "hub at %s is not a member of this cluster", from.Address))
			return
		}
		// The job grain's reports from this link go straight to it.
		grains.RememberPID(c.deps.Cluster(), msg.JobId, grains.KindJob, msg.Job)
		// Noted before the frame can leave, so that the worker's first line
		// finds it: the job's log stream here then knows its holder.
		assignment := msg.Ack && msg.JobId != "" && msg.Attempt > 0 && !c.closing
		if assignment {
			c.logs.Assigned(msg.JobId, c.workerID, int(msg.Attempt), ctx.Self().Id)
		}
		queued := c.enqueue(ctx, msg.Frame)
		if assignment && !queued {
			c.logs.Rejected(msg.JobId, int(msg.Attempt), ctx.Self().Id)
		}
		if msg.Ack && ctx.Sender() != nil {
			if queued {
				grains.Respond(ctx, &messages.Reply{Ok: true})
			} else {
				grains.Respond(ctx, messages.Fail(messages.CodeClosing, "link of %s is closing", c.workerID))
			}
		}
	case *messages.ConnProbe:
		c.probe(ctx)
	case *pongSeen:
		c.answerProbers(ctx, &messages.Reply{Ok: true})
	case *probeTimeout:
		c.probeStop = nil
		c.answerProbers(ctx, messages.Fail(messages.CodeTimeout, "worker %s did not answer a ping within %s", c.workerID, probeWait))
	case *messages.ConnClose:
		c.closeWith(ctx, msg.Code, msg.Message)
	case *closeNow:
		_ = c.ws.Close() // the reader fails and reports connClosed
	case *logpipe.Persisted:
		c.reportFinish(ctx, msg.Payload.(*inFrame), 0)
	case *retryFinish:
		c.reportFinish(ctx, msg.payload, msg.try)
	}
}

func (c *workerConn) start(ctx actor.Context) {
	c.log = c.deps.Log.With(slog.String("worker_id", c.workerID))
	if c.startedAt == 0 {
		c.startedAt = time.Now().UnixNano()
	}
	c.out = make(chan []byte, outQueueLen)
	c.pingNow = make(chan struct{}, 1)
	c.stop = make(chan struct{})
	c.timers = supervise.NewTimers(ctx, "worker_conn")
	c.timers.After(helloWait, &helloTimeout{})
	c.deps.Metrics.LinksOpened.Inc()
	self, root := ctx.Self(), ctx.ActorSystem().Root
	c.wg.Add(2)
	go c.writeLoop(root, self)
	go c.readLoop(root, self)
}

// readLoop is owned by this actor: it ends when the socket fails or is
// closed by shutdownIO. Log lines take a budget token and go straight to
// their LogStream; a full budget blocks here, which is the backpressure.
func (c *workerConn) readLoop(root *actor.RootContext, self *actor.PID) {
	defer c.wg.Done()
	streams := map[string]*actor.PID{} // reader-confined cache
	// The reader bounds each message itself (wsread.Message), so that an
	// oversize one is answered with an error frame before the close;
	// gorilla's own limit, which closes at once with no word, only guards
	// against a frame header claiming more than any reader would take.
	c.ws.SetReadLimit(hardFrameBytes)
	// A link silent for the alive window is dead. Moving the socket's
	// read deadline on after every frame cost a log-ingesting hub 6 % of
	// its CPU, so it moves at most every slack, to slack past the window:
	// a link is closed after between the window and the window plus slack
	// of silence, never sooner. The pong handler runs on this goroutine.
	deadline := c.deps.Timing.AliveWindow
	slack := deadline / readDeadlineSlack
	var extended time.Time
	extend := func(force bool) error {
		now := time.Now()
		if !force && now.Sub(extended) < slack {
			return nil
		}
		extended = now
		return c.ws.SetReadDeadline(now.Add(deadline + slack))
	}
	_ = extend(true)
	c.ws.SetPongHandler(func(string) error {
		root.Send(self, &pongSeen{})
		return extend(false)
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { // unblocks a budget wait when the link is being torn down
		select {
		case <-c.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	var buf bytes.Buffer // reader-confined: a log line's frame is decoded from it and forgotten
	var f messages.Frame // reader-confined, decoded into anew each time: a log line costs no Frame
	for {
		typ, data, err := wsread.Message(c.ws, &buf, messages.MaxFrameBytes)
		if errors.Is(err, wsread.ErrTooLarge) {
			root.Send(self, &frameTooLarge{})
			return
		}
		if err != nil {
			root.Send(self, &connClosed{err: err})
			return
		}
		_ = extend(false)
		if typ != websocket.TextMessage {
			root.Send(self, &badFrame{err: errors.New("binary frames are not part of the link")})
			continue
		}
		if err := messages.DecodeFrameInto(data, &f); err != nil {
			root.Send(self, &badFrame{err: err, f: f})
			continue
		}
		if seen := c.deps.OnLinkFrame; seen != nil {
			seen(c.workerID, f.Type)
		}
		if f.Type == messages.TypeJobLog {
			pid := streams[f.JobID]
			if pid == nil {
				if pid, err = c.logs.Stream(f.JobID); err != nil {
					root.Send(self, &connClosed{err: err})
					return
				}
				streams[f.JobID] = pid
			}
			if err := c.logs.Acquire(ctx, 1); err != nil {
				root.Send(self, &connClosed{err: err})
				return
			}
			root.Send(pid, &logpipe.Line{Worker: c.workerID, Attempt: f.Attempt, Seq: f.Seq, Text: f.Line})
			continue
		}
		in := &inFrame{f: f}
		if f.Type == messages.TypeJobDone || f.Type == messages.TypeJobFailed {
			delete(streams, f.JobID)
			in.read = c.deps.Clock()
		}
		if f.Type == messages.TypeHello || f.Type == messages.TypeHeartbeat {
			in.raw = bytes.Clone(data) // data is buf's, reused for the next frame; only these go on as they came
		}
		root.Send(self, in)
	}
}

// readDeadlineSlack: a link's read deadline moves on at most every
// AliveWindow/readDeadlineSlack (see readLoop).
const readDeadlineSlack = 16

// hardFrameBytes is gorilla's read limit on the link: far above
// messages.MaxFrameBytes, which the reader enforces with an answer
// (wsread.Message).
const hardFrameBytes = 64 * messages.MaxFrameBytes

func (c *workerConn) writeLoop(root *actor.RootContext, self *actor.PID) {
	defer c.wg.Done()
	ping := time.NewTicker(pingEvery)
	defer ping.Stop()
	for {
		var err error
		select {
		case <-c.stop:
			return
		case b := <-c.out:
			err = c.writeFrames(b)
		case <-ping.C:
			err = c.ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(writeWait))
		case <-c.pingNow:
			err = c.ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(probeWait))
		}
		if err != nil {
			root.Send(self, &connClosed{err: fmt.Errorf("write: %w", err)})
			_ = c.ws.Close() // the reader fails and returns too
			return
		}
	}
}

// maxBurst bounds the frames one write gathers, so a link that is always
// busy still flushes often.
const maxBurst = 64

// writeFrames writes b and the frames queued behind it, at most maxBurst,
// gathered into one write when the socket can (cork): under load a job's
// assign_job and another's job_ack cost one system call, not one each.
// Alone, a frame goes at once as before.
func (c *workerConn) writeFrames(b []byte) error {
	return cork.Gather(c.ws.NetConn(), func() error {
		_ = c.ws.SetWriteDeadline(time.Now().Add(writeWait))
		if err := c.ws.WriteMessage(websocket.TextMessage, b); err != nil {
			return err
		}
		for range maxBurst - 1 {
			select {
			case b = <-c.out:
				if err := c.ws.WriteMessage(websocket.TextMessage, b); err != nil {
					return err
				}
			default:
				return nil
			}
		}
		return nil
	})
}

func (c *workerConn) shutdownIO() {
	if c.stop == nil {
		return
	}
	select {
	case <-c.stop:
	default:
		close(c.stop)
	}
	_ = c.ws.Close()
	c.wg.Wait()
}

// probe asks the worker for a pong; the asker hears when it comes, or
// after probeWait. One ping serves every probe waiting at once.
func (c *workerConn) probe(ctx actor.Context) {
	if ctx.Sender() == nil {
		return
	}
	if c.closing {
		ctx.Respond(messages.Fail(messages.CodeClosing, "link of %s is closing", c.workerID))
		return
	}
	c.probers = append(c.probers, ctx.Sender())
	if len(c.probers) > 1 {
		return
	}
	select {
	case c.pingNow <- struct{}{}:
	default: // a ping is on its way already
	}
	c.probeStop = c.timers.After(probeWait, &probeTimeout{})
}

func (c *workerConn) answerProbers(ctx actor.Context, r *messages.Reply) {
	if c.probeStop != nil {
		c.probeStop()
		c.probeStop = nil
	}
	for _, p := range c.probers {
		ctx.Send(p, r)
	}
	c.probers = nil
}

// enqueue hands a frame to the writer; false when the link is closing.
func (c *workerConn) enqueue(ctx actor.Context, b []byte) bool {
	if c.closing {
		return false
	}
	select {
	case c.out <- b:
		return true
	default:
		// A worker that does not read must not hold up the hub.
		c.deps.Metrics.LinkSlowConsumer.Inc()
		c.log.Warn("worker is not reading its link; closing it", slog.Int("queued", len(c.out)))
		c.closing = true
		_ = c.ws.Close()
		return false
	}
}

func (c *workerConn) sendFrame(ctx actor.Context, f messages.Frame) {
	b, err := f.Encode()
	if err != nil {
		c.log.Error("encode frame", slog.Any("err", err))
		return
	}
	_ = c.enqueue(ctx, b)
}

// closeWith tells the worker why in an error frame, then closes the socket
// a moment later so the writer can deliver it.
func (c *workerConn) closeWith(ctx actor.Context, code, message string) {
	if c.closing {
		return
	}
	c.log.Info("closing worker link", slog.String("code", code), slog.String("reason", message))
	c.lastWord(ctx, messages.Frame{Type: messages.TypeError, Code: code, Message: message})
}

// lastWord sends the link's last frame and closes the link shortly after,
// so the frame reaches the worker before the close does.
func (c *workerConn) lastWord(ctx actor.Context, f messages.Frame) {
	c.sendFrame(ctx, f)
	c.closing = true
	c.timers.After(200*time.Millisecond, &closeNow{})
}

func (c *workerConn) closed(ctx actor.Context, err error) {
	if c.helloDone {
		grains.Send(ctx, c.deps.Cluster(), c.workerID, grains.KindWorker, &messages.WorkerDisconnected{Conn: grains.RefOf(ctx.Self())})
		c.helloDone = false
		c.deps.Metrics.LinksClosed.Inc()
	}
	c.log.Debug("worker link closed", slog.Any("err", err))
	ctx.Stop(ctx.Self())
}

func (c *workerConn) frame(ctx actor.Context, in *inFrame) {
	f := in.f
	if f.Type == messages.TypeHello {
		c.hello(ctx, in)
		return
	}
	if c.helloing {
		if len(c.early) >= maxEarlyFrames {
			c.closeWith(ctx, "too_early", fmt.Sprintf("more than %d frames before the welcome", maxEarlyFrames))
			return
		}
		c.early = append(c.early, in)
		return
	}
	if !c.helloDone {
		c.closeWith(ctx, "hello_first", "the first frame must be hello")
		return
	}
	cl := c.deps.Cluster()
	switch f.Type {
	case messages.TypeHeartbeat:
		grains.Send(ctx, cl, c.workerID, grains.KindWorker, &messages.WorkerHeartbeat{Conn: grains.RefOf(ctx.Self()), Frame: in.raw,
			ConnStartedUnixNs: c.startedAt})
	case messages.TypeJobStarted:
		grains.Send(ctx, cl, f.JobID, grains.KindJob, &messages.JobStarted{WorkerId: c.workerID, Attempt: int32(f.Attempt), Lane: f.Lane})
	case messages.TypeJobFailed, messages.TypeJobDone:
		if f.Reason == persistence.ReasonRejected {
			c.logs.Rejected(f.JobID, f.Attempt, ctx.Self().Id) // the claim is rolled back
			c.reportFinish(ctx, in, 0)                         // never ran: its log stays open
			return
		}
		if f.Type == messages.TypeJobDone {
			// The lane is free now, whatever the log's write takes: the
			// grain lets the slot go ahead of the end it is told below.
			grains.Send(ctx, cl, f.JobID, grains.KindJob, &messages.JobLaneFreed{WorkerId: c.workerID, Attempt: int32(f.Attempt),
				ReportedUnixNs: in.read.UnixNano()})
		}
		// The result is reported only once the log, done sentinel included,
		// is stored: a follower never sees "done" before the last line.
		// A failure the job grain may retry keeps the log open for the
		// next attempt's lines; the grain closes it if the job ends.
		keepOpen := f.Type == messages.TypeJobFailed && !f.Permanent &&
			(f.Reason == persistence.ReasonJobError || f.Reason == persistence.ReasonLaneError)
		c.logs.Route(ctx, f.JobID, &logpipe.End{Worker: c.workerID, Attempt: f.Attempt, Notify: ctx.Self(), Payload: in, KeepOpen: keepOpen})
	case messages.TypeLeaving:
		grains.Send(ctx, cl, c.workerID, grains.KindWorker, &messages.WorkerLeaving{Conn: grains.RefOf(ctx.Self())})
	case messages.TypeJobStatus:
		audit := &messages.JobAudit{WorkerId: c.workerID, Attempt: int32(f.Attempt), State: f.State}
		if f.UptimeMS > 0 {
			audit.WorkerStartedUnixMs = c.deps.Clock().UnixMilli() - f.UptimeMS
		}
		grains.Send(ctx, cl, f.JobID, grains.KindJob, audit)
	case messages.TypeSessionResult:
		grains.Send(ctx, cl, f.SessionID, grains.KindSession, &messages.SessionResult{WorkerId: c.workerID, CommandId: f.CommandID, Ok: f.OK,
			Result: f.Result, Error: f.Error})
	default:
		c.deps.Metrics.LinkBadFrames.Inc()
		c.sendFrame(ctx, messages.Frame{Type: messages.TypeError, Code: "unexpected_type",
			Message: fmt.Sprintf("a worker does not send %q", f.Type)})
	}
}

// replayEarly handles the frames that came while hello was being
// accepted.
func (c *workerConn) replayEarly(ctx actor.Context) {
	early := c.early
	c.early = nil
	for _, in := range early {
		c.frame(ctx, in)
	}
}

func (c *workerConn) hello(ctx actor.Context, in *inFrame) {
	f := in.f
	if c.helloDone || c.helloing {
		c.sendFrame(ctx, messages.Frame{Type: messages.TypeError, Code: "duplicate_hello", Message: "hello was already accepted"})
		return
	}
	if f.WorkerID != "" && f.WorkerID != c.workerID {
		c.closeWith(ctx, "id_mismatch", fmt.Sprintf("hello names %q on the link of %q", f.WorkerID, c.workerID))
		return
	}
	rctx := deadline.Within(c.deps.Timing.GrainTimeout)
	holder, err := c.deps.Workers.ClaimID(rctx, c.workerID, f.LanIP)
	if err != nil {
		c.closeWith(ctx, "unavailable", "worker registry unreachable: "+err.Error())
		return
	}
	if holder != "" && holder != f.LanIP {
		// The holder's address is not the caller's business.
		c.closeWith(ctx, "id_taken", fmt.Sprintf("worker id %s belongs to another machine", c.workerID))
		return
	}
	if to := c.homeURL(f); to != "" {
		// Nothing of the worker is taken here: its grain hears of the
		// link on its own hub.
		c.log.Info("worker's grain lives on another hub it was given; asking it to link there", slog.String("hub_url", to))
		c.deps.Metrics.LinksRelinked.Inc()
		c.lastWord(ctx, messages.Frame{Type: messages.TypeRelink, HubURL: to})
		return
	}
	// The grain's answer is a continuation; frames that come meanwhile
	// are kept (in order, bounded) and handled once the link is accepted.
	c.helloing = true
	grains.Ask(ctx, c.timers, c.deps.Cluster(), c.workerID, grains.KindWorker,
		&messages.WorkerConnected{HubId: c.deps.HubID, Conn: grains.RefOf(ctx.Self()), Hello: in.raw,
			ConnStartedUnixNs: c.startedAt}, c.deps.Timing.GrainTimeout,
		func(res *messages.Reply, err error) {
			c.helloing = false
			if messages.CodeIDTaken.Is(res) {
				c.closeWith(ctx, string(messages.CodeIDTaken), res.Message)
				return
			}
			if err != nil || !res.Ok {
				c.closeWith(ctx, "rejected", grains.ErrString(err, res))
				return
			}
			c.helloDone = true
			c.sendFrame(ctx, messages.Frame{Type: messages.TypeWelcome, WorkerID: c.workerID, HubID: c.deps.HubID,
				HeartbeatIntervalMS: c.deps.Timing.HeartbeatInterval.Milliseconds(), AliveWindowMS: c.deps.Timing.AliveWindow.Milliseconds()})
			c.replayEarly(ctx)
		})
}

// reportFinish tells the job grain how the attempt ended and acks the worker
// once the grain has decided (stored, or refused as stale). Store trouble is
// retried; if it persists the link is dropped so the worker re-sends later.
func (c *workerConn) reportFinish(ctx actor.Context, in *inFrame, try int) {
	f := &in.f
	msg := &messages.JobFinished{WorkerId: c.workerID, Attempt: int32(f.Attempt), Succeeded: f.Type == messages.TypeJobDone,
		Reason: f.Reason, Error: f.Error, Result: f.Result, Assets: f.Assets, Permanent: f.Permanent,
		ReportedUnixNs: in.read.UnixNano()}
	// The answer's continuation keeps the two fields it needs, not a copy
	// of the whole frame.
	jobID, attempt := f.JobID, f.Attempt
	// One attempt per try: the retries are the link's own (retryFinish),
	// which drop the link when the store stays away.
	grains.AskOnce(ctx, c.timers, c.deps.Cluster(), jobID, grains.KindJob, msg, c.deps.Timing.GrainTimeout,
		func(r *messages.Reply, err error) {
			// A stale attempt or an unknown job is decided for good: the
			// ack lets the worker drop the report instead of re-sending it
			// after every reconnect.
			if err != nil || (!r.Ok && !messages.CodeStale.Is(r) && !messages.CodeNotFound.Is(r)) {
				c.retryFinish(ctx, in, try, fmt.Errorf("%s", grains.ErrString(err, r)))
				return
			}
			_ = c.enqueue(ctx, messages.JobAckFrame(jobID, attempt))
		})
}

func (c *workerConn) retryFinish(ctx actor.Context, in *inFrame, try int, err error) {
	if try+1 >= finishRetries {
		c.log.Error("could not report a job's end; dropping the link so the worker re-sends it",
			slog.String("job_id", in.f.JobID), slog.Any("err", err))
		c.closeWith(ctx, "unavailable", "job store unavailable")
		return
	}
	c.timers.After(finishRetry.Delay(try), &retryFinish{payload: in, try: try + 1})
}
