package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSubmitParamJSON(t *testing.T) {
	t.Parallel()
	h, srv := setup(t)
	r := runCLI(t, nil, "submit", "--hub", srv.URL, "--mode", "noop",
		"--param-json", `{"url":"https://a","pages":[1,2],"threshold":0.1}`, "--param", "threshold=0.5")
	require.Equal(t, exitOK, r.code, r.stderr)
	h.mu.Lock()
	got := h.seen[0]
	h.mu.Unlock()
	require.JSONEq(t, `"noop"`, string(got.body["mode"]))
	require.JSONEq(t, `{"url":"https://a","pages":[1,2],"threshold":0.5}`, string(got.body["params"]), "--param replaces its key")

	for _, bad := range []string{`{"url":`, `[1,2]`, `null`, `"x"`} {
		r = runCLI(t, nil, "submit", "--hub", srv.URL, "--mode", "pdf-diff", "--param-json", bad)
		require.Equal(t, exitUsage, r.code, bad)
		require.Contains(t, r.stderr, "param-json", bad)
		require.Contains(t, r.stderr, "not a JSON object", bad)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	require.Len(t, h.seen, 1, "nothing is sent after a usage error")
}

func TestModesCommandAndJobFilters(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var query url.Values
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/modes":
			_, _ = io.WriteString(w, `{"modes":[
				{"name":"http-check","lane":"","schema":null,"unchecked":true,"workers":1,"lanes":2},
				{"name":"noop","lane":"","schema":null,"workers":3,"lanes":12},
				{"name":"pdf-diff","lane":"chromium","schema":{"type":"object"},"workers":2,"lanes":8},
				{"name":"two","lane":"","schema":{"a":1},"schemas":[{"a":1},{"b":2}],"workers":2,"lanes":2}]}`)
		case "/jobs":
			mu.Lock()
			query = r.URL.Query()
			mu.Unlock()
			_, _ = io.WriteString(w, `{"jobs":[],"next_cursor":""}`)
		}
	}))
	t.Cleanup(srv.Close)

	r := runCLI(t, nil, "modes", "--hub", srv.URL)
	require.Equal(t, exitOK, r.code, r.stderr)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	require.Len(t, lines, 5)
	require.Equal(t, []string{"NAME", "LANE", "WORKERS", "LANES", "SCHEMA"}, strings.Fields(lines[0]))
	require.Equal(t, []string{"http-check", "any", "1", "2", "no"}, strings.Fields(lines[1]))
	require.Equal(t, []string{"noop", "any", "3", "12", "hub"}, strings.Fields(lines[2]))
	require.Equal(t, []string{"pdf-diff", "chromium", "2", "8", "yes"}, strings.Fields(lines[3]))
	require.Equal(t, []string{"two", "any", "2", "2", "2", "schemas"}, strings.Fields(lines[4]))

	r = runCLI(t, nil, "modes", "--hub", srv.URL, "--json")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, `"pdf-diff"`)

	r = runCLI(t, nil, "jobs", "ls", "--hub", srv.URL, "--status", "failed", "--reason", "job_error",
		"--mode", "pdf-diff", "--worker", "w1", "--label", "team=qa", "--label", "n=2")
	require.Equal(t, exitOK, r.code, r.stderr)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, "failed", query.Get("status"))
	require.Equal(t, "job_error", query.Get("reason"))
	require.Equal(t, "pdf-diff", query.Get("mode"))
	require.Equal(t, "w1", query.Get("worker"))
	require.Equal(t, []string{"n=2", "team=qa"}, query["label"])
}
