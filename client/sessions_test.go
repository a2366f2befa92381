package client

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCreateSessionBody: the options travel as the top-level fields of
// POST /sessions that issue 13 spells (proxy, user_agent, viewport,
// locale, timezone, cookies, block), and zero options send an empty
// object, which the hub opens with its defaults.
func TestCreateSessionBody(t *testing.T) {
	t.Parallel()
	var bodies []string
	c, _ := setup(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		assert.Equal(t, "POST /sessions", r.Method+" "+r.URL.Path)
		assert.Equal(t, "application/json", r.Header.Get("Content-Type"))
		bodies = append(bodies, string(b))
		writeJSON(w, http.StatusCreated, map[string]any{"id": "s-1", "worker_id": "w1", "status": "open",
			"cdp_url": "ws://hub:8080/sessions/s-1/cdp", "created_at": "2026-03-04T12:00:00Z"})
	})
	s, err := c.CreateSession(t.Context(), SessionOptions{
		Labels: map[string]string{"team": "qa"}, IdleTimeoutS: 60,
		BrowserOptions: BrowserOptions{
			Proxy:     &Proxy{Server: "http://proxy:3128", Username: "u", Password: "p"},
			UserAgent: "ua/1", Viewport: &Viewport{Width: 1280, Height: 720},
			Locale: "de-DE", Timezone: "Europe/Berlin",
			Cookies: []Cookie{{Name: "a", Value: "1", Domain: "example.com", HTTPOnly: true, SameSite: "Lax"}},
			Block:   &Block{ResourceTypes: []string{"Image"}, URLPatterns: []string{"*.png"}},
		},
	})
	require.NoError(t, err)
	require.Equal(t, "ws://hub:8080/sessions/s-1/cdp", s.CDPURL)
	require.Equal(t, time.Date(2026, 3, 4, 12, 0, 0, 0, time.UTC), s.CreatedAt)
	_, err = c.CreateSession(t.Context(), SessionOptions{})
	require.NoError(t, err)

	require.Len(t, bodies, 2)
	require.JSONEq(t, `{"labels":{"team":"qa"},"idle_timeout_s":60,
		"proxy":{"server":"http://proxy:3128","username":"u","password":"p"},
		"user_agent":"ua/1","viewport":{"width":1280,"height":720},"locale":"de-DE","timezone":"Europe/Berlin",
		"cookies":[{"name":"a","value":"1","domain":"example.com","http_only":true,"same_site":"Lax"}],
		"block":{"resource_types":["Image"],"url_patterns":["*.png"]}}`, bodies[0])
	require.JSONEq(t, `{}`, bodies[1])
}

// TestCommandEncoding: each constructor sends its op's fields and no
// other, and the result decoders read what the worker answers.
func TestCommandEncoding(t *testing.T) {
	t.Parallel()
	for cmd, want := range map[*Cmd]string{
		ptr(Navigate("http://x/")):                           `{"op":"navigate","url":"http://x/"}`,
		ptr(Click("#go")):                                    `{"op":"click","selector":"#go"}`,
		ptr(Type("#q", "")):                                  `{"op":"type","selector":"#q","text":""}`,
		ptr(WaitFor("#q")):                                   `{"op":"wait","selector":"#q"}`,
		ptr(Sleep(250 * time.Millisecond)):                   `{"op":"wait","ms":250}`,
		ptr(Screenshot("")):                                  `{"op":"screenshot"}`,
		ptr(Text("h1").WithTimeout(1500 * time.Millisecond)): `{"op":"text","selector":"h1","timeout_ms":1500}`,
		ptr(Eval("1+1")):                                     `{"op":"eval","expression":"1+1"}`,
	} {
		b, err := json.Marshal(cmd)
		require.NoError(t, err)
		require.JSONEq(t, want, string(b))
	}

	var got []string
	c, _ := setup(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = append(got, r.URL.EscapedPath()+" "+string(b))
		switch string(b) {
		case `{"op":"screenshot"}`:
			writeJSON(w, http.StatusOK, map[string]any{"ok": true, "result": map[string]any{"png_base64": "iVBORw==", "bytes": 4}})
		case `{"op":"click","selector":"#gone"}`:
			writeError(w, http.StatusUnprocessableEntity, "command_failed", "click #gone: timeout")
		default:
			writeJSON(w, http.StatusOK, map[string]any{"ok": true, "result": nil})
		}
	})
	res, err := c.Command(t.Context(), "s/1", Screenshot(""))
	require.NoError(t, err)
	shot, err := res.Screenshot()
	require.NoError(t, err)
	require.Equal(t, []byte("\x89PNG"), shot)
	res, err = c.Command(t.Context(), "s-1", Click("#ok"))
	require.NoError(t, err)
	require.Equal(t, "null", res.String())
	_, _, err = res.Text()
	require.Error(t, err, "a null result has no text")
	_, err = c.Command(t.Context(), "s-1", Click("#gone"))
	require.Equal(t, "POST /sessions/s-1/commands: 422 command_failed: click #gone: timeout", err.Error())
	require.Len(t, got, 3, "a refused command is not retried")
	require.Equal(t, `/sessions/s%2F1/commands {"op":"screenshot"}`, got[0], "the id is one path segment")
}

func ptr[T any](v T) *T { return &v }
