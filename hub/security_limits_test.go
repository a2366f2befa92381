package hub

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// limitBody decodes an error answer to a bound: its code and the limit
// (config key) and label it names.
func limitBody(t *testing.T, b []byte) (code, limit, label string) {
	t.Helper()
	var e struct {
		Error struct {
			Code, Message, Limit, Label string
			Max                         int
		}
	}
	require.NoError(t, json.Unmarshal(b, &e), string(b))
	require.Contains(t, e.Error.Message, e.Error.Limit, "the message names the key too")
	require.Positive(t, e.Error.Max, string(b))
	return e.Error.Code, e.Error.Limit, e.Error.Label
}

// labelsJSON builds a labels object of n labels, keys k0.., each value v.
func labelsJSON(n int, v string) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprintf("%q:%q", fmt.Sprintf("k%d", i), v)
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// TestSecurityLimitsParamsAndLabels: params over limits.max_params_bytes are
// a 413, too many or too long labels a 400, on POST /jobs and POST
// /sessions, each naming the config key (and the label); requests at the
// bounds still go through.
func TestSecurityLimitsParamsAndLabels(t *testing.T) {
	cfg := testConfig(t)
	require.NoError(t, cfg.Set("limits.max_params_bytes", "2048"))
	require.NoError(t, cfg.Set("limits.max_labels", "4"))
	require.NoError(t, cfg.Set("limits.max_label_key_bytes", "16"))
	require.NoError(t, cfg.Set("limits.max_label_value_bytes", "32"))
	h := startTestHub(t, cfg)
	fetch := func(n int) string { // params of about n bytes
		return `{"url":"https://example.com/?q=` + strings.Repeat("a", n-32) + `"}`
	}

	st, b := do(t, "POST", h.URL()+"/jobs", `{"mode":"fetch","params":`+fetch(4096)+`}`)
	require.Equal(t, http.StatusRequestEntityTooLarge, st, string(b))
	code, limit, _ := limitBody(t, b)
	require.Equal(t, "params_too_large", code)
	require.Equal(t, "limits.max_params_bytes", limit)
	st, b = do(t, "POST", h.URL()+"/jobs", `{"mode":"fetch","params":`+fetch(2000)+`}`)
	require.Equal(t, http.StatusCreated, st, "params under the bound: %s", b)

	for _, tc := range []struct{ name, labels, limit, label string }{
		{"count", labelsJSON(5, "v"), "limits.max_labels", ""},
		{"key", `{"` + strings.Repeat("k", 17) + `":"v"}`, "limits.max_label_key_bytes", strings.Repeat("k", 17)},
		{"value", `{"team":"` + strings.Repeat("v", 33) + `"}`, "limits.max_label_value_bytes", "team"},
	} {
		for _, path := range []string{"/jobs", "/sessions"} {
			st, b := do(t, "POST", h.URL()+path, `{"mode":"noop","labels":`+tc.labels+`}`)
			if path == "/sessions" {
				st, b = do(t, "POST", h.URL()+path, `{"labels":`+tc.labels+`}`)
			}
			require.Equal(t, http.StatusRequestEntityTooLarge, st, "%s %s: %s", tc.name, path, b)
			code, limit, label := limitBody(t, b)
			require.Equal(t, "labels_too_large", code)
			require.Equal(t, tc.limit, limit, tc.name)
			require.Equal(t, tc.label, label, tc.name)
		}
	}
	// At the bounds: accepted (a session finds no worker: 503, not 400).
	ok := labelsJSON(3, strings.Repeat("v", 32)) // keys k0..k2
	ok = strings.TrimSuffix(ok, "}") + `,"` + strings.Repeat("k", 16) + `":"v"}`
	st, b = do(t, "POST", h.URL()+"/jobs", `{"mode":"noop","labels":`+ok+`}`)
	require.Equal(t, http.StatusCreated, st, string(b))
	st, b = do(t, "POST", h.URL()+"/sessions", `{"labels":`+ok+`}`)
	require.Equal(t, http.StatusServiceUnavailable, st, string(b))
}

// TestSecurityLimitsQueueFull: with limits.max_queued jobs queued (no
// worker takes them), POST /jobs answers 429 queue_full with Retry-After
// and the depth; reads still answer, and once a job leaves the queue a
// submission is taken again.
func TestSecurityLimitsQueueFull(t *testing.T) {
	cfg := testConfig(t)
	require.NoError(t, cfg.Set("limits.max_queued", "3"))
	h := startTestHub(t, cfg)
	var ids []string
	for range 3 {
		ids = append(ids, submit(t, h.URL(), `{"mode":"noop"}`).ID)
	}
	res, b := request(t, "POST", h.URL()+"/jobs", `{"mode":"noop"}`)
	require.Equal(t, http.StatusTooManyRequests, res.StatusCode, string(b))
	require.Equal(t, "5", res.Header.Get("Retry-After"))
	code, limit, _ := limitBody(t, b)
	require.Equal(t, "queue_full", code)
	require.Equal(t, "limits.max_queued", limit)
	var e struct{ Error struct{ Queued int } }
	require.NoError(t, json.Unmarshal(b, &e))
	require.Equal(t, 3, e.Error.Queued)

	st, b := do(t, "GET", h.URL()+"/jobs/"+ids[0], "")
	require.Equal(t, http.StatusOK, st, "reads are not gated: %s", b)
	st, b = do(t, "POST", h.URL()+"/jobs/"+ids[0]+"/cancel", "")
	require.Equal(t, http.StatusOK, st, string(b))
	// The scheduler's count is re-read within a second.
	require.Eventually(t, func() bool {
		st, _ := do(t, "POST", h.URL()+"/jobs", `{"mode":"noop"}`)
		return st == http.StatusCreated
	}, 10*time.Second, 200*time.Millisecond)
}

// TestSecurityLimitsConnsPerIP: a client address holding
// limits.max_conns_per_ip connections has the next one closed on accept;
// once it lets one go, it is served again.
func TestSecurityLimitsConnsPerIP(t *testing.T) {
	cfg := testConfig(t)
	require.NoError(t, cfg.Set("limits.max_conns_per_ip", "3"))
	h := startTestHub(t, cfg)
	addr := strings.TrimPrefix(h.URL(), "http://")
	var held []net.Conn
	for range 3 {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close() })
		held = append(held, c)
	}
	// The held ones are accepted: each answers a request.
	for _, c := range held[:1] {
		_, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
		require.NoError(t, err)
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		require.NoError(t, err)
		res.Body.Close()
		require.Equal(t, http.StatusOK, res.StatusCode)
	}
	fresh := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}
	res, err := fresh.Get(h.URL() + "/healthz")
	if err == nil {
		res.Body.Close()
	}
	require.Error(t, err, "a fourth connection is closed before any answer")

	require.NoError(t, held[2].Close())
	require.Eventually(t, func() bool {
		res, err := fresh.Get(h.URL() + "/healthz")
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK
	}, 5*time.Second, 50*time.Millisecond)
}

// TestSecurityLimitsAPIRate: a client over limits.api_rate (past its
// burst) is answered 429 rate_limited with Retry-After; probes are not
// counted, and after the wait the client is served again.
func TestSecurityLimitsAPIRate(t *testing.T) {
	cfg := testConfig(t)
	require.NoError(t, cfg.Set("limits.api_rate", "1"))
	require.NoError(t, cfg.Set("limits.api_burst", "5"))
	h := startTestHub(t, cfg)
	for i := range 5 {
		st, b := do(t, "GET", h.URL()+"/jobs", "")
		require.Equal(t, http.StatusOK, st, "request %d within the burst: %s", i, b)
	}
	res, b := request(t, "GET", h.URL()+"/jobs", "")
	require.Equal(t, http.StatusTooManyRequests, res.StatusCode, string(b))
	require.Equal(t, "1", res.Header.Get("Retry-After"))
	code, limit, _ := limitBody(t, b)
	require.Equal(t, "rate_limited", code)
	require.Equal(t, "limits.api_rate", limit)

	st, _ := do(t, "GET", h.URL()+"/healthz", "")
	require.Equal(t, http.StatusOK, st, "probes are not rate limited")
	time.Sleep(1100 * time.Millisecond)
	st, b = do(t, "GET", h.URL()+"/jobs", "")
	require.Equal(t, http.StatusOK, st, "after Retry-After: %s", b)
}

// TestSecurityLimitsLogBounds: a job logging past limits.max_log_lines or
// limits.max_log_bytes has its log cut there with one marker line; the
// lines past it are refused and counted, the job still succeeds, a
// follower still gets the end, and a job within the bounds keeps its log.
func TestSecurityLimitsLogBounds(t *testing.T) {
	for _, tc := range []struct {
		key, value, bound string
		kept              int // lines before the marker
	}{
		{"limits.max_log_lines", "10", "lines", 10},
		// "noop line 1 of 50" is 17 bytes: five fit in 100, not six.
		{"limits.max_log_bytes", "100", "bytes", 5},
	} {
		t.Run(tc.bound, func(t *testing.T) {
			cfg := testConfig(t)
			require.NoError(t, cfg.Set(tc.key, tc.value))
			h := startTestHub(t, cfg)
			startAgent(t, h.URL(), "w-logs", 1)
			j := submit(t, h.URL(), `{"mode":"noop","params":{"lines":50}}`)
			res, err := http.Get(h.URL() + "/jobs/" + j.ID + "/logs?follow=1")
			require.NoError(t, err)
			defer res.Body.Close()
			sc := bufio.NewScanner(res.Body)
			var events []string
			for sc.Scan() && sc.Text() != "event: done" {
				if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
					events = append(events, d)
				}
			}
			require.Equal(t, "event: done", sc.Text(), "the follower ends")
			require.Equal(t, "succeeded", string(waitFinal(t, h.URL(), j.ID, 10*time.Second).Status))

			st, b := do(t, "GET", h.URL()+"/jobs/"+j.ID+"/logs", "")
			require.Equal(t, http.StatusOK, st)
			lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
			require.Len(t, lines, tc.kept+1, string(b))
			require.Equal(t, "noop line 1 of 50", lines[0])
			require.Equal(t, fmt.Sprintf("[log truncated: limit of %s %s reached]", tc.value, tc.bound), lines[tc.kept])
			require.Equal(t, lines, events, "the follower saw the stored log")
			require.Equal(t, int64(50-tc.kept), h.Metrics().Get("paprika_log_lines_refused_total", "limit="+tc.bound))

			// A job within the bound keeps its whole log.
			ok := submit(t, h.URL(), `{"mode":"noop","params":{"lines":3}}`)
			waitFinal(t, h.URL(), ok.ID, 10*time.Second)
			st, b = do(t, "GET", h.URL()+"/jobs/"+ok.ID+"/logs", "")
			require.Equal(t, http.StatusOK, st)
			require.Equal(t, "noop line 1 of 3\nnoop line 2 of 3\nnoop line 3 of 3\n", string(b))
		})
	}
}

// TestSecurityLimitsJobAssets: a job's assets together stay within
// limits.max_asset_bytes: an upload past it is a 413 naming the key,
// whether its length is declared or not; an upload that fits, and one
// replacing an asset of the same name, still succeed.
func TestSecurityLimitsJobAssets(t *testing.T) {
	cfg := testConfig(t)
	require.NoError(t, cfg.Set("auth.worker_token", "wt"))
	require.NoError(t, cfg.Set("limits.max_asset_bytes", "100"))
	h := startTestHub(t, cfg)
	j := submit(t, h.URL(), `{"mode":"noop"}`)
	put := func(name string, n int, chunked bool) (int, []byte) {
		t.Helper()
		var body io.Reader = strings.NewReader(strings.Repeat("a", n))
		if chunked {
			body = io.MultiReader(body) // hides the length: sent chunked
		}
		req, err := http.NewRequest("PUT", h.URL()+"/jobs/"+j.ID+"/assets/"+name, body)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer wt")
		req.Header.Set("Content-Type", "text/plain")
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, b
	}
	st, b := put("a.txt", 60, false)
	require.Equal(t, http.StatusNoContent, st, string(b))
	for _, chunked := range []bool{false, true} {
		st, b = put("b.txt", 50, chunked)
		require.Equal(t, http.StatusRequestEntityTooLarge, st, "chunked=%v: %s", chunked, b)
		code, limit, _ := limitBody(t, b)
		require.Equal(t, "job_assets_too_large", code)
		require.Equal(t, "limits.max_asset_bytes", limit)
	}
	st, b = put("b.txt", 40, true)
	require.Equal(t, http.StatusNoContent, st, "fits the room left: %s", b)
	st, b = put("a.txt", 60, false)
	require.Equal(t, http.StatusNoContent, st, "a replaced asset's old size does not count: %s", b)
}

// request is do for a test that reads the answer's headers too; a body is
// sent as JSON.
func request(t *testing.T, method, url, body string) (*http.Response, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	require.NoError(t, err)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	return res, b
}

// A GET /jobs page is bounded by its encoded size as well as by limit: it
// ends early with a next_cursor where it ended, and following the cursors
// lists every job once.
func TestSecurityLimitsListBytes(t *testing.T) {
	cfg := testConfig(t)
	require.NoError(t, cfg.Set("limits.max_list_bytes", "65536"))
	h := startTestHub(t, cfg)
	pad := strings.Repeat("p", 20<<10) // ~3 jobs fit in 64 KiB
	want := map[string]bool{}
	for range 7 {
		// fetch jobs: no worker takes them, and a URL carries the size
		want[submit(t, h.URL(), `{"mode":"fetch","params":{"url":"https://example.com/?q=`+pad+`"}}`).ID] = true
	}
	seen := map[string]bool{}
	cursor, pages := "", 0
	for {
		st, b := do(t, "GET", h.URL()+"/jobs?limit=100&cursor="+cursor, "")
		require.Equal(t, http.StatusOK, st, "%.300s", b)
		require.LessOrEqual(t, len(b), 65536+4096, "a page stays near the bound")
		var page struct {
			Jobs []struct {
				ID string `json:"id"`
			} `json:"jobs"`
			NextCursor string `json:"next_cursor"`
		}
		require.NoError(t, json.Unmarshal(b, &page))
		pages++
		for _, j := range page.Jobs {
			require.False(t, seen[j.ID], "job %s listed twice", j.ID)
			seen[j.ID] = true
		}
		if page.NextCursor == "" {
			break
		}
		require.NotEmpty(t, page.Jobs, "a page always moves on")
		cursor = page.NextCursor
	}
	require.Equal(t, want, seen, "every job listed once")
	require.GreaterOrEqual(t, pages, 3, "seven 20 KiB jobs do not fit in one 64 KiB page")
}
