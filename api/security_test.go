package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
)

// readyBackend answers only what /readyz needs; the embedded nil Backend
// panics if any other route reaches it.
type readyBackend struct {
	Backend
	ready map[string]error
}

func (b readyBackend) Ready(context.Context) map[string]error { return b.ready }

func (b readyBackend) MetricsHandler() http.Handler { return http.NotFoundHandler() }

// TestSecurityReadyzHidesStoreErrors: an unauthenticated probe learns which
// store is down, not its error text (addresses, users, driver internals);
// the text goes to the log, and to a caller with the API token.
func TestSecurityReadyzHidesStoreErrors(t *testing.T) {
	secret := errors.New("dial tcp 10.1.2.3:3306: access denied for user 'paprika'@'hub1'")
	b := readyBackend{ready: map[string]error{"jobs": secret, "logs": nil}}
	var logged bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logged, nil))
	ready := func(s *Server, hdr ...string) (int, map[string]any, string) {
		t.Helper()
		req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1/readyz", nil)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		var body struct {
			Status string         `json:"status"`
			Checks map[string]any `json:"checks"`
		}
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &body), rec.Body.String())
		require.Equal(t, "not_ready", body.Status)
		require.NotEmpty(t, rec.Header().Get("Retry-After"))
		return rec.Code, body.Checks, rec.Body.String()
	}

	for _, s := range []*Server{New(b, Options{Logger: log}), New(b, Options{Logger: log, APIToken: "at"})} {
		st, checks, raw := ready(s)
		require.Equal(t, http.StatusServiceUnavailable, st)
		require.Equal(t, map[string]any{"jobs": "unavailable", "logs": "ok"}, checks)
		require.NotContains(t, raw, "10.1.2.3")
		st, _, raw = ready(s, "Authorization", "Bearer wrong")
		require.Equal(t, http.StatusServiceUnavailable, st, "a probe with a wrong token is still a probe")
		require.NotContains(t, raw, "10.1.2.3")
	}
	require.Contains(t, logged.String(), "10.1.2.3", "the operator finds the cause in the log")

	_, checks, _ := ready(New(b, Options{Logger: log, APIToken: "at"}), "Authorization", "Bearer at")
	require.Equal(t, secret.Error(), checks["jobs"], "the API token shows the details")
}

// TestSecurityAllowedHost pins guardHost's rule at the edges the hub tests
// do not reach (TestSecurityOpenHubChecksHost there covers the wiring).
func TestSecurityAllowedHost(t *testing.T) {
	for _, h := range []string{"localhost", "localhost.", "localhost:80", "127.0.0.1", "127.0.0.1:1", "[::1]:8080", "::1",
		"192.168.1.10:8080", "hub.example", "HUB.example:443"} {
		require.True(t, allowedHost(h, "hub.example"), h)
	}
	for _, h := range []string{"", ":80", "evil.example", "hub.example.evil.example", "localhost.evil.example", "127.0.0.1.nip.io"} {
		require.False(t, allowedHost(h, "hub.example"), h)
	}
	require.False(t, allowedHost("hub.example", ""), "no advertise_url: names other than localhost are refused")
}
