//go:build !unix

package loadgen

import (
	"net"
	"syscall"
)

// wrapStallConn returns c unchanged: without raw sockets, stalls are not
// counted on this platform.
func wrapStallConn(c net.Conn, _ *stallCounter) (net.Conn, error) { return c, nil }

// sendBufferControl is nil: the send buffer keeps the platform's default.
func sendBufferControl(int) func(network, address string, c syscall.RawConn) error { return nil }
