package cork

import (
	"bytes"
	"crypto/tls"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/require"
)

// countConn records each write it is given and passes it on to Conn,
// when there is one.
type countConn struct {
	net.Conn
	mu     sync.Mutex
	writes [][]byte
}

func (c *countConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	c.writes = append(c.writes, bytes.Clone(p))
	c.mu.Unlock()
	if c.Conn == nil {
		return len(p), nil
	}
	return c.Conn.Write(p)
}

func (c *countConn) got() [][]byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.writes
}

func TestCorkGathersWrites(t *testing.T) {
	under := &countConn{}
	c := Wrap(under)

	_, err := c.Write([]byte("a"))
	require.NoError(t, err)
	require.Equal(t, [][]byte{[]byte("a")}, under.got(), "uncorked: straight through")

	c.Cork()
	for _, s := range []string{"b", "cc", "ddd"} {
		n, err := c.Write([]byte(s))
		require.NoError(t, err)
		require.Equal(t, len(s), n)
	}
	require.Len(t, under.got(), 1, "nothing written while corked")
	require.NoError(t, c.Flush())
	require.Equal(t, [][]byte{[]byte("a"), []byte("bccddd")}, under.got(), "one write, in order")
	require.NoError(t, c.Flush(), "an empty flush writes nothing")
	require.Len(t, under.got(), 2)

	// A burst past maxHeld is written as it fills, never held whole.
	c.Cork()
	big := bytes.Repeat([]byte("x"), maxHeld/2+1)
	for range 3 {
		_, err := c.Write(big)
		require.NoError(t, err)
	}
	require.NoError(t, c.Flush())
	var total int
	for _, w := range under.got()[2:] {
		require.LessOrEqual(t, len(w), maxHeld)
		total += len(w)
	}
	require.Equal(t, 3*len(big), total)
	huge := bytes.Repeat([]byte("y"), maxHeld+1)
	c.Cork()
	_, err = c.Write(huge)
	require.NoError(t, err)
	require.Equal(t, huge, under.got()[len(under.got())-1], "a write larger than the cork goes alone")
	require.NoError(t, c.Flush())
	require.Nil(t, c.held, "a large buffer is not kept")
}

func TestOfFindsTheConnBeneathTLS(t *testing.T) {
	c := Wrap(&countConn{})
	require.Same(t, c, Of(c))
	require.Same(t, c, Of(tls.Client(c, &tls.Config{})))
	require.Nil(t, Of(&countConn{}))
}

// TestCorkedWebSocketFrames: frames written by gorilla/websocket on both
// ends through Conn — the server's socket made by Hijackable — arrive
// whole and in order, those written under a cork in one write.
func TestCorkedWebSocketFrames(t *testing.T) {
	got := make(chan string, 16)
	up := websocket.Upgrader{}
	var server *websocket.Conn
	ready := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := up.Upgrade(Hijackable(w), r, nil)
		if err != nil {
			t.Error(err)
			return
		}
		server = ws
		close(ready)
		for {
			_, b, err := ws.ReadMessage()
			if err != nil {
				return
			}
			got <- string(b)
		}
	}))
	defer srv.Close()

	var counted *countConn
	d := websocket.Dialer{NetDial: func(network, addr string) (net.Conn, error) {
		c, err := net.Dial(network, addr)
		if err != nil {
			return nil, err
		}
		counted = &countConn{Conn: c}
		return Wrap(counted), nil
	}}
	ws, _, err := d.Dial("ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	require.NoError(t, err)
	defer ws.Close()
	<-ready
	require.NotNil(t, Of(server.NetConn()), "the upgrader's socket is a Conn")

	ck := Of(ws.NetConn())
	require.NotNil(t, ck)
	before := len(counted.got())
	ck.Cork()
	for _, s := range []string{"one", "two", "three"} {
		require.NoError(t, ws.WriteMessage(websocket.TextMessage, []byte(s)))
	}
	require.NoError(t, ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(time.Second)), "a control frame joins the cork")
	require.Equal(t, before, len(counted.got()))
	require.NoError(t, ck.Flush())
	require.Equal(t, before+1, len(counted.got()), "four frames, one write")
	for _, want := range []string{"one", "two", "three"} {
		select {
		case s := <-got:
			require.Equal(t, want, s)
		case <-time.After(5 * time.Second):
			t.Fatal("frame not received")
		}
	}
}

func TestGather(t *testing.T) {
	under := &countConn{}
	c := Wrap(under)
	require.NoError(t, Gather(c, func() error {
		for _, s := range []string{"a", "b", "c"} {
			if _, err := c.Write([]byte(s)); err != nil {
				return err
			}
		}
		return nil
	}))
	require.Equal(t, [][]byte{[]byte("abc")}, under.got(), "three writes, one beneath")

	plain := &countConn{}
	require.NoError(t, Gather(plain, func() error { _, err := plain.Write([]byte("x")); return err }))
	require.Len(t, plain.got(), 1, "no Conn beneath: the writes just run")
}
