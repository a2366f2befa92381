package api

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/persistence"
	"github.com/paprika-hub/paprika/persistence/memory"
)

// limitsBackend answers what the limits tests reach: a job, its log, and
// a submission that takes a while (to show a lifted body deadline).
type limitsBackend struct {
	Backend
	logs   *memory.LogStore
	submit time.Duration
}

func (b limitsBackend) MetricsHandler() http.Handler { return http.NotFoundHandler() }
func (b limitsBackend) Logs() persistence.LogStore   { return b.logs }
func (b limitsBackend) Job(_ context.Context, id string) (persistence.Job, error) {
	return persistence.Job{ID: id, Status: persistence.StatusRunning}, nil
}
func (b limitsBackend) Submit(ctx context.Context, j persistence.Job) (persistence.Job, bool, error) {
	select {
	case <-time.After(b.submit):
	case <-ctx.Done():
		return j, false, ctx.Err() // the test fails on this answer
	}
	j.ID = "j1"
	return j, true, nil
}

// rawRequest opens a connection and writes req to it unread.
func rawRequest(t *testing.T, addr, req string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	_, err = io.WriteString(c, req)
	require.NoError(t, err)
	return c
}

// TestSecurityFollowDropsStalledReader: a log follower that stops reading
// is dropped after the write deadline of one event (the connection ends
// though the job's log is not done), while a follower that reads gets
// every line and the done event.
func TestSecurityFollowDropsStalledReader(t *testing.T) {
	logs := memory.NewLogStore()
	const n = 200000 // ~20 MB: more than the loopback socket buffers hold
	lines := make([]string, n)
	for i := range lines {
		lines[i] = fmt.Sprintf("%06d %s", i, strings.Repeat("x", 92))
	}
	require.NoError(t, logs.Write(context.Background(), []persistence.LogBatch{{JobID: "j1", Lines: lines}}))
	srv := httptest.NewUnstartedServer(New(limitsBackend{logs: logs}, Options{FollowWriteTimeout: 300 * time.Millisecond}))
	// The server's own view of the connection says when it gave up on the
	// reader; a fixed wait would race a loaded machine (a reader that starts
	// reading before the server filled the buffers unstalls it).
	var closed atomic.Int32
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateClosed || st == http.StateHijacked {
			closed.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	addr := strings.TrimPrefix(srv.URL, "http://")

	stalled := rawRequest(t, addr, "GET /jobs/j1/logs?follow=1 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
	require.Eventually(t, func() bool { return closed.Load() > 0 }, 30*time.Second, 20*time.Millisecond,
		"the hub ended the stalled follow, it did not wait for the reader or the job")
	require.NoError(t, stalled.SetReadDeadline(time.Now().Add(20*time.Second)))
	got, err := io.ReadAll(stalled)
	require.NoError(t, err, "the hub ended the stalled follow (EOF), it did not wait for the job")
	require.Less(t, len(got), n*100, "not every line was sent")
	require.NotContains(t, string(got), "event: done")

	// An honest follower of the same log reads it all, then the end.
	res, err := http.Get(srv.URL + "/jobs/j1/logs?follow=1")
	require.NoError(t, err)
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	seen := 0
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "id: ") {
			seen++
			if seen == n {
				require.NoError(t, logs.Write(context.Background(), []persistence.LogBatch{{JobID: "j1", From: n, Done: true}}))
			}
		}
		if sc.Text() == "event: done" {
			break
		}
	}
	require.Equal(t, n, seen)
	require.Equal(t, "event: done", sc.Text())
}

// TestSecurityBodyReadTimeout: a client that sends a JSON request's
// headers and then stalls its body is answered and dropped after the body
// deadline; an honest request whose handling outlasts that deadline is not
// cut by it.
func TestSecurityBodyReadTimeout(t *testing.T) {
	b := limitsBackend{logs: memory.NewLogStore(), submit: 800 * time.Millisecond}
	srv := httptest.NewServer(New(b, Options{BodyReadTimeout: 300 * time.Millisecond}))
	t.Cleanup(srv.Close)
	addr := strings.TrimPrefix(srv.URL, "http://")

	start := time.Now()
	slow := rawRequest(t, addr, "POST /jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"mode\":")
	require.NoError(t, slow.SetReadDeadline(time.Now().Add(10*time.Second)))
	got, _ := io.ReadAll(slow)
	require.Less(t, time.Since(start), 5*time.Second, "dropped at the body deadline")
	if len(got) > 0 { // net/http may answer before it closes
		require.Contains(t, string(got), "400 Bad Request")
	}

	res, err := http.Post(srv.URL+"/jobs", "application/json", strings.NewReader(`{"mode":"noop"}`))
	require.NoError(t, err)
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	require.Equal(t, http.StatusCreated, res.StatusCode, string(body))
}
