package wsread

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gorilla/websocket"
)

// pair is a client connection whose server end writes msgs, in order.
func pair(t testing.TB, msgs ...[]byte) *websocket.Conn {
	t.Helper()
	up := websocket.Upgrader{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		for _, m := range msgs {
			if err := c.WriteMessage(websocket.TextMessage, m); err != nil {
				return
			}
		}
		_, _, _ = c.ReadMessage() // until the client goes
	}))
	t.Cleanup(srv.Close)
	c, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestMessageReusesItsBufferAndBoundsTheSize(t *testing.T) {
	big := bytes.Repeat([]byte("b"), 2*Keep)
	c := pair(t, []byte("one"), []byte("two!"), bytes.Repeat([]byte("x"), 101), []byte("after"), big, []byte("small"))
	var buf bytes.Buffer
	read := func(limit int) ([]byte, error) {
		t.Helper()
		typ, data, err := Message(c, &buf, limit)
		if err == nil && typ != websocket.TextMessage {
			t.Fatalf("type %d", typ)
		}
		return data, err
	}
	d1, err := read(100)
	if err != nil || string(d1) != "one" {
		t.Fatalf("first: %q %v", d1, err)
	}
	d2, err := read(100)
	if err != nil || string(d2) != "two!" {
		t.Fatalf("second: %q %v", d2, err)
	}
	if &d1[0] != &d2[0] {
		t.Fatal("the second message was not read into the first one's buffer")
	}
	if _, err := read(100); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("101 bytes with a limit of 100: %v, want ErrTooLarge", err)
	}
	if d, err := read(100); err != nil || string(d) != "after" {
		t.Fatalf("the message after a refused one: %q %v", d, err)
	}
	if d, err := read(4 * Keep); err != nil || len(d) != len(big) {
		t.Fatalf("big: %d bytes, %v", len(d), err)
	}
	if d, err := read(100); err != nil || string(d) != "small" {
		t.Fatalf("after big: %q %v", d, err)
	}
	if buf.Cap() > Keep {
		t.Fatalf("a buffer of %d bytes kept after a big message, want at most %d", buf.Cap(), Keep)
	}
}

func BenchmarkMessage(b *testing.B) {
	frame := []byte(`{"type":"assign_job","job_id":"01JBZ5Q4ZQ8W4N7S2X3Y4Z5A6B","attempt":1,"mode":"noop","params":{"lines":0},"deadline_unix_ms":1767225600000}`)
	b.Run("wsread", func(b *testing.B) {
		msgs := make([][]byte, b.N)
		for i := range msgs {
			msgs[i] = frame
		}
		c := pair(b, msgs...)
		var buf bytes.Buffer
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			if _, _, err := Message(c, &buf, 1<<20); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ReadMessage", func(b *testing.B) {
		msgs := make([][]byte, b.N)
		for i := range msgs {
			msgs[i] = frame
		}
		c := pair(b, msgs...)
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			if _, _, err := c.ReadMessage(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
