package agent

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSecurityTokenNotSentInClearToARemoteHub: a worker with a token and a
// plain http:// or ws:// hub URL off the machine is refused by New, before
// any dial, in one line naming the URL; loopback, https, no token or
// Insecure pass.
func TestSecurityTokenNotSentInClearToARemoteHub(t *testing.T) {
	t.Parallel()
	for _, u := range []string{"http://10.1.2.3:8080", "ws://hub-a.internal:8080", "http://[fe80::1]:8080", "http://0.0.0.0:8080"} {
		_, err := New(Config{HubURLs: []string{u}, Token: "tok", Logger: testLogger(t)})
		require.True(t, errors.Is(err, ErrInsecureHub), "%s: %v", u, err)
		require.NotContains(t, err.Error(), "\n", "one line")
		require.Contains(t, err.Error(), u)
		require.Contains(t, err.Error(), "--insecure")
	}
	_, err := New(Config{HubURLs: []string{"http://127.0.0.1:1", "http://10.1.2.3:8080", "http://10.1.2.4:8080"}, Token: "tok"})
	require.ErrorIs(t, err, ErrInsecureHub)
	require.NotContains(t, err.Error(), "\n", "every URL in one line")
	require.Contains(t, err.Error(), "http://10.1.2.3:8080, http://10.1.2.4:8080")

	ok := []Config{
		{HubURLs: []string{"http://127.0.0.1:8080", "http://127.9.9.9:8080", "ws://[::1]:8080", "http://localhost:8080", "http://LOCALHOST:1"}, Token: "tok"},
		{HubURLs: []string{"https://10.1.2.3:8443", "wss://hub-a.internal"}, Token: "tok"},
		{HubURLs: []string{"http://10.1.2.3:8080"}},                               // nothing secret to send
		{HubURLs: []string{"http://10.1.2.3:8080"}, Token: "tok", Insecure: true}, // said so
	}
	for _, c := range ok {
		c.Logger = testLogger(t)
		_, err := New(c)
		require.NoError(t, err, "%v", c.HubURLs)
	}
}

// TestSecurityAgentCAFile: a CA file that cannot be read or holds no
// certificate stops New with a message naming ca.
func TestSecurityAgentCAFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk.pem")
	require.NoError(t, os.WriteFile(junk, []byte("junk"), 0o600))
	_, err := New(Config{HubURLs: []string{"https://127.0.0.1:1"}, CAFile: junk})
	require.EqualError(t, err, "worker config: ca: "+junk+" holds no PEM certificate")
	_, err = New(Config{HubURLs: []string{"https://127.0.0.1:1"}, CAFile: filepath.Join(dir, "nope.pem")})
	require.ErrorContains(t, err, "worker config: ca: open "+filepath.Join(dir, "nope.pem"))
}
