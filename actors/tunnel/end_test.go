package tunnel

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/messages"
	"github.com/paprika-hub/paprika/metrics"
)

// rig is a tunnel between two real WebSockets in one actor system: app
// is what a CDP client holds (its socket ends at the client end), lane
// what the worker holds (its socket ends at the worker end).
type rig struct {
	t          *testing.T
	system     *actor.ActorSystem
	ends       *Ends
	srv        *httptest.Server
	clientPID  chan *actor.PID
	clientCnt  Counters
	workerCnt  Counters
	clientConf Config
}

var upgrader = websocket.Upgrader{ReadBufferSize: 16 << 10, WriteBufferSize: 64 << 10}

func newRig(t *testing.T, tweak func(c *Config)) *rig {
	t.Helper()
	system := actor.NewActorSystem()
	log := slog.New(slog.NewTextHandler(testOut(), nil))
	ends, err := Start(system, log, metrics.NewMetrics(), func(p *actor.Props, name string) (*actor.PID, error) {
		return system.Root.SpawnNamed(p, name)
	})
	require.NoError(t, err)
	r := &rig{t: t, system: system, ends: ends, clientPID: make(chan *actor.PID, 1)}
	r.clientConf = Config{Role: RoleClient, TunnelID: "s-1_a", Log: log, Counters: &r.clientCnt}
	if tweak != nil {
		tweak(&r.clientConf)
	}
	var clientPID *actor.PID
	var mu sync.Mutex
	mux := http.NewServeMux()
	mux.HandleFunc("/client", func(w http.ResponseWriter, req *http.Request) {
		ws, err := upgrader.Upgrade(w, req, nil)
		if err != nil {
			return
		}
		cfg := r.clientConf
		cfg.Conn = ws
		pid, err := ends.Spawn(cfg)
		if err != nil {
			_ = ws.Close()
			return
		}
		mu.Lock()
		clientPID = pid
		mu.Unlock()
		r.clientPID <- pid
	})
	mux.HandleFunc("/worker", func(w http.ResponseWriter, req *http.Request) {
		ws, err := upgrader.Upgrade(w, req, nil)
		if err != nil {
			return
		}
		mu.Lock()
		peer := clientPID
		mu.Unlock()
		_, err = ends.Spawn(Config{Role: RoleWorker, TunnelID: "s-1_a", Log: log, Conn: ws, Peer: peer, Counters: &r.workerCnt})
		if err != nil {
			_ = ws.Close()
		}
	})
	r.srv = httptest.NewServer(mux)
	t.Cleanup(func() {
		ends.Stop(2 * time.Second)
		r.srv.Close()
		system.Shutdown()
	})
	return r
}

func (r *rig) dial(path string) *websocket.Conn {
	r.t.Helper()
	ws, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(r.srv.URL, "http")+path, nil)
	require.NoError(r.t, err)
	r.t.Cleanup(func() { _ = ws.Close() })
	return ws
}

// open dials the app's socket, then the lane's: a tunnel end to end.
func (r *rig) open() (app, lane *websocket.Conn, client *actor.PID) {
	app = r.dial("/client")
	client = <-r.clientPID
	lane = r.dial("/worker")
	// Both ends are up once a message crosses.
	require.NoError(r.t, app.WriteMessage(websocket.TextMessage, []byte("ready")))
	_, b, err := lane.ReadMessage()
	require.NoError(r.t, err)
	require.Equal(r.t, "ready", string(b))
	return app, lane, client
}

func readClose(t *testing.T, ws *websocket.Conn) *websocket.CloseError {
	t.Helper()
	_ = ws.SetReadDeadline(time.Now().Add(15 * time.Second))
	for {
		_, _, err := ws.ReadMessage()
		if err == nil {
			continue
		}
		var ce *websocket.CloseError
		require.True(t, errors.As(err, &ce), "want a close frame, got %v", err)
		return ce
	}
}

// TestTunnelCarriesMessagesInOrder: many small messages both ways arrive
// in order and whole, and a 20 MB message arrives intact.
func TestTunnelCarriesMessagesInOrder(t *testing.T) {
	r := newRig(t, nil)
	app, lane, _ := r.open()
	const n = 2000
	go func() {
		for i := range n {
			if app.WriteMessage(websocket.TextMessage, fmt.Appendf(nil, `{"id":%d}`, i)) != nil {
				return
			}
		}
	}()
	for i := range n {
		mt, b, err := lane.ReadMessage()
		require.NoError(t, err)
		require.Equal(t, websocket.TextMessage, mt)
		require.Equal(t, fmt.Sprintf(`{"id":%d}`, i), string(b))
	}
	big := make([]byte, 20<<20)
	_, _ = rand.Read(big)
	go func() { // one writer for the lane's socket: the big message, then an empty one
		if lane.WriteMessage(websocket.BinaryMessage, big) == nil {
			_ = lane.WriteMessage(websocket.TextMessage, nil)
		}
	}()
	mt, got, err := app.ReadMessage()
	require.NoError(t, err)
	require.Equal(t, websocket.BinaryMessage, mt)
	require.True(t, bytes.Equal(big, got), "20 MB message arrives intact (%d bytes)", len(got))
	// An empty message is a message too.
	_, got, err = app.ReadMessage()
	require.NoError(t, err)
	require.Empty(t, got)
}

// TestTunnelBackpressure: a client that reads nothing stops the lane's
// bytes after one window; nothing piles up in the ends; once it reads,
// every byte arrives in order.
func TestTunnelBackpressure(t *testing.T) {
	r := newRig(t, nil)
	app, lane, _ := r.open()
	const msgs, size = 2000, 32 << 10 // 64 MB in all: far more than any socket buffer
	writerDone := make(chan error, 1)
	go func() {
		buf := make([]byte, size)
		for i := range msgs {
			buf[0], buf[1] = byte(i), byte(i>>8)
			if err := lane.WriteMessage(websocket.BinaryMessage, buf); err != nil {
				writerDone <- err
				return
			}
		}
		writerDone <- nil
	}()
	// Wait until the flow stands still: the client end wrote all the app's
	// socket takes, and the worker end may send only a window more.
	var last int64 = -1
	require.Eventually(t, func() bool {
		s := r.workerCnt.Sent.Load()
		still := s == last && s > 0
		last = s
		return still
	}, 30*time.Second, 300*time.Millisecond, "the flow stops")
	sent, written := r.workerCnt.Sent.Load(), r.clientCnt.Written.Load()
	require.LessOrEqual(t, sent-written, int64(Window), "in flight between the ends is bounded by the window")
	require.Less(t, sent, int64(msgs*size/2), "the lane was held back: far less than it wanted to send got through")
	select {
	case err := <-writerDone:
		t.Fatalf("the lane's writer was never held back (err %v)", err)
	default:
	}
	// Now read: all of it arrives, in order.
	for i := range msgs {
		_, b, err := app.ReadMessage()
		require.NoError(t, err)
		require.Len(t, b, size)
		require.Equal(t, i&0xffff, int(b[0])|int(b[1])<<8, "message %d in order", i)
	}
	require.NoError(t, <-writerDone)
}

// TestTunnelClosePassesThrough: a close code and reason from one side
// reach the other.
func TestTunnelClosePassesThrough(t *testing.T) {
	r := newRig(t, nil)
	app, lane, _ := r.open()
	require.NoError(t, lane.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(4001, "lane says bye"), time.Now().Add(time.Second)))
	ce := readClose(t, app)
	require.Equal(t, 4001, ce.Code)
	require.Equal(t, "lane says bye", ce.Text)
}

// TestTunnelPeerDeath: the peer end's actor vanishes without a word (its
// hub died): the socket closes with 1011 and says what went away.
func TestTunnelPeerDeath(t *testing.T) {
	r := newRig(t, nil)
	app := r.dial("/client")
	client := <-r.clientPID
	ghost := r.system.Root.Spawn(actor.PropsFromFunc(func(actor.Context) {}))
	r.system.Root.Send(client, &messages.TunnelAttach{Peer: &messages.Ref{Address: ghost.Address, Id: ghost.Id}})
	// Attached: a message from the app reaches the ghost, i.e. the reader runs.
	require.NoError(t, app.WriteMessage(websocket.TextMessage, []byte("hello")))
	require.Eventually(t, func() bool { return r.clientCnt.Sent.Load() == 5 }, 5*time.Second, 10*time.Millisecond)
	require.NoError(t, r.system.Root.StopFuture(ghost).Wait())
	ce := readClose(t, app)
	require.Equal(t, messages.CloseInternal, ce.Code)
	require.Contains(t, ce.Text, "went away")
	require.Contains(t, ce.Text, "reconnect to cdp_url")
}

// TestTunnelAttachTimeout: no worker end comes; the client is told.
func TestTunnelAttachTimeout(t *testing.T) {
	r := newRig(t, func(c *Config) { c.AttachTimeout = 200 * time.Millisecond })
	app := r.dial("/client")
	<-r.clientPID
	ce := readClose(t, app)
	require.Equal(t, messages.CloseInternal, ce.Code)
	require.Equal(t, ReasonAttachTimeout, ce.Text)
}

// TestTunnelOverrunClosesIt: a peer that sends past the window is cut
// off with 1008, and nothing is buffered for it.
func TestTunnelOverrunClosesIt(t *testing.T) {
	r := newRig(t, nil)
	app := r.dial("/client")
	client := <-r.clientPID
	ghost := r.system.Root.Spawn(actor.PropsFromFunc(func(actor.Context) {}))
	r.system.Root.Send(client, &messages.TunnelAttach{Peer: &messages.Ref{Address: ghost.Address, Id: ghost.Id}})
	// The app reads nothing, so the writer keeps at most what its socket
	// takes; a peer that sends 4 windows without credit broke the rules.
	chunk := make([]byte, ChunkBytes)
	for range 4 * Window / ChunkBytes {
		r.system.Root.Send(client, &messages.TunnelData{Data: chunk, Binary: true})
	}
	ce := readClose(t, app)
	require.Equal(t, messages.ClosePolicy, ce.Code)
	require.Equal(t, ReasonOverrun, ce.Text)
}

// TestTunnelMessageTooBig: a message over the bound closes both sides
// with 1009.
func TestTunnelMessageTooBig(t *testing.T) {
	r := newRig(t, func(c *Config) { c.MaxMessageBytes = 1000 })
	app, lane, _ := r.open()
	require.NoError(t, app.WriteMessage(websocket.TextMessage, make([]byte, 2000)))
	require.Equal(t, messages.CloseTooBig, readClose(t, app).Code)
	ce := readClose(t, lane)
	require.Equal(t, messages.CloseTooBig, ce.Code)
	require.Contains(t, ce.Text, "limits.cdp_max_message_bytes")
}

// TestTunnelEndsStopClosesWithGoingAway: a hub's shutdown closes its
// clients with 1001.
func TestTunnelEndsStopClosesWithGoingAway(t *testing.T) {
	r := newRig(t, nil)
	app, lane, _ := r.open()
	go r.ends.Stop(5 * time.Second)
	for _, ws := range []*websocket.Conn{app, lane} {
		ce := readClose(t, ws)
		require.Equal(t, messages.CloseGoingAway, ce.Code)
		require.Equal(t, ReasonShutdown, ce.Text)
	}
	_, err := r.ends.Spawn(r.clientConf)
	require.ErrorIs(t, err, ErrStopping)
}

func testOut() io.Writer {
	if testing.Verbose() {
		return os.Stderr
	}
	return io.Discard
}
