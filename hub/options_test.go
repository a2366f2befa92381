package hub

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/internal/testproxy"
	"github.com/paprika-hub/paprika/persistence"
)

// TestBrowserOptionsRefusedByTheAPI: a bad option is a 400 bad_option
// naming the field, on POST /sessions and in fetch and macro params.
func TestBrowserOptionsRefusedByTheAPI(t *testing.T) {
	h := startTestHub(t, testConfig(t))
	for _, c := range []struct{ path, body, field string }{
		{"/sessions", `{"viewport":{"width":0,"height":500}}`, "viewport.width"},
		{"/sessions", `{"idle_timeout_s":60,"proxy":{"server":"ftp://x:1"}}`, "proxy.server"},
		{"/sessions", `{"timezone":"Mars/Base"}`, "timezone"},
		{"/jobs", `{"mode":"fetch","params":{"url":"http://example.org/","viewport":{"width":50,"height":500}}}`, "params.viewport.width"},
		{"/jobs", `{"mode":"fetch","params":{"url":"http://example.org/","cookies":[{"name":"a","value":"b"}]}}`, "params.cookies[0].domain"},
		{"/jobs", `{"mode":"macro","params":{"steps":[{"op":"navigate","url":"http://x/"}],"locale":"!!"}}`, "params.locale"},
		{"/jobs", `{"mode":"macro","params":{"steps":[{"op":"eval","expression":"1"}],"block":{"resource_types":["Pictures"]}}}`, "params.block.resource_types[0]"},
	} {
		st, b := do(t, "POST", h.URL()+c.path, c.body)
		require.Equal(t, http.StatusBadRequest, st, "%s %s: %s", c.path, c.body, b)
		var e struct {
			Error struct{ Code, Message, Field string }
		}
		require.NoError(t, json.Unmarshal(b, &e))
		require.Equal(t, "bad_option", e.Error.Code, string(b))
		require.Equal(t, c.field, e.Error.Field, string(b))
		require.True(t, strings.HasPrefix(e.Error.Message, c.field+": "), string(b))
	}
	// An unknown option is still refused as before.
	st, b := do(t, "POST", h.URL()+"/jobs", `{"mode":"fetch","params":{"url":"http://example.org/","user_agnet":"x"}}`)
	require.Equal(t, http.StatusBadRequest, st, string(b))
	require.Contains(t, string(b), "user_agnet")
}

// TestBrowserOptionsThroughTheHub: a fetch job through an authenticating
// proxy succeeds, the proxy saw the credentials, and neither the API's
// job object nor the stored record holds the password in clear; a
// session opened with options shows them on its page.
func TestBrowserOptionsThroughTheHub(t *testing.T) {
	if testing.Short() {
		t.Skip("drives Chromium; skipped with -short")
	}
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<!doctype html><title>opts</title><script>window.report = JSON.stringify({ua: navigator.userAgent,
  width: innerWidth, lang: navigator.language, tz: Intl.DateTimeFormat().resolvedOptions().timeZone, cookie: document.cookie})</script>`)
	}))
	t.Cleanup(page.Close)
	const user, pass = "carol", "hub-pr0xy-Pw-77"
	proxy := testproxy.New(user, pass)
	t.Cleanup(proxy.Close)

	h := startTestHub(t, testConfig(t))
	startChromiumAgent(t, h.URL(), "wc", 1)
	waitLoneWorker(t, h, func(w persistence.WorkerInfo) bool { return w.Alive }, 20*time.Second, 20*time.Millisecond)

	body := `{"mode":"fetch","params":{"url":"` + page.URL + `/","screenshot":false,
		"proxy":{"server":"` + proxy.URL + `","username":"` + user + `","password":"` + pass + `"}}}`
	st, b := do(t, "POST", h.URL()+"/jobs", body, "Idempotency-Key", "opts-1")
	require.Equal(t, http.StatusCreated, st, string(b))
	require.NotContains(t, string(b), pass)
	var j persistence.Job
	require.NoError(t, json.Unmarshal(b, &j))
	got := waitFinal(t, h.URL(), j.ID, 60*time.Second)
	require.Equal(t, "succeeded", string(got.Status), "%s %s", got.Reason, got.Error)
	require.True(t, slices.ContainsFunc(proxy.Requests(), func(r testproxy.Request) bool { return r.Auth == "ok" && r.Username == user }),
		"the proxy saw no request with the credentials: %+v", proxy.Requests())

	for _, path := range []string{"/jobs/" + j.ID, "/jobs", "/jobs/" + j.ID + "/logs"} {
		st, b := do(t, "GET", h.URL()+path, "")
		require.Equal(t, http.StatusOK, st)
		require.NotContains(t, string(b), pass, path)
	}
	st, b = do(t, "GET", h.URL()+"/jobs/"+j.ID, "")
	require.Equal(t, http.StatusOK, st)
	require.Contains(t, string(b), `"password":"***"`)
	require.NotContains(t, string(b), "password_sealed")
	stored, err := h.stores.Jobs.Get(context.Background(), j.ID)
	require.NoError(t, err)
	require.NotContains(t, string(stored.Params), pass, "the stored record holds the password in clear")
	require.Contains(t, string(stored.Params), `"password_sealed":"ps1.`)

	// The same submission again is the same job (the stored password is
	// opened to compare); another password under the key is not.
	st, b = do(t, "POST", h.URL()+"/jobs", body, "Idempotency-Key", "opts-1")
	require.Equal(t, http.StatusOK, st, string(b))
	st, b = do(t, "POST", h.URL()+"/jobs", strings.Replace(body, pass, "other-pw", 1), "Idempotency-Key", "opts-1")
	require.Equal(t, http.StatusUnprocessableEntity, st, string(b))

	// A command session with options shows them on its page.
	st, b = do(t, "POST", h.URL()+"/sessions", `{"idle_timeout_s":60,"user_agent":"SessionUA/2","viewport":{"width":700,"height":500},
		"locale":"fr-FR","timezone":"America/Sao_Paulo","cookies":[{"name":"k","value":"v","url":"`+page.URL+`/"}]}`)
	require.Equal(t, http.StatusCreated, st, string(b))
	var sess struct{ ID string }
	require.NoError(t, json.Unmarshal(b, &sess))
	st, b = do(t, "POST", h.URL()+"/sessions/"+sess.ID+"/commands", `{"op":"navigate","url":"`+page.URL+`/"}`)
	require.Equal(t, http.StatusOK, st, string(b))
	st, b = do(t, "POST", h.URL()+"/sessions/"+sess.ID+"/commands", `{"op":"eval","expression":"window.report"}`)
	require.Equal(t, http.StatusOK, st, string(b))
	var out struct {
		Result struct{ Value string }
	}
	require.NoError(t, json.Unmarshal(b, &out))
	var rep struct {
		UA, Lang, TZ, Cookie string
		Width                int
	}
	require.NoError(t, json.Unmarshal([]byte(out.Result.Value), &rep), out.Result.Value)
	require.Equal(t, "SessionUA/2", rep.UA)
	require.Equal(t, 700, rep.Width)
	require.Equal(t, "fr-FR", rep.Lang)
	require.Equal(t, "America/Sao_Paulo", rep.TZ)
	require.Equal(t, "k=v", rep.Cookie)
	st, _ = do(t, "DELETE", h.URL()+"/sessions/"+sess.ID, "")
	require.Equal(t, http.StatusOK, st)
}
