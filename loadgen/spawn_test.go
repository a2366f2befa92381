package loadgen_test

import (
	"context"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/loadgen"
)

// TestSpawnHub starts this test binary as a fake hub, waits for /healthz
// and stops it with SIGTERM.
func TestSpawnHub(t *testing.T) {
	t.Parallel()
	bin, err := os.Executable()
	require.NoError(t, err)
	h, err := loadgen.SpawnHub(context.Background(), loadgen.SpawnOptions{
		Binary: bin, Args: []string{"--log-level", "warn"},
		Env: append(os.Environ(), fakeHubEnv+"=ok"),
	})
	require.NoError(t, err)
	require.Positive(t, h.PID)
	res, err := (&http.Client{Timeout: 5 * time.Second}).Get(h.URL + "/healthz")
	require.NoError(t, err)
	require.NoError(t, res.Body.Close())
	require.Equal(t, http.StatusOK, res.StatusCode)

	log, err := os.ReadFile(h.LogPath)
	require.NoError(t, err)
	require.Contains(t, string(log), "--log-level warn", "extra args pass through")
	require.Contains(t, string(log), "paprika-bench-hub-", "embedded stores go to a temporary directory")

	require.NoError(t, h.Stop(10*time.Second))
	require.NoError(t, h.Stop(10*time.Second), "Stop is safe twice")
	_, err = os.Stat(h.LogPath)
	require.ErrorIs(t, err, os.ErrNotExist, "a clean stop removes the log")
}

func TestSpawnHubThatFails(t *testing.T) {
	t.Parallel()
	bin, err := os.Executable()
	require.NoError(t, err)
	_, err = loadgen.SpawnHub(context.Background(), loadgen.SpawnOptions{
		Binary: bin, Env: append(os.Environ(), fakeHubEnv+"=fail"), ReadyTimeout: 10 * time.Second,
		LogDir: t.TempDir(), // the failed hub's log is kept
	})
	require.ErrorContains(t, err, "exited at start")
	require.ErrorContains(t, err, "fake hub fail", "the error carries the hub's last words")
}
