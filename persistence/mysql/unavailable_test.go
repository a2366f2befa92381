package mysql_test

import (
	"io"
	"net"
	"sync"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/persistence"
	"github.com/paprika-hub/paprika/persistence/mysql"
)

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// TestOpenUnavailable: a server that refuses connections makes Open fail
// at once with ErrUnavailable, naming the address and the cause.
func TestOpenUnavailable(t *testing.T) {
	t.Parallel()
	addr := closedPort(t)
	began := time.Now()
	_, err := mysql.Open(t.Context(), "paprika@tcp("+addr+")/paprika")
	require.ErrorIs(t, err, persistence.ErrUnavailable)
	require.ErrorContains(t, err, addr+"/paprika")
	require.ErrorContains(t, err, "connection refused")
	require.Less(t, time.Since(began), 5*time.Second)
	t.Logf("Open error: %v", err)
}

func TestOpenBadDSN(t *testing.T) {
	t.Parallel()
	_, err := mysql.Open(t.Context(), "not a dsn")
	require.Error(t, err)
	require.NotErrorIs(t, err, persistence.ErrUnavailable)
	_, err = mysql.Open(t.Context(), "root@tcp(127.0.0.1:3306)/")
	require.ErrorContains(t, err, "names no database")
}

// TestCallsUnavailable: a store whose server goes away answers every call
// with ErrUnavailable (the API's 503), and recovers by itself when the
// server is back, without reopening.
func TestCallsUnavailable(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := newTestDB(t)
	cfg, err := gomysql.ParseDSN(db.dsn)
	require.NoError(t, err)
	p := startProxy(t, "127.0.0.1:0", cfg.Addr)
	cfg.Addr = p.addr

	s, err := mysql.Open(ctx, cfg.FormatDSN())
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	j, _, err := s.Create(ctx, persistence.Job{Mode: "noop"})
	require.NoError(t, err)

	p.Close() // the server is gone: pooled connections break, new ones are refused

	_, err = s.Get(ctx, j.ID)
	require.ErrorIs(t, err, persistence.ErrUnavailable)
	t.Logf("Get error: %v", err)
	_, err = s.Claim(ctx, j.ID, "w1", time.Now())
	require.ErrorIs(t, err, persistence.ErrUnavailable)
	_, _, err = s.Create(ctx, persistence.Job{Mode: "noop"})
	require.ErrorIs(t, err, persistence.ErrUnavailable)
	_, _, err = s.List(ctx, persistence.ListQuery{})
	require.ErrorIs(t, err, persistence.ErrUnavailable)
	_, err = s.Finish(ctx, j.ID, persistence.AnyAttempt, persistence.Finish{Status: persistence.StatusCanceled})
	require.ErrorIs(t, err, persistence.ErrUnavailable)
	require.ErrorIs(t, s.Ping(ctx), persistence.ErrUnavailable)

	startProxy(t, p.addr, p.upstream) // the server is back on the same address
	got, err := s.Claim(ctx, j.ID, "w1", time.Now())
	require.NoError(t, err, "nothing was half-written while the server was away")
	require.Equal(t, persistence.StatusRunning, got.Status)
	require.Equal(t, 1, got.Attempts)
}

// proxy forwards TCP connections to upstream until closed; closing it cuts
// every forwarded connection, as a server crash would.
type proxy struct {
	addr, upstream string
	ln             net.Listener
	wg             sync.WaitGroup

	mu     sync.Mutex
	closed bool
	conns  map[net.Conn]struct{}
}

func startProxy(t *testing.T, addr, upstream string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	require.NoError(t, err)
	p := &proxy{addr: ln.Addr().String(), upstream: upstream, ln: ln, conns: make(map[net.Conn]struct{})}
	p.wg.Go(p.serve)
	t.Cleanup(p.Close)
	return p
}

func (p *proxy) serve() {
	for {
		down, err := p.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", p.upstream)
		if err != nil {
			_ = down.Close()
			continue
		}
		if !p.track(down, up) {
			return
		}
		pipe := func(dst, src net.Conn) {
			_, _ = io.Copy(dst, src)
			_ = dst.Close()
			_ = src.Close()
		}
		p.wg.Go(func() { pipe(up, down) })
		p.wg.Go(func() { pipe(down, up) })
	}
}

// track registers conns for Close; false (and closes them) when the proxy
// is already closed.
func (p *proxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		for _, c := range conns {
			_ = c.Close()
		}
		return false
	}
	for _, c := range conns {
		p.conns[c] = struct{}{}
	}
	return true
}

// Close stops listening, cuts every connection and waits for the copiers.
// It is safe to call twice.
func (p *proxy) Close() {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	_ = p.ln.Close() // a second Close reports net.ErrClosed
	p.wg.Wait()
}
