// Package cork holds a net.Conn that can gather writes: between Cork and
// Flush what is written to it is kept and goes out in one write. A link's
// writer that finds several WebSocket frames queued writes them all in one
// system call (one TLS record under TLS) instead of one each, and the peer
// reads them in one too. Outside a cork, writes go straight through.
package cork

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"sync"
)

// maxHeld bounds what a cork keeps: past it the held bytes are written
// and gathering goes on, so a burst of large frames costs memory of this
// size, not of the burst.
const maxHeld = 64 << 10

// keepCap is the largest buffer a connection keeps between bursts: an
// idle link of a large fleet holds at most this much.
const keepCap = 8 << 10

// Conn is a net.Conn whose writes Cork holds until Flush. Its methods are
// safe for concurrent use; a write from another goroutine during a cork
// (a WebSocket control frame) joins the held bytes, in order.
type Conn struct {
	net.Conn
	mu     sync.Mutex
	corked bool
	held   []byte
}

// Wrap returns c as a Conn.
func Wrap(c net.Conn) *Conn { return &Conn{Conn: c} }

// Write writes p, or keeps it while corked.
func (c *Conn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.corked {
		return c.Conn.Write(p)
	}
	if len(c.held)+len(p) > maxHeld {
		if err := c.flushLocked(); err != nil {
			return 0, err
		}
		if len(p) > maxHeld {
			return c.Conn.Write(p)
		}
	}
	c.held = append(c.held, p...)
	return len(p), nil
}

// Cork starts keeping writes.
func (c *Conn) Cork() {
	c.mu.Lock()
	c.corked = true
	c.mu.Unlock()
}

// Flush writes what the cork kept, in one write, and ends the cork. An
// error is the write's: the bytes kept are then lost with the connection,
// as unsent bytes of a failed write always are.
func (c *Conn) Flush() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.corked = false
	return c.flushLocked()
}

func (c *Conn) flushLocked() error {
	if len(c.held) == 0 {
		return nil
	}
	_, err := c.Conn.Write(c.held)
	c.held = c.held[:0]
	if cap(c.held) > keepCap {
		c.held = nil
	}
	return err
}

// Of finds the Conn under c — c itself, or beneath TLS (tls.Conn.NetConn)
// — or nil when there is none.
func Of(c net.Conn) *Conn {
	for range 3 {
		switch v := c.(type) {
		case *Conn:
			return v
		case interface{ NetConn() net.Conn }:
			c = v.NetConn()
		default:
			return nil
		}
	}
	return nil
}

// Gather runs writes with the writes to c's Conn (Of) held, then writes
// them out in one write; without a Conn beneath c it just runs writes.
// The first error wins, a failed final write included.
func Gather(c net.Conn, writes func() error) error {
	ck := Of(c)
	if ck == nil {
		return writes()
	}
	ck.Cork()
	err := writes()
	if ferr := ck.Flush(); err == nil && ferr != nil {
		err = fmt.Errorf("write gathered frames: %w", ferr)
	}
	return err
}

// Hijackable returns w with its Hijack giving the connection as a Conn,
// for a WebSocket upgrader (gorilla's Upgrade hijacks through
// http.NewResponseController, which finds this Hijack first).
func Hijackable(w http.ResponseWriter) http.ResponseWriter { return hijacker{w} }

type hijacker struct{ http.ResponseWriter }

func (h hijacker) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, brw, err := http.NewResponseController(h.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	return Wrap(c), brw, nil
}

// Unwrap lets http.NewResponseController reach the writer beneath.
func (h hijacker) Unwrap() http.ResponseWriter { return h.ResponseWriter }
