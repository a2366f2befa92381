package hub

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/agent"
	"github.com/paprika-hub/paprika/client"
	"github.com/paprika-hub/paprika/config"
	"github.com/paprika-hub/paprika/internal/certs"
	"github.com/paprika-hub/paprika/internal/syncbuf"
	"github.com/paprika-hub/paprika/persistence"
	"sync"
)

// testCerts makes a fresh CA and a hub certificate for 127.0.0.1 in a
// temporary directory (internal/certs' file names).
func testCerts(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, certs.MakeCA(dir, false, time.Now()))
	require.NoError(t, certs.MakeHub(dir, []string{"127.0.0.1"}, false, time.Now()))
	return dir
}

// httpsHub starts a hub serving HTTPS with a certificate for 127.0.0.1
// from a fresh test CA, a worker token required; it returns the hub and
// the CA file.
func httpsHub(t *testing.T) (*Hub, string) {
	dir := testCerts(t)
	cfg := testConfig(t)
	require.NoError(t, cfg.Set("hub.tls_cert", filepath.Join(dir, certs.HubCert)))
	require.NoError(t, cfg.Set("hub.tls_key", filepath.Join(dir, certs.HubKey)))
	require.NoError(t, cfg.Set("auth.worker_token", "worker-secret"))
	require.NoError(t, cfg.Validate())
	return startTestHub(t, cfg), filepath.Join(dir, certs.CACert)
}

// runAgent runs a until the test ends.
func runAgent(t *testing.T, a *agent.Agent) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = a.Run(ctx) }()
	t.Cleanup(func() { cancel(); wg.Wait() })
}

// TestSecurityHTTPSWorkerWithCA: a hub with hub.tls_cert says https:// in
// URL; a worker given the test CA (agent CAFile, as paprika worker --ca)
// links over wss, runs a job and uploads an asset over https; the SDK with
// the CA submits, waits and lists over https.
func TestSecurityHTTPSWorkerWithCA(t *testing.T) {
	h, caFile := httpsHub(t)
	require.True(t, strings.HasPrefix(h.URL(), "https://127.0.0.1:"), h.URL())
	a, err := agent.New(agent.Config{HubURLs: []string{h.URL()}, ID: "wtls", Lanes: 1, Token: "worker-secret",
		CAFile: caFile, Logger: testLogger(t)})
	require.NoError(t, err)
	runAgent(t, a)

	pool, err := certs.LoadPool(caFile)
	require.NoError(t, err)
	c, err := client.New([]string{h.URL()}, client.WithRootCAs(pool))
	require.NoError(t, err)
	defer c.CloseIdleConnections()
	ctx := t.Context()
	j, err := c.Submit(ctx, client.SubmitRequest{Mode: "noop", Params: map[string]any{"lines": 2}}, "")
	require.NoError(t, err)
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	j, err = c.Wait(wctx, j.ID)
	require.NoError(t, err)
	require.Equal(t, string(persistence.StatusSucceeded), string(j.Status), "%s %s", j.Reason, j.Error)
	require.Equal(t, "wtls", j.WorkerID)
	page, err := c.List(ctx, client.ListOptions{})
	require.NoError(t, err)
	require.Len(t, page.Jobs, 1)

	// The upload client trusts the same CA as the link.
	require.NoError(t, a.UploadAsset(ctx, j.ID, "note.txt", "text/plain", strings.NewReader("over tls"), 8))
	rc, _, err := c.Asset(ctx, j.ID, "note.txt")
	require.NoError(t, err)
	b, _ := io.ReadAll(rc)
	rc.Close()
	require.Equal(t, "over tls", string(b))
}

// TestSecurityHTTPSWithoutCAFailsTheHandshake: a worker and a client that
// do not trust the hub's CA never get past the TLS handshake, and a plain
// http:// request to the TLS port gets no API answer.
func TestSecurityHTTPSWithoutCAFailsTheHandshake(t *testing.T) {
	h, _ := httpsHub(t)
	var logs syncbuf.Buffer
	a, err := agent.New(agent.Config{HubURLs: []string{h.URL()}, ID: "wnoca", Lanes: 1, Token: "worker-secret",
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	require.NoError(t, err)
	runAgent(t, a)
	require.Eventually(t, func() bool {
		return strings.Contains(logs.String(), "certificate signed by unknown authority")
	}, 10*time.Second, 20*time.Millisecond, "agent log: %s", logs.String())
	ws, err := h.Workers(t.Context())
	require.NoError(t, err)
	require.Empty(t, ws, "no link without the CA")

	c, err := client.New([]string{h.URL()}, client.WithMaxAttempts(1))
	require.NoError(t, err)
	_, err = c.List(t.Context(), client.ListOptions{})
	var unknown x509.UnknownAuthorityError
	require.True(t, errors.As(err, &unknown), "%v", err)

	// Another CA's pool is refused as well.
	dir := t.TempDir()
	require.NoError(t, certs.MakeCA(dir, false, time.Now()))
	other, err := certs.LoadPool(filepath.Join(dir, certs.CACert))
	require.NoError(t, err)
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: other}}
	defer tr.CloseIdleConnections()
	_, err = (&http.Client{Transport: tr}).Get(h.URL() + "/healthz")
	require.True(t, errors.As(err, &unknown), "%v", err)

	res, err := http.Get("http://" + strings.TrimPrefix(h.URL(), "https://") + "/healthz")
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusBadRequest, res.StatusCode, "Go's answer to plain HTTP on a TLS port")
}

// TestSecurityHubTLSConfigRefused: a hub whose tls_cert has no tls_key
// does not start, and says which key is missing.
func TestSecurityHubTLSConfigRefused(t *testing.T) {
	cfg := testConfig(t)
	cfg.Hub.TLSCert = "/nonexistent/hub.crt"
	_, err := New(cfg, testLogger(t))
	var ke *config.KeyError
	require.True(t, errors.As(err, &ke), "%v", err)
	require.Contains(t, err.Error(), "hub.tls_key: required")
}
