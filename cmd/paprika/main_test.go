package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/paprika-hub/paprika/client"
)

// envRunMain makes the test binary run the paprika command instead of the
// tests, so a test can watch a real process exit (runHub owns os.Exit's
// status and os.Stderr).
const envRunMain = "PAPRIKA_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(envRunMain) == "1" {
		main()
	}
	goleak.VerifyTestMain(m)
}

// testNow is the clock of every CLI test.
var testNow = time.Date(2026, 3, 4, 12, 0, 0, 0, time.UTC)

// result is what one CLI run left behind.
type result struct {
	code           int
	stdout, stderr string
}

// runCLI runs the paprika command line in-process with env as its
// environment and its own HTTP transport.
func runCLI(t *testing.T, env map[string]string, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	c := &cli{
		stdout:     &out,
		stderr:     &errOut,
		getenv:     func(k string) string { return env[k] },
		now:        func() time.Time { return testNow },
		httpClient: &http.Client{Transport: tr},
	}
	code := c.run(t.Context(), args)
	return result{code: code, stdout: out.String(), stderr: errOut.String()}
}

// submitted is one POST /jobs the fake hub saw.
type submitted struct {
	body  map[string]json.RawMessage
	key   string
	token string
}

// fakeHub is an in-memory hub speaking the API.md HTTP API, enough for the
// CLI: noop jobs end at once, with params.lines log lines, failed when
// params.fail is true.
type fakeHub struct {
	mu      sync.Mutex
	jobs    map[string]*client.Job
	order   []string
	logs    map[string][]string
	byKey   map[string]string
	seen    []submitted
	workers []client.Worker
	hubs    []client.Hub
	token   string // required bearer token, if set
}

// setup starts a fake hub for the test.
func setup(t *testing.T) (*fakeHub, *httptest.Server) {
	t.Helper()
	h := &fakeHub{jobs: map[string]*client.Job{}, logs: map[string][]string{}, byKey: map[string]string{}}
	srv := httptest.NewServer(h.routes())
	t.Cleanup(srv.Close)
	return h, srv
}

func (h *fakeHub) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /jobs", h.submit)
	mux.HandleFunc("GET /jobs", h.list)
	mux.HandleFunc("GET /jobs/{id}", h.get)
	mux.HandleFunc("POST /jobs/{id}/cancel", h.cancel)
	mux.HandleFunc("POST /jobs/{id}/retry", h.retry)
	mux.HandleFunc("GET /jobs/{id}/logs", h.logsHandler)
	mux.HandleFunc("GET /workers", func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		defer h.mu.Unlock()
		reply(w, http.StatusOK, map[string]any{"workers": h.workers})
	})
	mux.HandleFunc("PATCH /workers/{id}", func(w http.ResponseWriter, r *http.Request) {
		var body struct{ Status string }
		_ = json.NewDecoder(r.Body).Decode(&body)
		reply(w, http.StatusOK, client.Worker{ID: r.PathValue("id"), Status: body.Status})
	})
	mux.HandleFunc("GET /hubs", func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		defer h.mu.Unlock()
		reply(w, http.StatusOK, map[string]any{"hubs": h.hubs})
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h.token != "" && r.Header.Get("Authorization") != "Bearer "+h.token {
			replyError(w, http.StatusUnauthorized, "unauthorized", "missing or wrong API token")
			return
		}
		mux.ServeHTTP(w, r)
	})
}

func reply(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func replyError(w http.ResponseWriter, status int, code, msg string) {
	reply(w, status, map[string]any{"error": map[string]string{"code": code, "message": msg}})
}

func (h *fakeHub) submit(w http.ResponseWriter, r *http.Request) {
	var body map[string]json.RawMessage
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		replyError(w, http.StatusBadRequest, "bad_json", err.Error())
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	key := r.Header.Get("Idempotency-Key")
	h.seen = append(h.seen, submitted{body: body, key: key, token: r.Header.Get("Authorization")})
	if id, ok := h.byKey[key]; ok && key != "" {
		reply(w, http.StatusOK, h.jobs[id])
		return
	}
	var mode string
	_ = json.Unmarshal(body["mode"], &mode)
	if mode != client.ModeNoop {
		replyError(w, http.StatusBadRequest, "invalid_mode", fmt.Sprintf("mode %q is not one of noop, fetch, macro", mode))
		return
	}
	var params struct {
		Lines int  `json:"lines"`
		Fail  bool `json:"fail"`
	}
	params.Lines = 2
	_ = json.Unmarshal(body["params"], &params)

	id := "j" + strconv.Itoa(len(h.order)+1)
	created := testNow.Add(-time.Minute)
	job := &client.Job{
		ID: id, Mode: mode, Params: body["params"], Status: client.StatusSucceeded,
		WorkerID: "w50150", Lane: "lane-0", Attempts: 1, MaxAttempts: 1, TimeoutS: 180,
		CreatedAt: created, StartedAt: created.Add(time.Second), FinishedAt: created.Add(2200 * time.Millisecond),
		Result: json.RawMessage(fmt.Sprintf(`{"lines":%d}`, params.Lines)),
	}
	if params.Fail {
		job.Status, job.Reason, job.Error, job.Result = client.StatusFailed, client.ReasonJobError, "asked to fail", nil
	}
	var lines []string
	for i := 1; i <= params.Lines; i++ {
		lines = append(lines, "line "+strconv.Itoa(i))
	}
	h.jobs[id], h.logs[id] = job, lines
	h.order = append(h.order, id)
	if key != "" {
		h.byKey[key] = id
	}
	reply(w, http.StatusCreated, job)
}

func (h *fakeHub) job(w http.ResponseWriter, r *http.Request) (*client.Job, bool) {
	j, ok := h.jobs[r.PathValue("id")]
	if !ok {
		replyError(w, http.StatusNotFound, "not_found", "no job "+r.PathValue("id"))
	}
	return j, ok
}

func (h *fakeHub) get(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if j, ok := h.job(w, r); ok {
		reply(w, http.StatusOK, j)
	}
}

func (h *fakeHub) list(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	defer h.mu.Unlock()
	page := client.Page{Jobs: []client.Job{}}
	for i := len(h.order) - 1; i >= 0; i-- {
		j := h.jobs[h.order[i]]
		if st := r.URL.Query().Get("status"); (st == "" || st == string(j.Status)) && matchTenantPriority(r.URL.Query(), *j) {
			page.Jobs = append(page.Jobs, *j)
		}
	}
	if n, _ := strconv.Atoi(r.URL.Query().Get("limit")); n > 0 && n < len(page.Jobs) {
		page.Jobs, page.NextCursor = page.Jobs[:n], "cur-"+page.Jobs[n-1].ID
	}
	reply(w, http.StatusOK, page)
}

func (h *fakeHub) cancel(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	defer h.mu.Unlock()
	j, ok := h.job(w, r)
	if !ok {
		return
	}
	if j.Status.Final() {
		replyError(w, http.StatusConflict, "job_final", "job "+j.ID+" is already "+string(j.Status))
		return
	}
	j.Status, j.Reason = client.StatusCanceled, client.ReasonCanceled
	reply(w, http.StatusOK, j)
}

func (h *fakeHub) logsHandler(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	_, ok := h.job(w, r)
	lines := h.logs[r.PathValue("id")]
	h.mu.Unlock()
	if !ok {
		return
	}
	if r.URL.Query().Get("follow") != "1" {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		for _, l := range lines {
			fmt.Fprintln(w, l)
		}
		return
	}
	from, _ := strconv.Atoi(r.URL.Query().Get("from"))
	w.Header().Set("Content-Type", "text/event-stream")
	for _, l := range lines[min(from, len(lines)):] {
		fmt.Fprintf(w, "data: %s\n\n", l)
	}
	fmt.Fprint(w, "event: done\ndata: {}\n\n")
}

// addJob puts a job straight into the fake hub.
func (h *fakeHub) addJob(j client.Job, lines ...string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.jobs[j.ID], h.logs[j.ID] = &j, lines
	h.order = append(h.order, j.ID)
}

func TestNoArgsPrintsUsage(t *testing.T) {
	t.Parallel()
	r := runCLI(t, nil)
	require.Equal(t, exitUsage, r.code)
	require.Contains(t, r.stderr, "Usage:\n  paprika up")
	require.Empty(t, r.stdout)
}

func TestUnknownCommand(t *testing.T) {
	t.Parallel()
	r := runCLI(t, nil, "frobnicate")
	require.Equal(t, exitUsage, r.code)
	require.True(t, strings.HasPrefix(r.stderr, "paprika: unknown command \"frobnicate\"\n"), r.stderr)
	require.Contains(t, r.stderr, "Usage:")
	require.Empty(t, r.stdout)
}

// TestBenchBadFlag: bench is wired to the load generator (its figures are
// tested in loadgen); an unknown flag is a usage error.
func TestBenchBadFlag(t *testing.T) {
	t.Parallel()
	r := runCLI(t, nil, "bench", "--clients", "10")
	require.Equal(t, exitUsage, r.code)
}

func TestVersionAndHelp(t *testing.T) {
	t.Parallel()
	r := runCLI(t, nil, "version")
	require.Equal(t, exitOK, r.code)
	require.True(t, strings.HasPrefix(r.stdout, "paprika dev (go"), r.stdout)

	for _, args := range [][]string{{"help"}, {"--help"}, {"-h"}} {
		r = runCLI(t, nil, args...)
		require.Equal(t, exitOK, r.code, args)
		require.Contains(t, r.stdout, "Usage:\n  paprika up", args)
	}

	r = runCLI(t, nil, "help", "submit")
	require.Equal(t, exitOK, r.code)
	require.Contains(t, r.stdout, "Usage: paprika submit --mode MODE")
	require.Contains(t, r.stdout, "-idempotency-key key")

	r = runCLI(t, nil, "jobs", "logs", "-h")
	require.Equal(t, exitOK, r.code)
	require.Contains(t, r.stdout, "Usage: paprika jobs logs ID [-f]")

	r = runCLI(t, nil, "jobs", "--help")
	require.Equal(t, exitOK, r.code)
	require.Contains(t, r.stdout, "cancel   cancel a job")
}

// TestBadFlags: each mistake is one line on stderr naming the flag (or the
// argument), and exit status 2, before any request.
func TestBadFlags(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"submit", "--mode", "noop", "--bogus"}, "paprika submit: flag provided but not defined: -bogus"},
		{[]string{"submit"}, "paprika submit: flag -mode is required (noop, fetch or macro)"},
		{[]string{"submit", "--mode", "noop", "--param", "lines"}, `paprika submit: invalid value "lines" for flag -param: want KEY=VALUE`},
		{[]string{"submit", "--mode", "noop", "--param", "=3"}, `paprika submit: invalid value "=3" for flag -param: want KEY=VALUE`},
		{[]string{"submit", "--mode", "noop", "--param", "steps=@/nonexistent/steps.json"}, `paprika submit: invalid value "steps=@/nonexistent/steps.json" for flag -param: read /nonexistent/steps.json: no such file or directory`},
		{[]string{"submit", "--mode", "noop", "--label", "team"}, `paprika submit: invalid value "team" for flag -label: want KEY=VALUE`},
		{[]string{"submit", "--mode", "noop", "--timeout-s", "soon"}, `paprika submit: invalid value "soon" for flag -timeout-s: parse error`},
		{[]string{"submit", "--mode", "noop", "--timeout-s", "-5"}, "paprika submit: flag -timeout-s: -5 is not a positive number of seconds"},
		{[]string{"submit", "--mode", "noop", "--max-attempts", "-1"}, "paprika submit: flag -max-attempts: -1 is not a positive number"},
		{[]string{"submit", "--mode", "noop", "extra"}, `paprika submit: unexpected argument "extra"`},
		{[]string{"submit", "--mode", "noop", "--hub", "ftp://x"}, `paprika submit: flag -hub: client: hub URL "ftp://x": want http://host:port or https://host:port`},
		{[]string{"jobs", "ls", "--status", "done"}, `paprika jobs ls: flag -status: "done" is not one of scheduled, queued, running, succeeded, failed, canceled`},
		{[]string{"jobs", "ls", "--limit", "-1"}, "paprika jobs ls: flag -limit: -1 is negative"},
		{[]string{"jobs", "get"}, "paprika jobs get: missing ID"},
		{[]string{"jobs", "get", "j1", "j2"}, `paprika jobs get: unexpected argument "j2"`},
		{[]string{"jobs", "logs", "j1", "-x"}, "paprika jobs logs: flag provided but not defined: -x"},
		{[]string{"jobs", "frob"}, `paprika jobs: unknown subcommand "frob" (ls, get, logs, cancel, retry)`},
		{[]string{"workers", "drain"}, "paprika workers drain: missing ID"},
		{[]string{"workers", "reboot", "w1"}, `paprika workers: unknown subcommand "reboot" (ls, drain, activate, standby)`},
		{[]string{"hubs", "extra"}, `paprika hubs: unexpected argument "extra"`},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			t.Parallel()
			r := runCLI(t, map[string]string{envHub: "http://127.0.0.1:1"}, tc.args...)
			require.Equal(t, exitUsage, r.code)
			require.Empty(t, r.stdout)
			require.Equal(t, 1, strings.Count(r.stderr, "\n"), "one line: %q", r.stderr)
			require.True(t, strings.HasPrefix(r.stderr, tc.want+" (see "), "got  %q\nwant %q", r.stderr, tc.want)
		})
	}
}

func TestHubUnreachable(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	dead := srv.URL
	srv.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var out, errOut bytes.Buffer
	c := &cli{stdout: &out, stderr: &errOut, getenv: func(string) string { return "" }, now: time.Now}
	code := c.run(ctx, []string{"hubs", "--hub", dead})
	require.Equal(t, exitFail, code)
	require.Contains(t, errOut.String(), "paprika hubs: GET /hubs: gave up after 5 attempts")
	require.Contains(t, errOut.String(), "hint: is a hub running there?")
}

func TestTokenFromFlagAndEnv(t *testing.T) {
	t.Parallel()
	h, srv := setup(t)
	h.token = "s3cret"

	r := runCLI(t, nil, "hubs", "--hub", srv.URL)
	require.Equal(t, exitFail, r.code)
	require.Contains(t, r.stderr, "401 unauthorized: missing or wrong API token")
	require.Contains(t, r.stderr, "hint: pass the hub's API token with --token or $PAPRIKA_API_TOKEN")

	r = runCLI(t, nil, "hubs", "--hub", srv.URL, "--token", "s3cret")
	require.Equal(t, exitOK, r.code, r.stderr)

	r = runCLI(t, map[string]string{envToken: "s3cret", envHub: srv.URL}, "hubs")
	require.Equal(t, exitOK, r.code, r.stderr)

	r = runCLI(t, map[string]string{envTokenAlt: "s3cret", envHub: srv.URL}, "hubs")
	require.Equal(t, exitOK, r.code, r.stderr)
}

func TestHubFromEnvFailsOver(t *testing.T) {
	t.Parallel()
	h, srv := setup(t)
	h.hubs = []client.Hub{{ID: "hub-a", Address: srv.URL, Alive: true, Local: true}}
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close()

	r := runCLI(t, map[string]string{envHub: deadURL + "," + srv.URL}, "hubs", "--json")
	require.Equal(t, exitOK, r.code, r.stderr)
	var got struct{ Hubs []client.Hub }
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &got))
	assert.Equal(t, "hub-a", got.Hubs[0].ID)
}
