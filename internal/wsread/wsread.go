// Package wsread reads WebSocket messages into a buffer the reader keeps
// from one message to the next. gorilla's Conn.ReadMessage reads each
// message into a fresh slice grown from 512 bytes (io.ReadAll); a link
// reader that decodes every message at once has no use for it after the
// decode, and a busy one read a few slices per job.
package wsread

import (
	"bytes"
	"errors"
	"io"

	"github.com/gorilla/websocket"
)

// Keep is the largest buffer kept between messages: one grown past it by
// a big message is let go after it.
const Keep = 64 << 10

// ErrTooLarge: a message longer than Message's limit.
var ErrTooLarge = errors.New("message too large")

// Message reads ws's next message into buf, at most limit bytes of it: a
// longer one is ErrTooLarge after limit+1 bytes, its rest left unread (the
// next call skips it). The bytes returned are buf's, valid until the next
// call.
func Message(ws *websocket.Conn, buf *bytes.Buffer, limit int) (typ int, data []byte, err error) {
	typ, r, err := ws.NextReader()
	if err != nil {
		return 0, nil, err
	}
	if buf.Cap() > Keep {
		*buf = bytes.Buffer{}
	}
	buf.Reset()
	if _, err := buf.ReadFrom(io.LimitReader(r, int64(limit)+1)); err != nil {
		return 0, nil, err
	}
	data = buf.Bytes()
	if len(data) > limit {
		return 0, nil, ErrTooLarge
	}
	return typ, data, nil
}
