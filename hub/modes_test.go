package hub

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/messages"
	"github.com/paprika-hub/paprika/persistence"
)

const pdfDiffSchema = `{"type":"object","required":["url"],"properties":{"url":{"type":"string","pattern":"^https?://"},"threshold":{"type":"number","minimum":0,"maximum":1}}}`

// dialRawLinkModes links a raw worker that declares modes in hello.
func dialRawLinkModes(t *testing.T, hubURL, id string, lanes int, modes ...messages.ModeDecl) *rawLink {
	return dialRawLinkHello(t, hubURL, id, "", messages.Frame{Type: messages.TypeHello, WorkerID: id, LanIP: "127.0.0.1", Version: "test",
		Capabilities: &messages.Capabilities{MaxConcurrent: lanes, LaneURLs: laneURLs(id, lanes),
			Drivers: []string{messages.DriverSimulated}, Modes: modes},
		Stats: &messages.Stats{}})
}

type modesPage struct {
	Modes []persistence.ModeInfo `json:"modes"`
}

func getModes(t *testing.T, hubURL string) map[string]persistence.ModeInfo {
	t.Helper()
	st, b := do(t, "GET", hubURL+"/modes", "")
	require.Equal(t, http.StatusOK, st, string(b))
	var p modesPage
	require.NoError(t, json.Unmarshal(b, &p), string(b))
	out := map[string]persistence.ModeInfo{}
	for _, m := range p.Modes {
		out[m.Name] = m
	}
	return out
}

// nextAssign is the next assign_job frame on l (heartbeats' answers and
// other frames skipped); a zero Frame when none comes within d.
func nextAssign(l *rawLink, d time.Duration) messages.Frame {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		f := l.next(time.Until(deadline))
		if f.Type == messages.TypeAssignJob || f.Type == "" {
			return f
		}
	}
	return messages.Frame{}
}

// TestDeclaredModes: a worker declaring modes gets exactly those jobs and a
// worker declaring none only the built-in ones; a custom mode's params are
// checked against the declared schema (400 naming the field); a custom
// mode nobody declares waits visibly, or is refused with
// require_capacity; GET /modes lists what the fleet runs.
func TestDeclaredModes(t *testing.T) {
	h := startTestHub(t, testConfig(t))
	url := h.URL()
	plain := dialRawLink(t, url, "w-plain", 2)
	decl := dialRawLinkModes(t, url, "w-decl", 3,
		messages.ModeDecl{Name: "pdf-diff", Schema: json.RawMessage(pdfDiffSchema)},
		messages.ModeDecl{Name: "free-form"})
	waitAliveWorkers(t, h, 2)

	// The fleet's view is cached for a second: poll until it has the schema.
	var st int
	var b []byte
	require.Eventually(t, func() bool {
		st, b = do(t, "POST", url+"/jobs", `{"mode":"pdf-diff","params":{"threshold":0.5}}`)
		return st == http.StatusBadRequest
	}, 5*time.Second, 50*time.Millisecond, "%d %s", st, b)
	e := decodeAPIError(t, b)
	require.Equal(t, "bad_params", e.Error.Code)
	require.Equal(t, "params.url", e.Error.Field)
	require.Contains(t, e.Error.Message, "params.url")
	require.Contains(t, e.Error.Message, "required")
	for body, field := range map[string]string{
		`{"mode":"pdf-diff","params":{"url":"ftp://x"}}`:                   "params.url",
		`{"mode":"pdf-diff","params":{"url":"http://x","threshold":"hi"}}`: "params.threshold",
		`{"mode":"pdf-diff","params":{"url":"http://x","threshold":2}}`:    "params.threshold",
		`{"mode":"pdf-diff","params":[1]}`:                                 "params",
	} {
		st, b = do(t, "POST", url+"/jobs", body)
		require.Equal(t, http.StatusBadRequest, st, body)
		e = decodeAPIError(t, b)
		require.Equal(t, "bad_params", e.Error.Code, body)
		require.Equal(t, field, e.Error.Field, body)
	}
	st, b = do(t, "POST", url+"/jobs", `{"mode":"Not A Mode"}`)
	require.Equal(t, http.StatusBadRequest, st, string(b))
	require.Equal(t, "bad_mode", decodeAPIError(t, b).Error.Code)

	// Placement: custom jobs only on the declaring worker, noop only on
	// the plain one.
	for range 3 {
		submit(t, url, `{"mode":"pdf-diff","params":{"url":"https://example.org","threshold":0.1}}`)
	}
	submit(t, url, `{"mode":"free-form","params":{"anything":[1,2]}}`)
	for range 2 {
		submit(t, url, `{"mode":"noop","params":{"sleep_ms":60000}}`)
	}
	got := map[string]int{}
	for range 3 {
		f := nextAssign(decl, 5*time.Second)
		require.Equal(t, messages.TypeAssignJob, f.Type)
		got[f.Mode]++
	}
	require.Equal(t, map[string]int{"pdf-diff": 3}, got, "the declaring worker's 3 lanes: the oldest custom jobs first")
	for range 2 {
		f := nextAssign(plain, 5*time.Second)
		require.Equal(t, messages.TypeAssignJob, f.Type)
		require.Equal(t, messages.ModeNoop, f.Mode)
	}
	require.Empty(t, nextAssign(plain, 500*time.Millisecond).Type, "the plain worker gets no custom job though it has no other")

	// A custom mode no worker declares: it queues and says what it waits
	// for; require_capacity refuses it.
	waiting := submit(t, url, `{"mode":"http-check","params":{"url":"http://x"}}`)
	j := getJob(t, url, waiting.ID)
	require.Equal(t, persistence.StatusQueued, j.Status)
	require.Equal(t, "a worker declaring mode http-check", j.WaitingFor)
	st, b = do(t, "POST", url+"/jobs", `{"mode":"http-check","require_capacity":true}`)
	require.Equal(t, http.StatusServiceUnavailable, st, string(b))
	e = decodeAPIError(t, b)
	require.Equal(t, "no_capacity", e.Error.Code)
	require.Equal(t, "a worker declaring mode http-check", e.Error.WaitingFor)
	// A declared mode whose worker is busy is not refused: it only waits.
	st, b = do(t, "POST", url+"/jobs", `{"mode":"free-form","require_capacity":true}`)
	require.Equal(t, http.StatusCreated, st, string(b))

	modes := getModes(t, url)
	require.ElementsMatch(t, []string{"noop", "pdf-diff", "free-form"}, keys(modes))
	require.Equal(t, 1, modes["noop"].Workers)
	require.Equal(t, 2, modes["noop"].Lanes)
	require.Equal(t, "null", string(modes["noop"].Schema), "the hub checks a built-in mode's params itself")
	require.JSONEq(t, pdfDiffSchema, string(modes["pdf-diff"].Schema))
	require.Equal(t, 1, modes["pdf-diff"].Workers)
	require.Equal(t, 3, modes["pdf-diff"].Lanes)
	require.True(t, modes["free-form"].Unchecked)

	// A worker that declares http-check arrives: the waiting job goes to it.
	late := dialRawLinkModes(t, url, "w-late", 1, messages.ModeDecl{Name: "http-check"})
	f := nextAssign(late, 5*time.Second)
	require.Equal(t, messages.TypeAssignJob, f.Type)
	require.Equal(t, waiting.ID, f.JobID)
	require.Eventually(t, func() bool { return getJob(t, url, waiting.ID).WaitingFor == "" }, 5*time.Second, 50*time.Millisecond)
}

// TestDeclaredModesSchemaBound: a hello whose schemas together pass the
// bound is refused; the worker is not placed on.
func TestDeclaredModesSchemaBound(t *testing.T) {
	h := startTestHub(t, testConfig(t))
	big := json.RawMessage(`{"description":"` + repeatA(40<<10) + `"}`)
	conn, err := dialLink(h.URL(), "w-big", "")
	require.NoError(t, err)
	defer conn.Close()
	hello := messages.Frame{Type: messages.TypeHello, WorkerID: "w-big", LanIP: "127.0.0.1", Version: "test",
		Capabilities: &messages.Capabilities{MaxConcurrent: 1, LaneURLs: laneURLs("w-big", 1),
			Modes: []messages.ModeDecl{{Name: "a", Schema: big}, {Name: "b", Schema: big}}},
		Stats: &messages.Stats{}}
	bs, err := json.Marshal(hello)
	require.NoError(t, err)
	require.NoError(t, conn.WriteMessage(1, bs))
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	for {
		_, msg, err := conn.ReadMessage()
		require.NoError(t, err, "the hub answers before closing")
		f, err := messages.DecodeFrame(msg)
		require.NoError(t, err)
		require.NotEqual(t, messages.TypeWelcome, f.Type)
		if f.Type == messages.TypeError {
			require.Contains(t, f.Message, "limit 65536")
			return
		}
	}
}

func repeatA(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = 'a'
	}
	return string(b)
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
