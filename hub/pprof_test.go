package hub

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPprofListener: debug.pprof serves the profiler on its own address,
// and only there; off by default.
func TestPprofListener(t *testing.T) {
	get := func(url string) (int, string) {
		resp, err := http.Get(url)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}

	require.Empty(t, testConfig(t).Debug.Pprof, "off by default")
	off, err := New(testConfig(t), testLogger(t))
	require.NoError(t, err)
	require.Empty(t, off.PprofURL())
	require.NoError(t, off.Stop(context.Background()))

	cfg := testConfig(t)
	require.NoError(t, cfg.Set("debug.pprof", "127.0.0.1:0"))
	h := startTestHub(t, cfg)
	require.True(t, strings.HasPrefix(h.PprofURL(), "http://127.0.0.1:"), h.PprofURL())
	code, _ := get(h.URL() + "/debug/pprof/")
	require.NotEqual(t, http.StatusOK, code, "the profiler is never on the API port")
	code, body := get(h.PprofURL() + "goroutine?debug=1")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "goroutine profile:")
	code, body = get(h.PprofURL() + "cmdline")
	require.Equal(t, http.StatusOK, code)
	require.NotEmpty(t, body)

	url := h.PprofURL()
	require.NoError(t, h.Stop(context.Background()))
	_, err = http.Get(url)
	require.Error(t, err, "the listener closes with the hub")
}

// TestPprofRefusesNetworkAddress: an address open to the network stops
// the hub before it starts, with one line naming the key.
func TestPprofRefusesNetworkAddress(t *testing.T) {
	cfg := testConfig(t)
	err := cfg.Set("debug.pprof", "0.0.0.0:6060")
	require.Error(t, err)
	require.Contains(t, err.Error(), "debug.pprof")
	require.NotContains(t, err.Error(), "\n")
	cfg.Debug.Pprof = "0.0.0.0:6060" // as a file or env var would leave it
	_, err = New(cfg, testLogger(t))
	require.ErrorContains(t, err, `debug.pprof: "0.0.0.0:6060" is not a loopback address`)
}
