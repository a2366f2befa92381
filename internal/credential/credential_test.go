package credential

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestWorkerCredentialIsBoundToItsID(t *testing.T) {
	const secret = "0123456789abcdef-secret"
	a := Worker(secret, "w-a")
	id, ok := WorkerID(secret, a)
	require.True(t, ok)
	require.Equal(t, "w-a", id)

	// Another id in the same credential, another secret, a cut mac or no
	// secret at all: refused.
	forged := strings.Replace(a, "w-a", "w-b", 1)
	for _, bad := range []string{forged, Worker("another-secret-0123", "w-a"), a[:len(a)-2], "w-a", "", "pw1.", "pw1..x"} {
		_, ok := WorkerID(secret, bad)
		require.False(t, ok, "%q", bad)
	}
	_, ok = WorkerID("", a)
	require.False(t, ok, "no secret, no credential")
	require.NotEqual(t, Worker(secret, "w-a"), Worker(secret, "w-b"))
}
