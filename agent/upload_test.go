package agent

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/messages"
)

// assetHub answers PUT /jobs/{id}/assets/{name}: the first failures
// requests with status failWith, then 204. It records every request.
type assetHub struct {
	srv      *httptest.Server
	failWith int
	failures int

	mu   sync.Mutex
	reqs []assetReq
}

type assetReq struct {
	path, job, name, auth, contentType string
	length                             int64
	body                               []byte
}

func newAssetHub(t *testing.T, failWith, failures int, extra ...func(*http.ServeMux)) *assetHub {
	h := &assetHub{failWith: failWith, failures: failures}
	mux := http.NewServeMux()
	mux.HandleFunc("PUT /jobs/{id}/assets/{name}", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		h.reqs = append(h.reqs, assetReq{
			path: r.URL.EscapedPath(), job: r.PathValue("id"), name: r.PathValue("name"),
			auth: r.Header.Get("Authorization"), contentType: r.Header.Get("Content-Type"),
			length: r.ContentLength, body: body,
		})
		n := len(h.reqs)
		h.mu.Unlock()
		if n <= h.failures {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(h.failWith)
			_, _ = io.WriteString(w, `{"error":{"code":"test_code","message":"test message"}}`)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	for _, f := range extra {
		f(mux)
	}
	h.srv = httptest.NewServer(mux)
	t.Cleanup(h.srv.Close)
	return h
}

func (h *assetHub) requests() []assetReq {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]assetReq(nil), h.reqs...)
}

// newUploader is an agent that is never run, only used for uploads.
func newUploader(t *testing.T, hubURLs ...string) *Agent {
	a, err := New(Config{HubURLs: hubURLs, Token: "tok", LanIP: testLanIP, Logger: testLogger(t)})
	require.NoError(t, err)
	t.Cleanup(a.upload.CloseIdleConnections)
	return a
}

// onlyReader hides every method but Read.
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }

func TestUploadAssetRetriesServerErrors(t *testing.T) {
	t.Parallel()
	for name, body := range map[string]func() io.Reader{
		"bytes.Reader":        func() io.Reader { return bytes.NewReader([]byte("<html>hi</html>")) },
		"buffered plain read": func() io.Reader { return onlyReader{strings.NewReader("<html>hi</html>")} },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			hub := newAssetHub(t, http.StatusServiceUnavailable, 2)
			a := newUploader(t, hub.srv.URL+"/")
			err := a.UploadAsset(context.Background(), "j1", "page one.html", "text/html", body(), 15)
			require.NoError(t, err)
			reqs := hub.requests()
			require.Len(t, reqs, 3)
			for _, r := range reqs {
				require.Equal(t, "/jobs/j1/assets/page%20one.html", r.path)
				require.Equal(t, "page one.html", r.name)
				require.Equal(t, "Bearer tok", r.auth)
				require.Equal(t, "text/html", r.contentType)
				require.EqualValues(t, 15, r.length)
				require.Equal(t, "<html>hi</html>", string(r.body))
			}
		})
	}
}

func TestUploadAssetGivesUpOnClientErrors(t *testing.T) {
	t.Parallel()
	hub := newAssetHub(t, http.StatusNotFound, 100)
	a := newUploader(t, hub.srv.URL)
	err := a.UploadAsset(context.Background(), "j1", "a.png", "image/png", bytes.NewReader([]byte("png")), 3)
	var ue *UploadError
	require.ErrorAs(t, err, &ue)
	require.Equal(t, http.StatusNotFound, ue.StatusCode)
	require.Equal(t, "test_code", ue.Code)
	require.Equal(t, "test message", ue.Message)
	require.False(t, ue.Temporary())
	require.Len(t, hub.requests(), 1)
}

func TestUploadAssetOnceWhenBodyCannotBeReread(t *testing.T) {
	t.Parallel()
	hub := newAssetHub(t, http.StatusBadGateway, 100)
	a := newUploader(t, hub.srv.URL)
	err := a.UploadAsset(context.Background(), "j1", "big.bin", "", onlyReader{strings.NewReader("data")}, -1)
	var ue *UploadError
	require.ErrorAs(t, err, &ue)
	require.True(t, ue.Temporary())
	require.Len(t, hub.requests(), 1, "an unknown-size plain reader is sent once")

	hub = newAssetHub(t, http.StatusBadGateway, 100)
	a = newUploader(t, hub.srv.URL)
	err = a.UploadAsset(context.Background(), "j1", "big.bin", "", bytes.NewReader([]byte("data")), 4)
	require.ErrorContains(t, err, "attempt 4 of 4")
	require.Len(t, hub.requests(), uploadAttempts)
}

func TestUploadAssetStopsWithContext(t *testing.T) {
	t.Parallel()
	hub := newAssetHub(t, http.StatusServiceUnavailable, 100)
	a := newUploader(t, hub.srv.URL)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := a.UploadAsset(ctx, "j1", "a.png", "image/png", bytes.NewReader([]byte("png")), 3)
	require.ErrorIs(t, err, context.Canceled)
}

// TestUploadAssetGoesToLinkedHub: with the first hub URL dead, the agent
// links to the second, and assets follow the link.
func TestUploadAssetGoesToLinkedHub(t *testing.T) {
	t.Parallel()
	link := newFakeHub(t)
	hub := newAssetHub(t, 0, 0, func(mux *http.ServeMux) {
		mux.HandleFunc("GET /workers/{id}/link", link.serveLink)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	dead := "http://" + ln.Addr().String()
	require.NoError(t, ln.Close())

	b := setup(t, Config{HubURLs: []string{dead, hub.srv.URL}, Token: "tok"})
	link.waitType(messages.TypeHello)
	require.Equal(t, dead, b.a.cfg.HubURLs[0])
	require.NoError(t, b.a.UploadAsset(context.Background(), "j9", "x.txt", "text/plain", strings.NewReader("x"), 1))
	reqs := hub.requests()
	require.Len(t, reqs, 1)
	require.Equal(t, "j9", reqs[0].job)
	require.Equal(t, "Bearer tok", reqs[0].auth)
}

func TestAssetURL(t *testing.T) {
	t.Parallel()
	for base, want := range map[string]string{
		"http://h:1":      "http://h:1/jobs/j/assets/n.png",
		"ws://h:1/":       "http://h:1/jobs/j/assets/n.png",
		"wss://h/prefix/": "https://h/prefix/jobs/j/assets/n.png",
		"https://h/a%20b": "https://h/a%20b/jobs/j/assets/n.png",
	} {
		got, err := assetURL(base, "/jobs/", "j", "/assets/", "n.png")
		require.NoError(t, err)
		require.Equal(t, want, got, base)
	}
	got, err := assetURL("http://h", "/jobs/", "j", "/assets/", "downloads/a b.bin")
	require.NoError(t, err)
	require.Equal(t, "http://h/jobs/j/assets/downloads%2Fa%20b.bin", got, "the name is one escaped element")
	got, err = assetURL("http://h", "/sessions/", "s-1", "/downloads/", "f.bin")
	require.NoError(t, err)
	require.Equal(t, "http://h/sessions/s-1/downloads/f.bin", got)
	_, err = assetURL("ftp://h", "/jobs/", "j", "/assets/", "n")
	require.Error(t, err)
	require.False(t, errors.Is(err, context.Canceled))
}
