package hub

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The trust-boundary tests: `make security` runs every TestSecurity….

// errCode is the code of an API error body (api/errors.go's shape).
func errCode(t *testing.T, b []byte) string {
	t.Helper()
	var e struct {
		Error struct{ Code, Message string }
	}
	require.NoError(t, json.Unmarshal(b, &e), string(b))
	require.NotEmpty(t, e.Error.Message, string(b))
	return e.Error.Code
}

// get sends a GET with optional header pairs ("Host" sets the Host header).
func get(t *testing.T, url string, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "Host" {
			req.Host = hdr[i+1]
			continue
		}
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, b
}

// TestSecurityAssetsCannotScriptTheOrigin: a page a worker fetched and
// stored is served inert: nosniff, a sandbox CSP, and active types (by
// content type or by name) as attachments; images stay inline.
func TestSecurityAssetsCannotScriptTheOrigin(t *testing.T) {
	cfg := testConfig(t)
	require.NoError(t, cfg.Set("auth.worker_token", "wt"))
	h := startTestHub(t, cfg)
	j := submit(t, h.URL(), `{"mode":"noop"}`)
	put := func(name, ct, body string) {
		t.Helper()
		st, b := do(t, "PUT", h.URL()+"/jobs/"+j.ID+"/assets/"+name, body, "Authorization", "Bearer wt", "Content-Type", ct)
		require.Equal(t, http.StatusNoContent, st, "the worker's upload keeps its own content type: %s", b)
	}
	put("page.html", "text/html", `<html><script>alert(document.cookie)</script></html>`)
	put("logo.svg", "text/plain", `<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>`)
	put("feed", "application/atom+xml", `<feed/>`)
	put("screenshot.png", "image/png", "\x89PNG\r\n\x1a\n")
	put("blob", "", "<html><script>alert(1)</script>")

	for _, tc := range []struct{ name, ct, disposition string }{
		{"page.html", "text/html", "attachment"},       // by content type and name
		{"logo.svg", "text/plain", "attachment"},       // by name
		{"feed", "application/atom+xml", "attachment"}, // by content type (+xml)
		{"screenshot.png", "image/png", "inline"},
		{"blob", "application/octet-stream", "inline"}, // never sniffed into text/html
	} {
		res, _ := get(t, h.URL()+"/jobs/"+j.ID+"/assets/"+tc.name)
		require.Equal(t, http.StatusOK, res.StatusCode, tc.name)
		require.Equal(t, tc.ct, res.Header.Get("Content-Type"), tc.name)
		require.Equal(t, "nosniff", res.Header.Get("X-Content-Type-Options"), tc.name)
		require.Equal(t, "sandbox", res.Header.Get("Content-Security-Policy"), tc.name)
		require.Equal(t, tc.disposition+`; filename=`+tc.name, res.Header.Get("Content-Disposition"), tc.name)
	}
}

// TestSecurityBadAssetNameIs400: a name no asset store could hold is the
// caller's fault, on download and on upload.
func TestSecurityBadAssetNameIs400(t *testing.T) {
	cfg := testConfig(t)
	require.NoError(t, cfg.Set("auth.worker_token", "wt"))
	h := startTestHub(t, cfg)
	j := submit(t, h.URL(), `{"mode":"noop"}`)
	for _, name := range []string{".hidden", "a%5Cb", "a%2Fb", strings.Repeat("n", 201)} {
		st, b := do(t, "GET", h.URL()+"/jobs/"+j.ID+"/assets/"+name, "")
		require.Equal(t, http.StatusBadRequest, st, "%s: %s", name, b)
		require.Equal(t, "bad_asset_name", errCode(t, b))
		st, b = do(t, "PUT", h.URL()+"/jobs/"+j.ID+"/assets/"+name, "x", "Authorization", "Bearer wt", "Content-Type", "text/plain")
		require.Equal(t, http.StatusBadRequest, st, "%s: %s", name, b)
		require.Equal(t, "bad_asset_name", errCode(t, b))
	}
}

// TestSecurityStateChangesNeedJSON: a cross-site form or no-cors fetch
// cannot set application/json, so every state-changing API request without
// it is 415 — a body-less cancel included. The worker's asset upload keeps
// its own type (TestSecurityAssetsCannotScriptTheOrigin).
func TestSecurityStateChangesNeedJSON(t *testing.T) {
	h := startTestHub(t, testConfig(t))
	j := submit(t, h.URL(), `{"mode":"noop"}`)
	for _, ct := range []string{"", "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/jsonx"} {
		for _, r := range []struct{ method, path, body string }{
			{"POST", "/jobs", `{"mode":"noop"}`},
			{"POST", "/jobs/" + j.ID + "/cancel", ""},
			{"PATCH", "/workers/nobody", `{"status":"drain"}`},
			{"POST", "/sessions", `{}`},
			{"POST", "/sessions/s-x/commands", `{"op":"text"}`},
			{"DELETE", "/sessions/s-x", ""},
		} {
			st, b := do(t, r.method, h.URL()+r.path, r.body, "Content-Type", ct)
			require.Equal(t, http.StatusUnsupportedMediaType, st, "%s %s with %q: %s", r.method, r.path, ct, b)
			require.Equal(t, "unsupported_media_type", errCode(t, b))
		}
	}
	require.Equal(t, "queued", string(getJob(t, h.URL(), j.ID).Status), "no refused cancel went through")
	st, b := do(t, "POST", h.URL()+"/jobs", `{"mode":"noop"}`, "Content-Type", "application/json; charset=utf-8")
	require.Equal(t, http.StatusCreated, st, string(b))
}

// TestSecurityOpenHubChecksHost: with no API token, a Host that is not
// loopback, an IP or hub.advertise_url's host is refused (DNS rebinding);
// with a token the token protects and any Host is served.
func TestSecurityOpenHubChecksHost(t *testing.T) {
	cfg := testConfig(t)
	require.NoError(t, cfg.Set("hub.advertise_url", "http://paprika.internal:9999"))
	h := startTestHub(t, cfg)
	base := "http://" + h.listener.Addr().String()
	for _, host := range []string{"localhost", "localhost:8080", "LOCALHOST:1", "127.0.0.1:8080", "[::1]:8080", "10.0.0.5:8080",
		"paprika.internal", "paprika.internal:9999", "Paprika.Internal:80"} {
		res, b := get(t, base+"/jobs", "Host", host)
		require.Equal(t, http.StatusOK, res.StatusCode, "%s: %s", host, b)
	}
	for _, host := range []string{"attacker.example", "attacker.example:8080", "localhost.attacker.example", "paprika.internal.attacker.example"} {
		for _, path := range []string{"/jobs", "/ui/", "/readyz"} {
			res, b := get(t, base+path, "Host", host)
			require.Equal(t, http.StatusMisdirectedRequest, res.StatusCode, "%s %s: %s", host, path, b)
			require.Equal(t, "bad_host", errCode(t, b))
		}
	}

	// One remote at a time: two live in one process trip protoactor's race
	// on gRPC's global logger under -race (see the Makefile's test target).
	require.NoError(t, h.Stop(context.Background()))
	cfg = testConfig(t)
	require.NoError(t, cfg.Set("auth.api_token", "at"))
	h = startTestHub(t, cfg)
	res, b := get(t, h.URL()+"/jobs", "Host", "attacker.example", "Authorization", "Bearer at")
	require.Equal(t, http.StatusOK, res.StatusCode, string(b))
}

// TestSecurityUIHasCSP: the console runs only the hub's own script and
// style files (no inline code at all, nothing from another origin) and
// may not be framed.
func TestSecurityUIHasCSP(t *testing.T) {
	h := startTestHub(t, testConfig(t))
	res, page := get(t, h.URL()+"/ui/")
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, "DENY", res.Header.Get("X-Frame-Options"))
	csp := res.Header.Get("Content-Security-Policy")
	require.Contains(t, csp, "default-src 'self'")
	require.Contains(t, csp, "script-src 'self';")
	require.Contains(t, csp, "style-src 'self';")
	require.Contains(t, csp, "frame-ancestors 'none'")
	require.NotContains(t, csp, "unsafe-inline")
	require.NotContains(t, string(page), "<script>", "no inline script")
	require.NotContains(t, string(page), "<style>", "no inline style")
	res, _ = get(t, h.URL()+"/ui/app.js")
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, csp, res.Header.Get("Content-Security-Policy"), "every console file carries the CSP")
}

// TestSecurityOpenListenRefused: the hub itself refuses an open API on a
// non-loopback address (config validation, so `paprika hub` exits 2 with
// one line), and starts there once auth.insecure says so.
func TestSecurityOpenListenRefused(t *testing.T) {
	cfg := testConfig(t)
	require.NoError(t, cfg.Set("hub.listen", "0.0.0.0:0"))
	_, err := New(cfg, testLogger(t))
	require.ErrorContains(t, err, "auth.insecure")
	require.ErrorContains(t, err, "auth.api_token")
	require.ErrorContains(t, err, "auth.worker_token")
	require.NoError(t, cfg.Set("auth.insecure", "true"))
	h := startTestHub(t, cfg)
	res, b := get(t, h.URL()+"/healthz")
	require.Equal(t, http.StatusOK, res.StatusCode, string(b))
}

// TestSecurityIdempotencyKeyWithAnotherBody: a key sent again with the same
// job (params compared as JSON values) answers the stored job; with another
// mode, params or labels it is 422, not a silent "yes, that one".
func TestSecurityIdempotencyKeyWithAnotherBody(t *testing.T) {
	h := startTestHub(t, testConfig(t))
	post := func(body string) (int, []byte) {
		return do(t, "POST", h.URL()+"/jobs", body, "Idempotency-Key", "same-key")
	}
	st, b := post(`{"mode":"noop","params":{"lines":2,"sleep_ms":5},"labels":{"team":"a"}}`)
	require.Equal(t, http.StatusCreated, st, string(b))
	st, b = post(`{"params":{"sleep_ms":5, "lines":2},"mode":"noop","labels":{"team":"a"}}`)
	require.Equal(t, http.StatusOK, st, "the same job, spelled differently: %s", b)
	for _, other := range []string{
		`{"mode":"noop","params":{"lines":3,"sleep_ms":5},"labels":{"team":"a"}}`,
		`{"mode":"noop","params":{"lines":2},"labels":{"team":"a"}}`,
		`{"mode":"noop","params":{"lines":2,"sleep_ms":5},"labels":{"team":"b"}}`,
		`{"mode":"noop","params":{"lines":2,"sleep_ms":5}}`,
		`{"mode":"fetch","params":{"url":"https://example.com/"},"labels":{"team":"a"}}`,
	} {
		st, b = post(other)
		require.Equal(t, http.StatusUnprocessableEntity, st, "%s: %s", other, b)
		require.Equal(t, "idempotency_key_reused", errCode(t, b))
	}
}

// TestSecurityGarbageCursorIs400: a cursor the store did not hand out is
// the caller's fault, not a 500.
func TestSecurityGarbageCursorIs400(t *testing.T) {
	h := startTestHub(t, testConfig(t))
	submit(t, h.URL(), `{"mode":"noop"}`)
	for _, c := range []string{"%25%25%25", "!!!", "AA", "a%20b"} {
		st, b := do(t, "GET", h.URL()+"/jobs?cursor="+c, "")
		require.Equal(t, http.StatusBadRequest, st, "%s: %s", c, b)
		require.Equal(t, "bad_cursor", errCode(t, b))
	}
}

// TestSecurityTrailingJSONIs400: a body is one JSON value; anything after
// it is refused rather than ignored, on every JSON body the API reads.
func TestSecurityTrailingJSONIs400(t *testing.T) {
	h := startTestHub(t, testConfig(t))
	for _, r := range []struct{ method, path, body string }{
		{"POST", "/jobs", `{"mode":"noop"}{"mode":"fetch"}`},
		{"POST", "/jobs", `{"mode":"noop"} x`},
		{"PATCH", "/workers/nobody", `{"status":"drain"} {}`},
		{"POST", "/sessions", `{} []`},
		{"POST", "/sessions/s-x/commands", `{"op":"text"} 1`},
	} {
		st, b := do(t, r.method, h.URL()+r.path, r.body)
		require.Equal(t, http.StatusBadRequest, st, "%s %s %s: %s", r.method, r.path, r.body, b)
		require.Equal(t, "bad_json", errCode(t, b))
	}
	st, b := do(t, "POST", h.URL()+"/jobs", "{\"mode\":\"noop\"}\n \n")
	require.Equal(t, http.StatusCreated, st, "trailing white space is fine: %s", b)
}

// TestSecurityBearerIsCaseInsensitive: the auth scheme is matched without
// regard to case (RFC 9110); the token itself is exact.
func TestSecurityBearerIsCaseInsensitive(t *testing.T) {
	cfg := testConfig(t)
	require.NoError(t, cfg.Set("auth.api_token", "Tok"))
	h := startTestHub(t, cfg)
	for _, a := range []string{"Bearer Tok", "bearer Tok", "BEARER Tok", "bEaReR  Tok"} {
		st, b := do(t, "GET", h.URL()+"/jobs", "", "Authorization", a)
		require.Equal(t, http.StatusOK, st, "%q: %s", a, b)
	}
	for _, a := range []string{"Bearer tok", "Basic Tok", "BearerTok", "Tok", ""} {
		st, b := do(t, "GET", h.URL()+"/jobs", "", "Authorization", a)
		require.Equal(t, http.StatusUnauthorized, st, "%q: %s", a, b)
		require.Equal(t, "unauthorized", errCode(t, b))
	}
}
