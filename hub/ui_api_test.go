package hub

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/persistence"
)

// TestQueryTokenOnlyWhereTheConsoleNeedsIt: with an API token, the log
// route (the console's EventSource) takes ?token=; other API routes still
// want the header; /ui/ itself is open (it holds no data) and framed
// nowhere.
func TestQueryTokenOnlyWhereTheConsoleNeedsIt(t *testing.T) {
	cfg := testConfig(t)
	require.NoError(t, cfg.Set("auth.api_token", "api-secret"))
	h := startTestHub(t, cfg)
	st, b := do(t, "POST", h.URL()+"/jobs", `{"mode":"noop"}`, "Authorization", "Bearer api-secret")
	require.Equal(t, http.StatusCreated, st, string(b))
	var j persistence.Job
	require.NoError(t, json.Unmarshal(b, &j))
	st, _ = do(t, "GET", h.URL()+"/jobs/"+j.ID+"/logs?token=api-secret", "")
	require.Equal(t, http.StatusOK, st)
	st, _ = do(t, "GET", h.URL()+"/jobs/"+j.ID+"/logs?token=wrong", "")
	require.Equal(t, http.StatusUnauthorized, st)
	st, _ = do(t, "GET", h.URL()+"/jobs/"+j.ID+"?token=api-secret", "")
	require.Equal(t, http.StatusUnauthorized, st, "?token= is for the log follow only")
	st, _ = do(t, "GET", h.URL()+"/stats/history?token=api-secret", "")
	require.Equal(t, http.StatusUnauthorized, st)
	st, _ = do(t, "GET", h.URL()+"/stats/history", "", "Authorization", "Bearer api-secret")
	require.Equal(t, http.StatusOK, st)

	res, err := http.Get(h.URL() + "/ui/")
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, "DENY", res.Header.Get("X-Frame-Options"))
	require.True(t, strings.Contains(res.Header.Get("Content-Security-Policy"), "script-src 'self';"))
}
