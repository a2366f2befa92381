package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/paprika-hub/paprika/persistence"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, leakOptions()...)
}

// leakOptions ignores what the in-process hub of the session tests leaves
// behind after Stop: protoactor's throttles and its local cluster
// provider's TTL reporter never end (see STYLE.md on protoactor's
// hygiene). Every goroutine of the client must be gone.
func leakOptions() []goleak.Option {
	return []goleak.Option{
		goleak.IgnoreTopFunction("github.com/asynkron/protoactor-go/cluster.(*Gossiper).StartGossiping.NewThrottle.func3.1"),
		goleak.IgnoreTopFunction("github.com/asynkron/protoactor-go/cluster/clusterproviders/test.(*Provider).startTTLReport.func1"),
		goleak.IgnoreTopFunction("github.com/asynkron/protoactor-go/actor.NewDeadLetter.NewThrottle.func4.1"),
	}
}

// setup starts a hub double serving h and a client for it with fast
// retries. Both are torn down with the test. Handlers check requests with
// assert, not require: FailNow must not run on a server goroutine.
func setup(t *testing.T, h http.HandlerFunc, opts ...Option) (*Client, *httptest.Server) {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c := newTestClient(t, []string{srv.URL}, opts...)
	return c, srv
}

// newTestClient gives each test its own transport, so no idle connection
// outlives the test (goleak).
func newTestClient(t *testing.T, urls []string, opts ...Option) *Client {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	base := []Option{WithHTTPClient(&http.Client{Transport: tr}), WithBackoff(time.Millisecond, 5*time.Millisecond), WithPollInterval(time.Millisecond, 5*time.Millisecond)}
	c, err := New(urls, append(base, opts...)...)
	require.NoError(t, err)
	return c
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]string{"code": code, "message": msg}})
}

func TestNewNormalisesURLs(t *testing.T) {
	t.Parallel()
	c, err := New([]string{"127.0.0.1:8080, http://hub2:9000/", "https://lb.example/paprika/"})
	require.NoError(t, err)
	require.Equal(t, []string{"http://127.0.0.1:8080", "http://hub2:9000", "https://lb.example/paprika"}, c.BaseURLs())

	_, err = New(nil)
	require.EqualError(t, err, "client: no hub URL given")
	_, err = New([]string{"ftp://x"})
	require.ErrorContains(t, err, `hub URL "ftp://x"`)
}

func TestAPIErrorDecoding(t *testing.T) {
	t.Parallel()
	c, _ := setup(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/jobs/missing":
			writeError(w, http.StatusNotFound, "not_found", "no job missing")
		case "/jobs/proxy":
			w.WriteHeader(http.StatusBadGateway)
			_, _ = io.WriteString(w, "<html>bad gateway</html>")
		default:
			http.Error(w, "teapot says no", http.StatusTeapot)
		}
	})
	ctx := t.Context()

	_, err := c.Get(ctx, "missing")
	require.EqualError(t, err, "GET /jobs/missing: 404 not_found: no job missing")
	apiErr, ok := AsAPIError(err)
	require.True(t, ok)
	require.Equal(t, &APIError{Status: 404, Code: "not_found", Message: "no job missing"}, apiErr)
	require.True(t, IsStatus(err, http.StatusNotFound))

	_, err = c.Get(ctx, "proxy")
	apiErr, ok = AsAPIError(err)
	require.True(t, ok)
	require.Equal(t, &APIError{Status: 502, Message: "bad gateway"}, apiErr)

	_, err = c.Get(ctx, "other")
	apiErr, ok = AsAPIError(err)
	require.True(t, ok)
	require.Equal(t, &APIError{Status: 418, Message: "teapot says no"}, apiErr)
}

func TestRetry503HonoursRetryAfter(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	c, _ := setup(t, func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.Header().Set("Retry-After", "1")
			writeError(w, http.StatusServiceUnavailable, "overloaded", "try later")
			return
		}
		writeJSON(w, http.StatusOK, Job{ID: "j1", Status: StatusQueued})
	})
	start := time.Now()
	job, err := c.Get(t.Context(), "j1")
	require.NoError(t, err)
	require.Equal(t, "j1", job.ID)
	require.Equal(t, int32(2), calls.Load())
	// The backoff is at most 5ms here, so only Retry-After explains a wait
	// of a second.
	require.GreaterOrEqual(t, time.Since(start), 900*time.Millisecond)
}

func TestRetry503IsBounded(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	c, _ := setup(t, func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Retry-After", "0")
		writeError(w, http.StatusServiceUnavailable, "not_ready", "stores unreachable")
	}, WithMaxAttempts(3))
	_, err := c.Workers(t.Context())
	require.EqualError(t, err, "GET /workers: gave up after 3 attempts: 503 not_ready: stores unreachable")
	require.True(t, IsStatus(err, http.StatusServiceUnavailable))
	require.Equal(t, int32(3), calls.Load())
}

func TestRetryAfterCapped(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	c, _ := setup(t, func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.Header().Set("Retry-After", "3600")
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"hubs": []Hub{{ID: "h1", Alive: true}}})
	}, WithMaxRetryAfter(10*time.Millisecond))
	hubs, err := c.Hubs(t.Context())
	require.NoError(t, err)
	require.Equal(t, []Hub{{ID: "h1", Alive: true}}, hubs)
}

func TestRetryAfterParse(t *testing.T) {
	t.Parallel()
	d, ok := retryAfter("7")
	require.True(t, ok)
	require.Equal(t, 7*time.Second, d)
	d, ok = retryAfter(time.Now().Add(time.Hour).UTC().Format(http.TimeFormat))
	require.True(t, ok)
	require.Greater(t, d, 59*time.Minute)
	_, ok = retryAfter("soon")
	require.False(t, ok)
	_, ok = retryAfter("")
	require.False(t, ok)
}

// deadURL is a base URL nothing listens on.
func deadURL(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.NotFoundHandler())
	u := srv.URL
	srv.Close()
	return u
}

func TestFailoverToNextURL(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	live := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if r.Method == http.MethodPost {
			writeJSON(w, http.StatusCreated, Job{ID: "j9", Status: StatusQueued})
			return
		}
		writeJSON(w, http.StatusOK, Job{ID: strings.TrimPrefix(r.URL.Path, "/jobs/"), Status: StatusRunning})
	}))
	t.Cleanup(live.Close)
	c := newTestClient(t, []string{deadURL(t), live.URL})

	job, err := c.Get(t.Context(), "j1")
	require.NoError(t, err)
	require.Equal(t, "j1", job.ID)
	// The client now sticks to the live hub.
	require.Equal(t, uint32(1), c.cur.Load())

	// A submit is safe to fail over because it always carries a key.
	c.cur.Store(0)
	job, err = c.Submit(t.Context(), SubmitRequest{Mode: ModeNoop}, "")
	require.NoError(t, err)
	require.Equal(t, "j9", job.ID)
	require.Equal(t, int32(2), calls.Load())
}

func TestAllHubsDown(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, []string{deadURL(t), deadURL(t)}, WithMaxAttempts(4))
	_, err := c.Hubs(t.Context())
	require.ErrorContains(t, err, "GET /hubs: gave up after 4 attempts: ")
	require.ErrorContains(t, err, "connection refused")
}

// TestNonIdempotentNotRetried: a request without a key that may have
// reached the hub is never sent twice.
func TestNonIdempotentNotRetried(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	c, _ := setup(t, func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		// Drop the connection after reading the request: the client cannot
		// know whether the hub acted on it.
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			_ = conn.Close()
		}
	})
	_, err := c.do(t.Context(), &request{method: http.MethodPost, path: "/jobs", body: []byte(`{"mode":"noop"}`)})
	require.ErrorContains(t, err, "not retried: the hub may have acted on it")
	require.Equal(t, int32(1), calls.Load())

	// 503 is not retried either without idempotence.
	c2, _ := setup(t, func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		writeError(w, http.StatusServiceUnavailable, "forward_timeout", "peer hub did not answer")
	})
	calls.Store(0)
	_, err = c2.do(t.Context(), &request{method: http.MethodPost, path: "/jobs", body: []byte(`{}`)})
	require.True(t, IsStatus(err, http.StatusServiceUnavailable))
	require.Equal(t, int32(1), calls.Load())
}

func TestSubmitSendsIdempotencyKey(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var keys []string
	var bodies []SubmitRequest
	var calls atomic.Int32
	c, _ := setup(t, func(w http.ResponseWriter, r *http.Request) {
		assert.Equal(t, "/jobs", r.URL.Path)
		assert.Equal(t, "application/json", r.Header.Get("Content-Type"))
		var req SubmitRequest
		assert.NoError(t, json.NewDecoder(r.Body).Decode(&req))
		mu.Lock()
		keys = append(keys, r.Header.Get("Idempotency-Key"))
		bodies = append(bodies, req)
		mu.Unlock()
		if calls.Add(1) == 1 {
			w.Header().Set("Retry-After", "0")
			writeError(w, http.StatusServiceUnavailable, "overloaded", "busy")
			return
		}
		writeJSON(w, http.StatusCreated, Job{ID: "j1", Mode: req.Mode, Status: StatusQueued})
	})
	req := SubmitRequest{Mode: ModeNoop, Params: map[string]any{"lines": 3}, TimeoutS: 30, Labels: map[string]string{"team": "qa"}}
	job, err := c.Submit(t.Context(), req, "")
	require.NoError(t, err)
	require.Equal(t, "j1", job.ID)

	_, err = c.Submit(t.Context(), req, "my-key")
	require.NoError(t, err)

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, keys, 3)
	require.True(t, strings.HasPrefix(keys[0], "pk-"), "generated key %q", keys[0])
	require.Equal(t, keys[0], keys[1], "the retry must carry the same key")
	require.Equal(t, "my-key", keys[2])
	require.Equal(t, float64(3), bodies[0].Params["lines"])
	require.Equal(t, 30, bodies[0].TimeoutS)
	require.Equal(t, map[string]string{"team": "qa"}, bodies[0].Labels)
	require.NotEqual(t, NewIdempotencyKey(), NewIdempotencyKey())
}

// The generated keys sort by the time they were made (the stores' key
// indexes take them on their right edge), and never repeat.
func TestIdempotencyKeysSortByTime(t *testing.T) {
	t.Parallel()
	var keys []string
	seen := map[string]bool{}
	for i := range 1000 {
		k := NewIdempotencyKey()
		require.Len(t, k, 3+persistence.JobIDLen)
		require.False(t, seen[k], "key %s twice", k)
		seen[k] = true
		keys = append(keys, k)
		if i%100 == 0 {
			time.Sleep(time.Millisecond)
		}
	}
	require.True(t, slices.IsSorted(keys), "keys out of time order: %v", keys[:5])
}

func TestBearerToken(t *testing.T) {
	t.Parallel()
	c, _ := setup(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer s3cret" {
			writeError(w, http.StatusUnauthorized, "unauthorized", "bad token")
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"workers": []any{}})
	}, WithToken("s3cret"))
	_, err := c.Workers(t.Context())
	require.NoError(t, err)
}

func TestListQuery(t *testing.T) {
	t.Parallel()
	c, _ := setup(t, func(w http.ResponseWriter, r *http.Request) {
		assert.Equal(t, "/jobs", r.URL.Path)
		assert.Equal(t, "failed", r.URL.Query().Get("status"))
		assert.Equal(t, "20", r.URL.Query().Get("limit"))
		assert.Equal(t, "c1", r.URL.Query().Get("cursor"))
		writeJSON(w, http.StatusOK, Page{Jobs: []Job{{ID: "j2"}, {ID: "j1"}}, NextCursor: "c2"})
	})
	page, err := c.List(t.Context(), ListOptions{Status: StatusFailed, Limit: 20, Cursor: "c1"})
	require.NoError(t, err)
	require.Equal(t, "c2", page.NextCursor)
	require.Len(t, page.Jobs, 2)
}

func TestPathEscaping(t *testing.T) {
	t.Parallel()
	c, _ := setup(t, func(w http.ResponseWriter, r *http.Request) {
		assert.Equal(t, "/jobs/a%2Fb/assets/shot%201.png", r.URL.EscapedPath())
		w.Header().Set("Content-Type", "image/png")
		_, _ = io.WriteString(w, "PNG")
	})
	body, ct, err := c.Asset(t.Context(), "a/b", "shot 1.png")
	require.NoError(t, err)
	defer body.Close()
	b, err := io.ReadAll(body)
	require.NoError(t, err)
	require.Equal(t, "PNG", string(b))
	require.Equal(t, "image/png", ct)
}

func TestWaitPollsUntilFinal(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	c, _ := setup(t, func(w http.ResponseWriter, r *http.Request) {
		st := StatusRunning
		if calls.Add(1) >= 3 {
			st = StatusSucceeded
		}
		writeJSON(w, http.StatusOK, Job{ID: "j1", Status: st, Result: json.RawMessage(`{"lines":3}`)})
	})
	job, err := c.Wait(t.Context(), "j1")
	require.NoError(t, err)
	require.Equal(t, StatusSucceeded, job.Status)
	require.JSONEq(t, `{"lines":3}`, string(job.Result))
	require.Equal(t, int32(3), calls.Load())

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err = c.Wait(ctx, "j1")
	require.ErrorIs(t, err, context.Canceled)
}

func TestCancel(t *testing.T) {
	t.Parallel()
	var canceled atomic.Bool
	var cancels atomic.Int32
	c, _ := setup(t, func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/jobs/done/cancel":
			writeError(w, http.StatusConflict, "job_final", "job done already succeeded")
		case r.Method == http.MethodPost:
			// The first attempt cancels but its answer is a 503; the retry
			// then finds the job final.
			if cancels.Add(1) == 1 {
				canceled.Store(true)
				w.Header().Set("Retry-After", "0")
				writeError(w, http.StatusServiceUnavailable, "forward_timeout", "peer slow")
				return
			}
			writeError(w, http.StatusConflict, "job_final", "job already canceled")
		default:
			st := StatusRunning
			if canceled.Load() {
				st = StatusCanceled
			}
			writeJSON(w, http.StatusOK, Job{ID: "j1", Status: st, Reason: ReasonCanceled})
		}
	})
	_, err := c.Cancel(t.Context(), "done")
	require.True(t, IsStatus(err, http.StatusConflict))

	job, err := c.Cancel(t.Context(), "j1")
	require.NoError(t, err)
	require.Equal(t, StatusCanceled, job.Status)
}

func TestWorkersAndStatus(t *testing.T) {
	t.Parallel()
	c, _ := setup(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodPatch:
			assert.Equal(t, "/workers/w50150", r.URL.Path)
			var body map[string]string
			assert.NoError(t, json.NewDecoder(r.Body).Decode(&body))
			writeJSON(w, http.StatusOK, Worker{ID: "w50150", Status: body["status"]})
		default:
			_, _ = io.WriteString(w, `{"workers":[
				{"id":"w1","hub":"h1","status":"active","alive":true,"in_flight":1,"max_concurrent":4,"lanes":4,"cpu_pct":12.5,"mem_pct":40,"disk_pct":71,"last_seen":"2026-01-02T03:04:05Z"},
				{"id":"w2","lanes":[{"url":"ws://a"},{"url":"ws://b"}]},
				{"id":"w3"}]}`)
		}
	})
	ws, err := c.Workers(t.Context())
	require.NoError(t, err)
	require.Len(t, ws, 3)
	require.Equal(t, 4, ws[0].LaneCount())
	require.Equal(t, 2, ws[1].LaneCount())
	require.Equal(t, 0, ws[2].LaneCount())
	require.Equal(t, 12.5, ws[0].CPUPct)
	require.Equal(t, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), ws[0].LastSeen)

	wk, err := c.SetWorkerStatus(t.Context(), "w50150", WorkerDrain)
	require.NoError(t, err)
	require.Equal(t, WorkerDrain, wk.Status)
}

func TestLogs(t *testing.T) {
	t.Parallel()
	c, _ := setup(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "one\ntwo\n")
	})
	text, err := c.Logs(t.Context(), "j1")
	require.NoError(t, err)
	require.Equal(t, "one\ntwo\n", text)
}

// sse writes one event-stream chunk and flushes it.
func sse(w http.ResponseWriter, format string, args ...any) {
	_, _ = fmt.Fprintf(w, format, args...)
	w.(http.Flusher).Flush()
}

func TestFollow(t *testing.T) {
	t.Parallel()
	c, _ := setup(t, func(w http.ResponseWriter, r *http.Request) {
		assert.Equal(t, "1", r.URL.Query().Get("follow"))
		assert.Equal(t, "text/event-stream", r.Header.Get("Accept"))
		w.Header().Set("Content-Type", "text/event-stream")
		sse(w, ": keep-alive\n\n")
		sse(w, "data: first line\n\n")
		sse(w, "data:second\r\n\r\n")
		sse(w, "data: \n\n") // an empty log line
		sse(w, "event: status\ndata: running\n\n")
		sse(w, "data: last\n\nevent: done\ndata: {}\n\n")
		sse(w, "data: after done is ignored\n\n")
	})
	var lines []string
	require.NoError(t, c.Follow(t.Context(), "j1", func(l string) { lines = append(lines, l) }))
	require.Equal(t, []string{"first line", "second", "", "last"}, lines)
}

// TestFollowResumes drops the stream twice — once with a clean end without
// "event: done", once by cutting the connection — and checks the client
// resumes from the count of lines it has, with no gap and no duplicate.
func TestFollowResumes(t *testing.T) {
	t.Parallel()
	all := []string{"l0", "l1", "l2", "l3", "l4", "l5", "l6"}
	var mu sync.Mutex
	var froms []string
	c, _ := setup(t, func(w http.ResponseWriter, r *http.Request) {
		from := r.URL.Query().Get("from")
		mu.Lock()
		froms = append(froms, from)
		n := len(froms)
		mu.Unlock()
		start, _ := strconv.Atoi(from)
		w.Header().Set("Content-Type", "text/event-stream")
		switch n {
		case 1: // three lines, then the stream just ends
			for _, l := range all[start:3] {
				sse(w, "data: %s\n\n", l)
			}
		case 2: // two lines, then the connection is cut mid-event
			for _, l := range all[start:5] {
				sse(w, "data: %s\n\n", l)
			}
			sse(w, "data: l5-partial")
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				_ = conn.Close()
			}
		default:
			for _, l := range all[start:] {
				sse(w, "data: %s\n\n", l)
			}
			sse(w, "event: done\n\n")
		}
	})
	var lines []string
	require.NoError(t, c.Follow(t.Context(), "j1", func(l string) { lines = append(lines, l) }))
	require.Equal(t, all, lines)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []string{"", "3", "5"}, froms)
}

func TestFollowGivesUpWithoutProgress(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	c, _ := setup(t, func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Content-Type", "text/event-stream")
		sse(w, ": nothing\n\n")
	}, WithMaxAttempts(3))
	err := c.Follow(t.Context(), "j1", func(string) {})
	require.ErrorContains(t, err, "follow job j1: stream dropped 3 times without a new line")
	require.Equal(t, int32(3), calls.Load())
}

func TestFollowErrorEventAndAPIError(t *testing.T) {
	t.Parallel()
	c, _ := setup(t, func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "missing") {
			writeError(w, http.StatusNotFound, "not_found", "no job missing")
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		sse(w, "data: a\n\nevent: error\ndata: {\"error\":{\"code\":\"log_gone\",\"message\":\"log expired\"}}\n\n")
	})
	err := c.Follow(t.Context(), "missing", func(string) {})
	require.True(t, IsStatus(err, http.StatusNotFound))

	var lines []string
	err = c.Follow(t.Context(), "j1", func(l string) { lines = append(lines, l) })
	apiErr, ok := AsAPIError(err)
	require.True(t, ok, "%v", err)
	require.Equal(t, "log_gone", apiErr.Code)
	require.Equal(t, []string{"a"}, lines)
}

func TestFollowPlainTextFallback(t *testing.T) {
	t.Parallel()
	c, _ := setup(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, "x\ny\nz")
	})
	var lines []string
	require.NoError(t, c.Follow(t.Context(), "j1", func(l string) { lines = append(lines, l) }))
	require.Equal(t, []string{"x", "y", "z"}, lines)
}

func TestFollowStopsWithContext(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	c, _ := setup(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		sse(w, "data: started\n\n")
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer close(release)
	ctx, cancel := context.WithCancel(t.Context())
	err := c.Follow(ctx, "j1", func(string) { cancel() })
	require.ErrorIs(t, err, context.Canceled)
}
