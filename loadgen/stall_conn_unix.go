//go:build unix

package loadgen

import (
	"errors"
	"fmt"
	"net"
	"syscall"
	"time"
)

// stallConn is a TCP connection whose writes notice when the kernel's send
// buffer is full. net.Conn.Write hides that (it parks until the socket is
// writable); writing through syscall.RawConn shows the EAGAIN, so a stall
// is counted only when the socket really blocked, never for scheduling
// noise.
type stallConn struct {
	*net.TCPConn
	raw     syscall.RawConn
	counter *stallCounter
}

// wrapStallConn wraps c when it is a TCP connection; otherwise it returns c.
func wrapStallConn(c net.Conn, counter *stallCounter) (net.Conn, error) {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c, nil
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("raw socket: %w", err)
	}
	return &stallConn{TCPConn: tc, raw: raw, counter: counter}, nil
}

// Write writes all of p, waiting for room (and the write deadline) when
// the socket is full.
func (c *stallConn) Write(p []byte) (int, error) {
	n := 0
	var werr error
	var blocked time.Time
	err := c.raw.Write(func(fd uintptr) bool {
		for n < len(p) {
			m, e := syscall.Write(int(fd), p[n:])
			if m > 0 {
				n += m
			}
			switch {
			case e == nil:
			case errors.Is(e, syscall.EINTR):
			case errors.Is(e, syscall.EAGAIN):
				if blocked.IsZero() {
					blocked = time.Now()
				}
				return false // wait until writable, then call again
			default:
				werr = e
				return true
			}
		}
		return true
	})
	if !blocked.IsZero() {
		c.counter.record(time.Since(blocked))
	}
	if err == nil {
		err = werr
	}
	if err != nil {
		return n, &net.OpError{Op: "write", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
	}
	return n, nil
}

// sendBufferControl returns a net.Dialer.Control that sets SO_SNDBUF to n
// bytes (the kernel doubles it and stops autotuning), or nil for n == 0.
func sendBufferControl(n int) func(network, address string, c syscall.RawConn) error {
	if n <= 0 {
		return nil
	}
	return func(_, _ string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_SNDBUF, n)
		}); err != nil {
			return err
		}
		if serr != nil {
			return fmt.Errorf("set SO_SNDBUF %d: %w", n, serr)
		}
		return nil
	}
}
