package chromium

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/paprika-hub/paprika/agent"
	"github.com/paprika-hub/paprika/internal/syncbuf"
)

func TestMain(m *testing.M) {
	if _, err := LookPath(""); err != nil {
		// Real Chromium or nothing: these tests never mock the browser.
		// Under CI (where scripts/services.sh installs it) that is a failure.
		if os.Getenv("CI") == "true" {
			fmt.Fprintln(os.Stderr, "agent/chromium tests need Chromium under CI=true (run scripts/services.sh):", err)
			os.Exit(1)
		}
		fmt.Fprintln(os.Stderr, "skipping agent/chromium tests:", err)
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// waitTimeout bounds the tests' waits; generous for 2 cores under -race,
// and above the driver's DefaultStartTimeout: a lane's Chromium that starts
// slowly on a loaded machine fails with the driver's own error, not with
// the test's wait.
const waitTimeout = 45 * time.Second

// site is the test's own web site on 127.0.0.1.
type site struct {
	*httptest.Server
	hangEnded chan string // the path of each /hang request whose connection ended
}

// newSite serves the pages the tests drive:
//
//	/static             a title and a heading
//	/set-cookie         sets a cookie and a localStorage item
//	/show-cookie        shows the Cookie header and the localStorage item
//	/form, /greet       a form (GET) and its answer
//	/hang               sends half a page, then never finishes
//	/slow?ms=N          a page that takes N ms
//	/popup              opens popups (a target=_blank link, window.open)
//	anything else       404
func newSite(t testing.TB) *site {
	s := &site{hangEnded: make(chan string, 16)}
	mux := http.NewServeMux()
	page := func(w http.ResponseWriter, title, body string) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, "<!DOCTYPE html><html><head><title>%s</title></head><body>%s</body></html>", html.EscapeString(title), body)
	}
	mux.HandleFunc("GET /static", func(w http.ResponseWriter, r *http.Request) {
		page(w, "Static page", `<h1 id="h">Hello paprika</h1><p style="background:#c00;height:200px">red</p>`)
	})
	mux.HandleFunc("GET /set-cookie", func(w http.ResponseWriter, r *http.Request) {
		http.SetCookie(w, &http.Cookie{Name: "sid", Value: "s3cret", Path: "/", MaxAge: 3600})
		page(w, "cookie set", `<script>localStorage.setItem("secret", "ls3cret")</script><p id="done">set</p>`)
	})
	mux.HandleFunc("GET /show-cookie", func(w http.ResponseWriter, r *http.Request) {
		page(w, "cookie shown", fmt.Sprintf(`<p id="c">cookie=[%s]</p><p id="ls"></p>
<script>document.getElementById("ls").textContent = "ls=[" + (localStorage.getItem("secret") || "") + "]"</script>`,
			html.EscapeString(r.Header.Get("Cookie"))))
	})
	mux.HandleFunc("GET /form", func(w http.ResponseWriter, r *http.Request) {
		page(w, "Form", `<form action="/greet" method="get"><input id="name" name="name"><button id="submit" type="submit">Send</button></form>`)
	})
	mux.HandleFunc("GET /greet", func(w http.ResponseWriter, r *http.Request) {
		page(w, "Greeting", `<p id="greeting">Hello, `+html.EscapeString(r.URL.Query().Get("name"))+`!</p>`)
	})
	mux.HandleFunc("GET /hang", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, "<!DOCTYPE html><html><head><title>Hanging</title></head><body><p>loading")
		w.(http.Flusher).Flush()
		<-r.Context().Done() // the browser closed the connection: navigation aborted
		select {
		case s.hangEnded <- r.URL.String():
		default:
		}
	})
	mux.HandleFunc("GET /slow", func(w http.ResponseWriter, r *http.Request) {
		ms, _ := strconv.Atoi(r.URL.Query().Get("ms"))
		select {
		case <-time.After(time.Duration(ms) * time.Millisecond):
		case <-r.Context().Done():
			return
		}
		page(w, "Slow page", `<p id="slow">slow</p>`)
	})
	mux.HandleFunc("GET /popup", func(w http.ResponseWriter, r *http.Request) {
		page(w, "Popups", `<a id="link" href="/static" target="_blank">new tab</a>
<button id="open" onclick="window.open('/static'); document.getElementById('n').textContent = 'opened'">open</button><p id="n"></p>`)
	})
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

// upload is one asset a capturingUploader received.
type upload struct {
	jobID, name, contentType string
	data                     []byte
}

// capturingUploader keeps every asset in memory.
type capturingUploader struct {
	mu   sync.Mutex
	got  []upload
	fail error // returned instead of storing, when set
}

func (u *capturingUploader) upload(_ context.Context, jobID, name, contentType string, r io.Reader, size int64) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	if int64(len(data)) != size {
		return fmt.Errorf("read %d bytes, size says %d", len(data), size)
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.fail != nil {
		return u.fail
	}
	u.got = append(u.got, upload{jobID, name, contentType, data})
	return nil
}

// asset returns the last asset stored under jobID/name.
func (u *capturingUploader) asset(t testing.TB, jobID, name string) upload {
	t.Helper()
	u.mu.Lock()
	defer u.mu.Unlock()
	for i := len(u.got) - 1; i >= 0; i-- {
		if u.got[i].jobID == jobID && u.got[i].name == name {
			return u.got[i]
		}
	}
	require.Failf(t, "asset not stored", "%s/%s", jobID, name)
	return upload{}
}

// newDriver builds a driver with lanes lanes, a capturing uploader and the
// test's logger, and closes it at the end of the test.
func newDriver(t testing.TB, lanes int, tweak ...func(*Config)) (*Driver, *capturingUploader) {
	t.Helper()
	up := &capturingUploader{}
	cfg := Config{Lanes: lanes, WorkDir: t.TempDir(), Upload: up.upload, Logger: testLogger(t)}
	for _, f := range tweak {
		f(&cfg)
	}
	d, err := New(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.Close()) })
	return d, up
}

func testLogger(t testing.TB) *slog.Logger {
	if !testing.Verbose() {
		// Kept, and shown only when the test fails: a failure under CI
		// (never verbose) says what the driver did.
		var buf syncbuf.Buffer
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("---- last lines of the driver's log ----\n%s", syncbuf.LastLines(buf.String(), 80))
			}
		})
		return slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// jobLog collects a job's log lines and lets a test wait for one.
type jobLog struct {
	mu      sync.Mutex
	lines   []string
	changed chan struct{}
}

func newJobLog() *jobLog { return &jobLog{changed: make(chan struct{})} }

func (l *jobLog) emit(line string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, line)
	close(l.changed)
	l.changed = make(chan struct{})
	return nil
}

func (l *jobLog) text() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// waitLine waits for a line containing sub.
func (l *jobLog) waitLine(t testing.TB, sub string) {
	t.Helper()
	deadline := time.NewTimer(waitTimeout)
	defer deadline.Stop()
	for {
		l.mu.Lock()
		for _, line := range l.lines {
			if strings.Contains(line, sub) {
				l.mu.Unlock()
				return
			}
		}
		ch := l.changed
		l.mu.Unlock()
		select {
		case <-ch:
		case <-deadline.C:
			require.Failf(t, "log line missing", "no line with %q within %s; log:\n%s", sub, waitTimeout, l.text())
		}
	}
}

// jobRun is the outcome of one job.
type jobRun struct {
	res  agent.Result
	err  error
	log  *jobLog
	took time.Duration
}

// reason is the failure reason the agent would report (without a context
// that ended, which the agent checks first).
func (r jobRun) reason() string {
	if r.err == nil {
		return ""
	}
	var je *agent.JobError
	if errors.As(r.err, &je) {
		return je.Reason
	}
	return agent.ReasonJobError
}

// runJob runs one job on lane with a timeout (0: waitTimeout).
func runJob(t testing.TB, d *Driver, lane int, id, mode string, params any, timeout time.Duration) jobRun {
	t.Helper()
	if timeout == 0 {
		timeout = waitTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return runJobCtx(t, ctx, d, lane, id, mode, params)
}

func runJobCtx(t testing.TB, ctx context.Context, d *Driver, lane int, id, mode string, params any) jobRun {
	t.Helper()
	return runJobLog(t, ctx, d, lane, id, mode, params, newJobLog())
}

func runJobLog(t testing.TB, ctx context.Context, d *Driver, lane int, id, mode string, params any, l *jobLog) jobRun {
	t.Helper()
	raw, err := json.Marshal(params)
	require.NoError(t, err)
	start := time.Now()
	dl, _ := ctx.Deadline()
	res, err := d.Run(ctx, lane, agent.Job{ID: id, Attempt: 1, Mode: mode, Params: raw, Deadline: dl}, l.emit)
	return jobRun{res: res, err: err, log: l, took: time.Since(start)}
}

// resultMap decodes a job's result.
func resultMap(t testing.TB, r jobRun) map[string]any {
	t.Helper()
	require.NoError(t, r.err, "job log:\n%s", r.log.text())
	var m map[string]any
	require.NoError(t, json.Unmarshal(r.res.JSON, &m))
	return m
}

func itoa(i int) string { return strconv.Itoa(i) }

// isPNG reports whether data starts with the PNG signature.
func isPNG(data []byte) bool { return bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")) }
