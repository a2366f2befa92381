package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/agent/chromium"
	"github.com/paprika-hub/paprika/client"
	"github.com/paprika-hub/paprika/internal/syncbuf"
	"github.com/paprika-hub/paprika/persistence/storetest"
)

// TestSessionsEndToEnd runs `paprika up` with one real Chromium lane as its
// own process and drives `paprika sessions new`, `ls` and `rm` against it.
func TestSessionsEndToEnd(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("drives Chromium; skipped with -short")
	}
	if _, err := chromium.LookPath(""); err != nil {
		storetest.Unavailable(t, "chromium", err)
	}
	cmd := exec.Command(os.Args[0], "up", "--listen", "127.0.0.1:0", "--workers", "1", "--lanes", "1", "--driver", "chromium", "--log-level", "error")
	cmd.Dir = t.TempDir() // no config.yaml; the embedded stores live here
	cmd.Env = append(os.Environ(), envRunMain+"=1")
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	stderr := &syncbuf.Buffer{}
	cmd.Stderr = stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err, "stderr: %s", stderr.String())
	m := regexp.MustCompile(`API (http://127\.0\.0\.1:\d+) `).FindStringSubmatch(line)
	require.NotNil(t, m, line)
	env := map[string]string{envHub: m[1]}

	c, err := client.New([]string{m[1]})
	require.NoError(t, err)
	defer c.CloseIdleConnections()
	require.Eventually(t, func() bool {
		ws, err := c.Workers(t.Context())
		return err == nil && len(ws) == 1 && ws[0].Alive
	}, 30*time.Second, 50*time.Millisecond, "the local worker links; stderr: %s", stderr.String())

	r := runCLI(t, env, "sessions")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Equal(t, "no open sessions\n", r.stdout)

	r = runCLI(t, env, "sessions", "new", "--label", "team=qa", "--labels", "run=7", "--idle-timeout", "2m")
	require.Equal(t, exitOK, r.code, r.stderr)
	id, cdpURL, _ := strings.Cut(strings.TrimSpace(r.stdout), " ")
	require.Regexp(t, `^s-[0-9a-f]+$`, id)
	require.Regexp(t, `^ws://127\.0\.0\.1:\d+/sessions/`+id+`/cdp$`, cdpURL, "new prints the session's cdp_url")
	s, err := c.GetSession(t.Context(), id)
	require.NoError(t, err)
	require.Equal(t, client.SessionOpen, s.Status)
	require.Equal(t, 120, s.IdleTimeoutS)
	require.Equal(t, map[string]string{"team": "qa", "run": "7"}, s.Labels)

	// The one lane is taken: a second new fails with the hub's reason.
	r = runCLI(t, env, "sessions", "new")
	require.Equal(t, exitFail, r.code)
	require.Contains(t, r.stderr, "paprika sessions new: POST /sessions: 503 no_capacity")

	r = runCLI(t, env, "sessions", "ls")
	require.Equal(t, exitOK, r.code, r.stderr)
	rows := strings.Split(strings.TrimSpace(r.stdout), "\n")
	require.Len(t, rows, 2, r.stdout)
	require.Regexp(t, `^ID +WORKER +LANE +STATUS +LAST USED +AGE +LABELS$`, rows[0])
	require.Regexp(t, `^`+id+` +local-1 +\S+ +open +\d+s +\d+s +run=7,team=qa$`, rows[1])

	r = runCLI(t, env, "sessions", "ls", "--json")
	require.Equal(t, exitOK, r.code, r.stderr)
	var page client.SessionPage
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &page))
	require.Len(t, page.Sessions, 1)
	require.Equal(t, id, page.Sessions[0].ID)
	require.Equal(t, "local-1", page.Sessions[0].WorkerID)

	// rm goes on past an id the hub does not know, and fails for it.
	r = runCLI(t, env, "sessions", "rm", "s-nobody", id)
	require.Equal(t, exitFail, r.code)
	require.Equal(t, "session "+id+" closed\n", r.stdout)
	require.Equal(t, "paprika sessions rm: DELETE /sessions/s-nobody: 404 not_found: no session s-nobody\n", r.stderr)
	s, err = c.GetSession(t.Context(), id)
	require.NoError(t, err)
	require.Equal(t, client.SessionClosed, s.Status)

	r = runCLI(t, env, "sessions", "ls")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Equal(t, "no open sessions\n", r.stdout)

	// The lane is free again.
	require.Eventually(t, func() bool {
		r = runCLI(t, env, "sessions", "new", "--json")
		return r.code == exitOK
	}, 20*time.Second, 100*time.Millisecond)
	var opened client.Session
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &opened))
	r = runCLI(t, env, "sessions", "rm", opened.ID, "--json")
	require.Equal(t, exitOK, r.code, r.stderr)
	var removed struct{ Sessions []client.Session }
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &removed))
	require.Len(t, removed.Sessions, 1)
	require.Equal(t, client.SessionClosed, removed.Sessions[0].Status)

	require.NoError(t, cmd.Process.Signal(os.Interrupt))
	require.NoError(t, cmd.Wait())
}

// sessionDouble answers POST /sessions with a fixed session and records
// the bodies it was sent.
type sessionDouble struct {
	mu     sync.Mutex
	bodies []string
}

func (d *sessionDouble) serve(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		assert.Equal(t, "POST /sessions", r.Method+" "+r.URL.Path)
		b, _ := io.ReadAll(r.Body)
		d.mu.Lock()
		d.bodies = append(d.bodies, string(b))
		d.mu.Unlock()
		reply(w, http.StatusCreated, map[string]any{"id": "s-1", "worker_id": "w1", "status": "open",
			"cdp_url": "ws://127.0.0.1:8080/sessions/s-1/cdp\x1b[2J"})
	}))
	t.Cleanup(srv.Close)
	return srv
}

func (d *sessionDouble) last() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.bodies[len(d.bodies)-1]
}

// TestSessionsNewOptions: each flag of `sessions new` becomes its field of
// POST /sessions; the proxy URL's credentials move out of the server
// address and the flags and $PAPRIKA_PROXY_PASSWORD override them; what
// the hub answers is printed terminal-safe on one line.
func TestSessionsNewOptions(t *testing.T) {
	t.Parallel()
	d := &sessionDouble{}
	srv := d.serve(t)
	cookies := filepath.Join(t.TempDir(), "cookies.json")
	require.NoError(t, os.WriteFile(cookies, []byte(`[{"name":"a","value":"1","domain":"example.com","http_only":true}]`), 0o600))

	r := runCLI(t, nil, "sessions", "new", "--hub", srv.URL, "--label", "team=qa", "--idle-timeout", "90",
		"--proxy", "http://bob:s3cret@proxy.local:3128", "--user-agent", "ua/1", "--viewport", "1280x720",
		"--locale", "de-DE", "--timezone", "Europe/Berlin", "--cookies", "@"+cookies,
		"--block-type", "Image,Font", "--block-url", "*.png", "--profile", "alice")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Equal(t, `s-1 ws://127.0.0.1:8080/sessions/s-1/cdp\x1b[2J`+"\n", r.stdout, "escape sequences are shown, not run")
	require.JSONEq(t, `{"labels":{"team":"qa"},"idle_timeout_s":90,
		"proxy":{"server":"http://proxy.local:3128","username":"bob","password":"s3cret"},
		"user_agent":"ua/1","viewport":{"width":1280,"height":720},"locale":"de-DE","timezone":"Europe/Berlin",
		"cookies":[{"name":"a","value":"1","domain":"example.com","http_only":true}],
		"block":{"resource_types":["Image","Font"],"url_patterns":["*.png"]},"profile":"alice"}`, d.last())

	r = runCLI(t, map[string]string{envProxyPass: "from-env"}, "sessions", "new", "--hub", srv.URL,
		"--proxy", "socks5://proxy.local:1080", "--proxy-user", "amy", "--idle-timeout", "5m",
		"--cookies", `[{"name":"b","value":"2","url":"https://example.com/"}]`)
	require.Equal(t, exitOK, r.code, r.stderr)
	require.JSONEq(t, `{"idle_timeout_s":300,"proxy":{"server":"socks5://proxy.local:1080","username":"amy","password":"from-env"},
		"cookies":[{"name":"b","value":"2","url":"https://example.com/"}]}`, d.last())

	r = runCLI(t, map[string]string{envProxyPass: "from-env"}, "sessions", "new", "--hub", srv.URL,
		"--proxy", "http://bob:url-pass@proxy.local:3128", "--proxy-pass", "flag-pass")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.JSONEq(t, `{"proxy":{"server":"http://proxy.local:3128","username":"bob","password":"flag-pass"}}`, d.last())

	r = runCLI(t, nil, "sessions", "new", "--hub", srv.URL)
	require.Equal(t, exitOK, r.code, r.stderr)
	require.JSONEq(t, `{}`, d.last(), "no flags: the hub's defaults")
}

// TestSessionsBadFlags: each mistake is one line naming the flag, exit 2,
// and no request; a proxy password never shows in the message.
func TestSessionsBadFlags(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"sessions", "frob"}, `paprika sessions: unknown subcommand "frob" (ls, new, rm)`},
		{[]string{"sessions", "rm"}, "paprika sessions rm: missing ID"},
		{[]string{"sessions", "ls", "extra"}, `paprika sessions ls: unexpected argument "extra"`},
		{[]string{"sessions", "ls", "--limit", "-2"}, "paprika sessions ls: flag -limit: -2 is negative"},
		{[]string{"sessions", "new", "extra"}, `paprika sessions new: unexpected argument "extra"`},
		{[]string{"sessions", "new", "--label", "team"}, `paprika sessions new: invalid value "team" for flag -label: want KEY=VALUE`},
		{[]string{"sessions", "new", "--idle-timeout", "soon"}, `paprika sessions new: flag -idle-timeout: "soon" is neither a duration (90s, 10m) nor a number of seconds`},
		{[]string{"sessions", "new", "--idle-timeout", "0"}, `paprika sessions new: flag -idle-timeout: "0": want at least 1 second`},
		{[]string{"sessions", "new", "--idle-timeout", "1500ms"}, `paprika sessions new: flag -idle-timeout: "1500ms": want whole seconds, at least 1`},
		{[]string{"sessions", "new", "--viewport", "1280"}, `paprika sessions new: flag -viewport: "1280": want WIDTHxHEIGHT, e.g. 1280x720`},
		{[]string{"sessions", "new", "--viewport", "0x720"}, `paprika sessions new: flag -viewport: "0x720": want WIDTHxHEIGHT, e.g. 1280x720`},
		{[]string{"sessions", "new", "--proxy", "bob:hunter2@proxy.local"}, `paprika sessions new: flag -proxy: "***@proxy.local": want scheme://host:port`},
		{[]string{"sessions", "new", "--proxy-pass", "x"}, "paprika sessions new: flag -proxy: --proxy-user and --proxy-pass need --proxy"},
		{[]string{"sessions", "new", "--proxy", "http://proxy.local:3128", "--proxy-pass", "x"}, "paprika sessions new: flag -proxy: a proxy password needs a username (user:pass@ in the URL or --proxy-user)"},
		{[]string{"sessions", "new", "--cookies", "@/nonexistent/c.json"}, "paprika sessions new: flag -cookies: read /nonexistent/c.json: no such file or directory"},
		{[]string{"sessions", "new", "--cookies", `{"name":"a"}`}, "paprika sessions new: flag -cookies: want a JSON list of cookies"},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			t.Parallel()
			r := runCLI(t, map[string]string{envHub: "http://127.0.0.1:1"}, tc.args...)
			require.Equal(t, exitUsage, r.code, r.stderr)
			require.Empty(t, r.stdout)
			require.Equal(t, 1, strings.Count(r.stderr, "\n"), "one line: %q", r.stderr)
			require.True(t, strings.HasPrefix(r.stderr, tc.want), "got  %q\nwant %q", r.stderr, tc.want)
			require.Regexp(t, ` \(see paprika sessions( \w+)? -h\)\n$`, r.stderr)
			require.NotContains(t, r.stderr, "hunter2")
		})
	}

	r := runCLI(t, nil, "sessions", "-h")
	require.Equal(t, exitOK, r.code)
	require.Contains(t, r.stdout, "new  open a session on a free chromium lane")
	r = runCLI(t, nil, "help", "sessions")
	require.Equal(t, exitOK, r.code)
	require.Contains(t, r.stdout, "Usage: "+sessionsSynopsis)
	r = runCLI(t, nil, "sessions", "new", "-h")
	require.Equal(t, exitOK, r.code)
	require.Contains(t, r.stdout, "-viewport WxH")
	require.Contains(t, r.stdout, "$"+envProxyPass)
}

// TestSessionsLsTable renders sessions as the operator sees them, from a
// fixed answer, with the paging hint on stderr.
func TestSessionsLsTable(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		assert.Equal(t, "GET /sessions", r.Method+" "+r.URL.Path)
		assert.Equal(t, "2", r.URL.Query().Get("limit"))
		reply(w, http.StatusOK, map[string]any{"next_cursor": "s-b", "sessions": []client.Session{
			{ID: "s-a", WorkerID: "w50150", Lane: "ws://10.0.0.5:9222/0", Status: "open", IdleTimeoutS: 300,
				CreatedAt: testNow.Add(-10 * time.Minute), LastUsed: testNow.Add(-5 * time.Second), Labels: map[string]string{"team": "qa"}},
			{ID: "s-b", WorkerID: "w50151", Lane: "ws://10.0.0.6:9222/1", Status: "open", IdleTimeoutS: 60,
				CreatedAt: testNow.Add(-2 * time.Hour), LastUsed: testNow.Add(-90 * time.Second)},
		}})
	}))
	t.Cleanup(srv.Close)
	r := runCLI(t, nil, "sessions", "ls", "--limit", "2", "--hub", srv.URL)
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Equal(t, ""+
		"ID   WORKER  LANE                  STATUS  LAST USED  AGE  LABELS\n"+
		"s-a  w50150  ws://10.0.0.5:9222/0  open    5s         10m  team=qa\n"+
		"s-b  w50151  ws://10.0.0.6:9222/1  open    1m         2h   -\n", r.stdout)
	require.Equal(t, "more: paprika sessions ls --cursor s-b\n", r.stderr)
}
