package hub

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/agent"
	"github.com/paprika-hub/paprika/agent/chromium"
	"github.com/paprika-hub/paprika/internal/credential"
	"github.com/paprika-hub/paprika/persistence"
	"github.com/paprika-hub/paprika/persistence/storetest"
)

// startChromiumAgentAs runs a one-lane Chromium worker linking as id with
// token, wired to the hub as `paprika worker` is: job assets, session
// downloads and profiles go through the hub.
func startChromiumAgentAs(t *testing.T, url, id, token string) {
	startChromiumAgentLanes(t, url, id, token, 1)
}

// startChromiumAgentLanes is startChromiumAgentAs with lanes lanes (each
// its own browser process).
func startChromiumAgentLanes(t *testing.T, url, id, token string, lanes int) {
	if _, err := chromium.LookPath(""); err != nil {
		storetest.Unavailable(t, "chromium", err)
	}
	var a *agent.Agent
	drv, err := chromium.New(chromium.Config{Lanes: lanes, WorkDir: t.TempDir(), Logger: testLogger(t),
		Upload: func(ctx context.Context, jobID, name, ct string, r io.Reader, size int64) error {
			return a.UploadAsset(ctx, jobID, name, ct, r, size)
		},
		SessionUpload: func(ctx context.Context, sessionID, name, ct string, r io.Reader, size int64) error {
			return a.UploadSessionDownload(ctx, sessionID, name, ct, r, size)
		},
		ProfileLoad: func(ctx context.Context, name, jobID string, attempt int) ([]byte, error) {
			return a.LoadProfile(ctx, name, jobID, attempt)
		},
		ProfileSave: func(ctx context.Context, name, jobID string, attempt int, state []byte) error {
			return a.SaveProfile(ctx, name, jobID, attempt, state)
		}})
	require.NoError(t, err)
	a, err = agent.New(agent.Config{HubURLs: []string{url}, ID: id, Token: token, Lanes: lanes, DriverImpl: drv, Logger: testLogger(t)})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = a.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait(); _ = drv.Close() })
}

// TestSessionAndJobDownloadsThroughTheHub: with per-worker credentials, a
// macro job's download is served as the job's asset downloads/file.bin and
// a command session's download is listed and served under the session;
// a worker that does not hold the session cannot add to it.
func TestSessionAndJobDownloadsThroughTheHub(t *testing.T) {
	if testing.Short() {
		t.Skip("drives Chromium; skipped with -short")
	}
	const secret = "test-worker-secret-0123456789"
	file := []byte("\x00\x01 a download, byte for byte \xff")
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/file.bin" {
			w.Header().Set("Content-Type", "application/octet-stream")
			_, _ = w.Write(file)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<!doctype html><title>dl</title><a id="dl" download href="/file.bin">get</a>`)
	}))
	t.Cleanup(site.Close)
	cfg := testConfig(t)
	require.NoError(t, cfg.Set("auth.worker_secret", secret))
	h := startTestHub(t, cfg)
	url := h.URL()
	startChromiumAgentAs(t, url, "wc", credential.Worker(secret, "wc"))
	waitLoneWorker(t, h, func(w persistence.WorkerInfo) bool { return w.Alive }, 20*time.Second, 50*time.Millisecond)

	// A macro job: the click's file is the job's asset.
	m := submit(t, url, `{"mode":"macro","params":{"steps":[
		{"op":"navigate","url":"`+site.URL+`/"},{"op":"click","selector":"#dl"}]}}`)
	got := waitFinal(t, url, m.ID, 60*time.Second)
	require.Equal(t, persistence.StatusSucceeded, got.Status, "%s %s", got.Reason, got.Error)
	require.Contains(t, got.Assets, "downloads/file.bin")
	res, err := http.Get(url + "/jobs/" + m.ID + "/assets/downloads/file.bin")
	require.NoError(t, err)
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode, string(body))
	require.Equal(t, file, body)
	require.Equal(t, `attachment; filename=file.bin`, res.Header.Get("Content-Disposition"))

	// A command session: the click's file is the session's download. The
	// job's slot is freed a moment after its final state is stored.
	waitLoneWorker(t, h, func(w persistence.WorkerInfo) bool { return w.InFlight == 0 }, 20*time.Second, 50*time.Millisecond)
	id := openSession(t, url)
	for _, c := range []string{`{"op":"navigate","url":"` + site.URL + `/"}`, `{"op":"click","selector":"#dl"}`} {
		st, b := do(t, "POST", url+"/sessions/"+id+"/commands", c)
		require.Equal(t, http.StatusOK, st, "%s: %s", c, b)
	}
	type listed struct {
		Downloads []struct {
			Name  string `json:"name"`
			Bytes int64  `json:"bytes"`
			URL   string `json:"url"`
		} `json:"downloads"`
	}
	var l listed
	require.Eventually(t, func() bool {
		st, b := do(t, "GET", url+"/sessions/"+id+"/downloads", "")
		require.Equal(t, http.StatusOK, st, string(b))
		require.NoError(t, json.Unmarshal(b, &l))
		return len(l.Downloads) == 1
	}, 20*time.Second, 50*time.Millisecond)
	require.Equal(t, "file.bin", l.Downloads[0].Name)
	require.EqualValues(t, len(file), l.Downloads[0].Bytes)
	require.Equal(t, "/sessions/"+id+"/downloads/file.bin", l.Downloads[0].URL)

	res, err = http.Get(url + l.Downloads[0].URL)
	require.NoError(t, err)
	body, _ = io.ReadAll(res.Body)
	res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode, string(body))
	require.Equal(t, file, body)
	require.Equal(t, "nosniff", res.Header.Get("X-Content-Type-Options"))
	require.Equal(t, "sandbox", res.Header.Get("Content-Security-Policy"))
	require.Equal(t, `attachment; filename=file.bin`, res.Header.Get("Content-Disposition"))

	// Another worker's credential may not add to the session; the holder's may.
	st, b := do(t, "PUT", url+"/sessions/"+id+"/downloads/evil.html", "<script>1</script>",
		"Content-Type", "text/html", "Authorization", "Bearer "+credential.Worker(secret, "w-other"))
	require.Equal(t, http.StatusForbidden, st, string(b))
	require.Contains(t, string(b), "not_holder")
	st, b = do(t, "PUT", url+"/sessions/"+id+"/downloads/second.txt", "2",
		"Content-Type", "text/plain", "Authorization", "Bearer "+credential.Worker(secret, "wc"))
	require.Equal(t, http.StatusNoContent, st, string(b))
	st, b = do(t, "GET", url+"/sessions/"+id+"/downloads", "")
	require.Equal(t, http.StatusOK, st)
	require.NoError(t, json.Unmarshal(b, &l))
	require.Len(t, l.Downloads, 2, "the refused upload stored nothing: %s", b)

	// The job routes do not reach a session's files.
	st, _ = do(t, "GET", url+"/jobs/"+id+"/assets/downloads/file.bin", "")
	require.Equal(t, http.StatusNotFound, st)

	// Once the session is closed its worker no longer holds it; its files stay.
	st, b = do(t, "DELETE", url+"/sessions/"+id, "")
	require.Equal(t, http.StatusOK, st, string(b))
	st, b = do(t, "PUT", url+"/sessions/"+id+"/downloads/late.txt", "3",
		"Content-Type", "text/plain", "Authorization", "Bearer "+credential.Worker(secret, "wc"))
	require.Contains(t, []int{http.StatusForbidden, http.StatusNotFound}, st, string(b))
	st, _ = do(t, "GET", url+l.Downloads[0].URL, "")
	require.Equal(t, http.StatusOK, st)
}

// TestFetchPDFAndFullPageTypes: the hub refuses a fetch whose pdf or
// full_page is not a boolean, naming the field.
func TestFetchPDFAndFullPageTypes(t *testing.T) {
	h := startTestHub(t, testConfig(t))
	for field, params := range map[string]string{"pdf": `"pdf":"yes"`, "full_page": `"full_page":[true]`} {
		st, b := do(t, "POST", h.URL()+"/jobs", `{"mode":"fetch","params":{"url":"https://example.org/",`+params+`}}`)
		require.Equal(t, http.StatusBadRequest, st, string(b))
		require.Contains(t, string(b), "params."+field, string(b))
	}
	st, b := do(t, "POST", h.URL()+"/jobs", `{"mode":"fetch","params":{"url":"https://example.org/","pdf":true,"full_page":true}}`)
	require.Equal(t, http.StatusCreated, st, string(b))
}
