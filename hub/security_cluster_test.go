package hub

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/internal/certs"
	"github.com/paprika-hub/paprika/persistence"
)

// TestSecurityWorkersShowNoLink: the registry keeps the WorkerConn's actor
// address, but neither GET /workers nor PATCH /workers/{id} hands it out.
// The hub runs cluster TLS, so this is also a job end to end over it.
func TestSecurityWorkersShowNoLink(t *testing.T) {
	dir := testCerts(t)
	cfg := testConfig(t)
	require.NoError(t, cfg.Set("cluster.tls_ca", filepath.Join(dir, certs.CACert)))
	require.NoError(t, cfg.Set("cluster.tls_cert", filepath.Join(dir, certs.HubCert)))
	require.NoError(t, cfg.Set("cluster.tls_key", filepath.Join(dir, certs.HubKey)))
	require.NoError(t, cfg.Validate())
	h := startTestHub(t, cfg)
	startAgent(t, h.URL(), "wa", 1)
	j := waitFinal(t, h.URL(), submit(t, h.URL(), `{"mode":"noop","params":{"lines":2}}`).ID, 20*time.Second)
	require.Equal(t, persistence.StatusSucceeded, j.Status, "%s %s", j.Reason, j.Error)

	rec, err := h.stores.Workers.Get(context.Background(), "wa")
	require.NoError(t, err)
	require.NotEmpty(t, rec.Link, "the registry record keeps the link")

	st, body := do(t, "GET", h.URL()+"/workers", "")
	require.Equal(t, 200, st, string(body))
	var list struct {
		Workers []map[string]json.RawMessage `json:"workers"`
	}
	require.NoError(t, json.Unmarshal(body, &list))
	require.Len(t, list.Workers, 1)
	require.Contains(t, list.Workers[0], "id")
	require.NotContains(t, list.Workers[0], "link")
	require.NotContains(t, list.Workers[0], "link_started")
	require.NotContains(t, string(body), rec.Link)

	st, body = do(t, "PATCH", h.URL()+"/workers/wa", `{"status":"drain"}`)
	require.Equal(t, 200, st, string(body))
	var one map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(body, &one))
	require.Equal(t, `"drain"`, string(one["status"]))
	require.NotContains(t, one, "link")
	require.NotContains(t, one, "link_started")
}
