package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/client"
)

// evil retitles the terminal (OSC 0 ... BEL) and clears it (CSI 2J).
const evil = "\x1b]0;pwned\x07\x1b[2J"

// assertTerminalSafe fails when out holds a byte that drives a terminal.
func assertTerminalSafe(t *testing.T, what, out string) {
	t.Helper()
	for _, bad := range []string{"\x1b", "\x07", "\x9b", "\u009b", "\r"} {
		assert.NotContains(t, out, bad, "%s: %q", what, out)
	}
}

func TestSecurityCLIStripsControlCharacters(t *testing.T) {
	t.Parallel()
	h, srv := setup(t)
	h.addJob(client.Job{
		ID: "j1" + evil, Mode: "fetch" + evil, Status: client.StatusFailed, Reason: "job_error" + evil,
		Error: "boom" + evil, WorkerID: "w1" + evil, Lane: "lane" + evil, Attempts: 1, MaxAttempts: 1,
		Params: json.RawMessage(`{"url":"http://x/\u001b[2J"}`), Result: json.RawMessage(`{"r":"\u009b31m"}`),
		Labels: map[string]string{"k" + evil: "v" + evil}, Assets: []string{"a" + evil},
		CreatedAt: testNow.Add(-2 * time.Second), StartedAt: testNow.Add(-2 * time.Second), FinishedAt: testNow,
	}, "line one "+evil, "line two\x9b31m red", "bidi \u202eevil")
	h.addJob(client.Job{ID: "j2", Mode: "noop", Status: client.StatusRunning, Error: "still" + evil})
	h.workers = []client.Worker{{ID: "w1" + evil, Hub: "hub" + evil, Status: "active" + evil, Alive: true}}
	h.hubs = []client.Hub{{ID: "h1" + evil, Address: "10.0.0.1" + evil, Alive: true}}
	env := map[string]string{envHub: srv.URL}
	id := "j1" + evil

	for _, args := range [][]string{
		{"jobs", "ls"},
		{"jobs", "get", id},
		{"jobs", "logs", id},
		{"jobs", "logs", "-f", id},
		{"jobs", "cancel", "j2"},
		{"workers"},
		{"hubs"},
		{"jobs", "get", "nope" + evil}, // the hub's error names the id
	} {
		r := runCLI(t, env, args...)
		assertTerminalSafe(t, strings.Join(args, " ")+" stdout", r.stdout)
		assertTerminalSafe(t, strings.Join(args, " ")+" stderr", r.stderr)
		require.NotEmpty(t, r.stdout+r.stderr, args)
	}

	// The text is still there, escaped, and logs keep their lines.
	r := runCLI(t, env, "jobs", "logs", id)
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Equal(t, `line one \x1b]0;pwned\x07\x1b[2J`+"\n"+`line two\x9b31m red`+"\n"+`bidi \u202eevil`+"\n", r.stdout)
	r = runCLI(t, env, "jobs", "get", id)
	require.Contains(t, r.stdout, `ERROR     boom\x1b]0;pwned\x07\x1b[2J`+"\n")

	// --json stays valid JSON with the same values.
	r = runCLI(t, env, "jobs", "get", id, "--json")
	require.Equal(t, exitOK, r.code, r.stderr)
	assertTerminalSafe(t, "jobs get --json", r.stdout)
	var j client.Job
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &j), r.stdout)
	require.Equal(t, "boom"+evil, j.Error)
	require.Equal(t, `{"r":"`+"\u009b"+`31m"}`, string(compactRaw(t, j.Result)))
}

func compactRaw(t *testing.T, raw json.RawMessage) []byte {
	t.Helper()
	var v any
	require.NoError(t, json.Unmarshal(raw, &v))
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

func TestTermSafe(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"plain":                 "plain",
		"héllo, 世界 ✓":           "héllo, 世界 ✓",
		"a\tb\nc":               "a\tb\nc",
		"crlf\r\nnext":          "crlf\nnext",
		"over\rwrite":           `over\x0dwrite`,
		"\x00\x08\x1b\x7f":      `\x00\x08\x1b\x7f`,
		"csi\u009b1m":           `csi\u009b1m`,
		"raw\x9b1m":             `raw\x9b1m`,
		"rtl\u202e\u2066\u2069": `rtl\u202e\u2066\u2069`,
	} {
		assert.Equal(t, want, termSafe(in), "%q", in)
	}
	var b bytes.Buffer
	w := terminalSafe(&b)
	require.Same(t, w.(safeWriter).w, terminalSafe(w).(safeWriter).w, "wrapped once")
	n, err := w.Write([]byte("x\x1by"))
	require.NoError(t, err)
	require.Equal(t, 3, n)
	require.Equal(t, `x\x1by`, b.String())
}
