//go:build !race

// Remoting in this process: without -race (see remoting_test.go).

package membership

import (
	"encoding/binary"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// h2Frames counts the HTTP/2 frames flowing one way through a proxied
// connection; pings counts those of type PING that are not an ACK.
type h2Frames struct {
	frames, pings atomic.Int64
}

// copyCounting copies src to dst, counting the frames it carries after the
// first skip bytes (the client preface).
func (c *h2Frames) copyCounting(dst io.Writer, src io.Reader, skip int) {
	if skip > 0 {
		if _, err := io.CopyN(dst, src, int64(skip)); err != nil {
			return
		}
	}
	head := make([]byte, 9)
	for {
		if _, err := io.ReadFull(src, head); err != nil {
			return
		}
		n := int(head[0])<<16 | int(binary.BigEndian.Uint16(head[1:3]))
		c.frames.Add(1)
		if head[3] == 0x6 && head[4]&0x1 == 0 { // PING, not an ACK
			c.pings.Add(1)
		}
		if _, err := dst.Write(head); err != nil {
			return
		}
		if _, err := io.CopyN(dst, src, int64(n)); err != nil {
			return
		}
	}
}

// TestRemotingSendsNoPingPerMessage: messages to another member, one at a
// time as a paced load sends them, cost their own data frames and no
// HTTP/2 PING each. gRPC's default dynamic window sends a bandwidth probe
// (a PING, and its ACK back) whenever data arrives and no probe is out,
// so on a fast link nearly every message paid two more frames and
// syscalls on both members. remoteConfig sets fixed windows, which turns
// the probe off.
func TestRemotingSendsNoPingPerMessage(t *testing.T) {
	// Not parallel: it starts remoting (see remoting_test.go).
	member := startRemote(t, nil, nil)
	got := make(chan struct{}, 64)
	_, err := member.Root.SpawnNamed(actor.PropsFromFunc(func(c actor.Context) {
		if _, ok := c.Message().(*wrapperspb.StringValue); ok {
			got <- struct{}{}
		}
	}), "target")
	require.NoError(t, err)

	// A proxy in front of the member that counts the frames each way.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	var toMember, fromMember h2Frames
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", member.Address())
			if err != nil {
				_ = in.Close()
				return
			}
			t.Cleanup(func() { _ = in.Close(); _ = out.Close() })
			go toMember.copyCounting(out, in, len("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"))
			go fromMember.copyCounting(in, out, 0)
		}
	}()

	sender := startRemote(t, nil, nil)
	target := actor.NewPID(ln.Addr().String(), "target")
	const messages = 40
	for i := 0; i < messages; i++ {
		sender.Root.Send(target, wrapperspb.String("m"))
		select {
		case <-got:
		case <-time.After(10 * time.Second):
			t.Fatalf("message %d did not arrive", i)
		}
		time.Sleep(2 * time.Millisecond) // the probe before it has long come back
	}
	pings := toMember.pings.Load() + fromMember.pings.Load()
	t.Logf("%d messages: %d frames to the member, %d back, %d pings", messages, toMember.frames.Load(), fromMember.frames.Load(), pings)
	require.GreaterOrEqual(t, toMember.frames.Load(), int64(messages), "the proxy saw the data frames")
	require.Less(t, pings, int64(messages/4), "a PING per message: the link runs gRPC's dynamic window")
}
