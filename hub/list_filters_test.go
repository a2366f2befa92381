package hub

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/persistence"
)

func listIDs(t *testing.T, hubURL, query string) []string {
	t.Helper()
	var out []string
	cursor := ""
	for {
		q := query + "&limit=1"
		if cursor != "" {
			q += "&cursor=" + url.QueryEscape(cursor)
		}
		st, b := do(t, "GET", hubURL+"/jobs?"+q, "")
		require.Equal(t, http.StatusOK, st, string(b))
		var page struct {
			Jobs       []persistence.Job `json:"jobs"`
			NextCursor string            `json:"next_cursor"`
		}
		require.NoError(t, json.Unmarshal(b, &page))
		for _, j := range page.Jobs {
			out = append(out, j.ID)
		}
		if page.NextCursor == "" {
			return out
		}
		cursor = page.NextCursor
	}
}

// TestJobListFilters: GET /jobs by mode, worker, label and reason, paged;
// status=failed&reason=job_error is the dead view; bad values are 400s
// naming the parameter.
func TestJobListFilters(t *testing.T) {
	h := startTestHub(t, testConfig(t))
	u := h.URL()
	startAgent(t, u, "wa", 2)
	ok1 := submit(t, u, `{"mode":"noop","labels":{"team":"qa","run":"1"}}`)
	bad1 := submit(t, u, `{"mode":"noop","params":{"fail":true},"labels":{"team":"qa"}}`)
	bad2 := submit(t, u, `{"mode":"noop","params":{"fail":true},"labels":{"team":"ops"}}`)
	for _, j := range []persistence.Job{ok1, bad1, bad2} {
		waitFinal(t, u, j.ID, 20*time.Second)
	}
	custom := submit(t, u, `{"mode":"pdf-diff","labels":{"team":"qa"}}`) // no worker declares it: queued

	require.Equal(t, []string{custom.ID}, listIDs(t, u, "mode=pdf-diff"))
	require.Equal(t, []string{bad2.ID, bad1.ID, ok1.ID}, listIDs(t, u, "mode=noop"))
	require.Equal(t, []string{bad2.ID, bad1.ID, ok1.ID}, listIDs(t, u, "worker=wa"))
	require.Equal(t, []string{custom.ID, bad1.ID, ok1.ID}, listIDs(t, u, "label=team%3Dqa"))
	require.Equal(t, []string{ok1.ID}, listIDs(t, u, "label=team%3Dqa&label=run%3D1"))
	require.Equal(t, []string{bad2.ID, bad1.ID}, listIDs(t, u, "status=failed&reason=job_error"), "the dead view")
	require.Equal(t, []string{bad1.ID}, listIDs(t, u, "status=failed&reason=job_error&label=team%3Dqa&worker=wa&mode=noop"))
	require.Empty(t, listIDs(t, u, "reason=worker_lost"))

	for q, param := range map[string]string{
		"mode=Not%20A%20Mode":     "mode",
		"worker=w%24":             "worker",
		"reason=tired":            "reason",
		"label=team":              "label",
		"label=%3Dqa":             "label",
		"label=a%3D1&label=a%3D2": "label",
	} {
		st, b := do(t, "GET", u+"/jobs?"+q, "")
		require.Equal(t, http.StatusBadRequest, st, q)
		var e struct {
			Error struct {
				Code, Message, Parameter string
			}
		}
		require.NoError(t, json.Unmarshal(b, &e), q)
		require.Equal(t, param, e.Error.Parameter, q)
		require.Contains(t, e.Error.Message, param, q)
	}
}
