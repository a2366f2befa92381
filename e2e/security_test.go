package e2e

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/client"
)

// TestSecurityFleetOnClusterTLS (not TestSecurityCluster*, which the
// Makefile's second pass runs again): two hub processes on cluster TLS, with
// certificates made by `paprika certs`, form one cluster: a job submitted
// through either hub runs on a worker of the other (grain calls and the
// worker link's messages cross remoting), and no answer carries a link.
func TestSecurityFleetOnClusterTLS(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{{"certs", "ca", "--dir", dir}, {"certs", "hub", "--dir", dir, "--host", "127.0.0.1,localhost"}} {
		out, err := exec.Command(clusterBinary, args...).CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	f := newFleetWith(t, 2, func(env []string) []string {
		return append(env,
			"PAPRIKA_CLUSTER_TLS_CA="+filepath.Join(dir, "ca.crt"),
			"PAPRIKA_CLUSTER_TLS_CERT="+filepath.Join(dir, "hub.crt"),
			"PAPRIKA_CLUSTER_TLS_KEY="+filepath.Join(dir, "hub.key"))
	})
	f.startWorkers(2, 2)
	ctx := context.Background()
	var ids []string
	for i, u := range f.urls {
		c, err := client.New([]string{u})
		require.NoError(t, err)
		for range 10 {
			j, err := c.Submit(ctx, client.SubmitRequest{Mode: "noop", Params: map[string]any{"lines": 3}}, "")
			require.NoError(t, err, "via hub%d", i)
			ids = append(ids, j.ID)
		}
	}
	ran := map[string]int{}
	for _, j := range f.checkInvariants(ids, 3, false) {
		ran[j.WorkerID]++
	}
	require.Len(t, ran, 2, "both workers, one per hub, ran jobs: %v", ran)
	for _, u := range f.urls {
		var ws struct {
			Workers []map[string]any `json:"workers"`
		}
		getJSON(t, u+"/workers", &ws)
		require.Len(t, ws.Workers, 2)
		for _, w := range ws.Workers {
			require.NotContains(t, w, "link")
			require.NotContains(t, w, "link_started")
		}
	}
}
