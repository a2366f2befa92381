package api

import (
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// Timeouts of the HTTP server that do not depend on the route. The hub's
// http.Server takes IdleTimeout; the per-route deadlines are set by the API
// itself through http.ResponseController, because a server-wide
// ReadTimeout or WriteTimeout would also cut the worker links (hijacked,
// long-lived), asset uploads of hundreds of MiB and log follows.
const (
	// IdleTimeout closes a keep-alive connection that sends no request for
	// this long.
	IdleTimeout = 120 * time.Second
	// defaultBodyReadTimeout bounds reading a JSON request body (at most
	// 1 MiB): a client that sends its headers and then trickles the body,
	// or nothing, holds a connection and a goroutine no longer than this.
	defaultBodyReadTimeout = 30 * time.Second
	// defaultFollowWriteTimeout bounds writing one event of a log follow:
	// a client that stops reading is dropped instead of holding the
	// subscription and its buffers for as long as the job runs.
	defaultFollowWriteTimeout = 10 * time.Second
)

// boundBodyRead sets a read deadline for the request body of next and
// lifts it once the body is read: the server's background read (which
// notices a client going away) starts right after, and a deadline firing
// under it would cancel a long request that is merely being worked on.
// Body-less requests are left alone; ReadHeaderTimeout covered them.
func (s *Server) boundBodyRead(next http.Handler) http.Handler {
	timeout := s.opts.BodyReadTimeout
	if timeout <= 0 {
		timeout = defaultBodyReadTimeout
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Body != http.NoBody && r.ContentLength != 0 {
			rc := http.NewResponseController(w)
			if rc.SetReadDeadline(time.Now().Add(timeout)) == nil {
				r.Body = &deadlineBody{ReadCloser: r.Body, rc: rc}
			}
		}
		next.ServeHTTP(w, r)
	})
}

// deadlineBody lifts the connection's read deadline at the body's end.
type deadlineBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	once sync.Once
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		// Only a whole body lifts it: after a timeout the deadline must
		// stay, or net/http's drain of the unread rest would wait forever.
		b.lift()
	}
	return n, err
}

func (b *deadlineBody) lift() { b.once.Do(func() { _ = b.rc.SetReadDeadline(time.Time{}) }) }

// LimitConnsPerIP wraps ln so that one remote IP holds at most max open
// connections; a connection beyond that is closed as soon as it is
// accepted (the client sees a reset or EOF, before any request is read, so
// it costs the hub no goroutine of net/http). Loopback counts like any
// other address: the default (limits.max_conns_per_ip) is high enough for
// a local fleet. max <= 0 returns ln unchanged.
func LimitConnsPerIP(ln net.Listener, max int) net.Listener {
	if max <= 0 {
		return ln
	}
	return &ipLimitListener{Listener: ln, max: max, open: map[string]int{}}
}

type ipLimitListener struct {
	net.Listener
	max  int
	mu   sync.Mutex
	open map[string]int
}

// Accept hands out the next connection within its IP's bound; refused
// ones are closed here and never reach the server.
func (l *ipLimitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		ip := remoteIP(c.RemoteAddr())
		l.mu.Lock()
		if l.open[ip] >= l.max {
			l.mu.Unlock()
			_ = c.Close()
			continue
		}
		l.open[ip]++
		l.mu.Unlock()
		return &countedConn{Conn: c, release: func() { l.release(ip) }}, nil
	}
}

func (l *ipLimitListener) release(ip string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[ip]--; l.open[ip] <= 0 {
		delete(l.open, ip) // the map holds only addresses with connections
	}
}

func remoteIP(a net.Addr) string {
	if ta, ok := a.(*net.TCPAddr); ok {
		return ta.IP.String()
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return host
}

// countedConn gives its IP's slot back once, on the first Close (net/http
// and hijackers may both close it).
type countedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *countedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// errWriteStalled marks a follow dropped for a client that stopped reading.
var errWriteStalled = errors.New("log follower stopped reading")
