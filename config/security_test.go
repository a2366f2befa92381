package config

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSecurityOpenListenNeedsTokensOrInsecure: the open default (no tokens)
// is refused on a non-loopback hub.listen, in one line naming both token
// keys and auth.insecure, unless auth.insecure is set; loopback stays open.
func TestSecurityOpenListenNeedsTokensOrInsecure(t *testing.T) {
	t.Parallel()
	for _, listen := range []string{"127.0.0.1:8080", "[::1]:8080", "localhost:0"} {
		c := Default()
		c.Hub.Listen = listen
		require.NoError(t, c.Validate(), listen)
	}
	for _, listen := range []string{":8080", "0.0.0.0:8080", "10.0.0.5:80", "hub1:8080"} {
		c := Default()
		c.Hub.Listen = listen
		err := c.Validate()
		require.Error(t, err, listen)
		var ke *KeyError
		require.True(t, errors.As(err, &ke))
		require.Equal(t, "hub.listen", ke.Key)
		require.NotContains(t, err.Error(), "\n", "one line")
		for _, want := range []string{"auth.api_token", "auth.worker_token", "auth.insecure", "PAPRIKA_AUTH_INSECURE"} {
			require.Contains(t, err.Error(), want)
		}

		c.Auth.APIToken = "a" // one token is not enough: the worker link stays open
		require.ErrorContains(t, c.Validate(), "auth.worker_token is empty", listen)
		c.Auth.WorkerToken = "w"
		require.NoError(t, c.Validate(), listen)
	}

	c, err := Load(writeFile(t, "hub:\n  listen: 0.0.0.0:8080\n"), []string{"PAPRIKA_AUTH_INSECURE=true"})
	require.NoError(t, err)
	require.True(t, c.Auth.Insecure)
	require.Equal(t, "env PAPRIKA_AUTH_INSECURE", c.Origin("auth.insecure"))
	require.NoError(t, c.Validate())
}
