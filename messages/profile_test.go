package messages

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestProfileNamesAndStates(t *testing.T) {
	for _, ok := range []string{"alice", "a", "team-1_x", strings.Repeat("a", MaxProfileNameLen)} {
		require.NoError(t, CheckProfileName(ok), ok)
	}
	for _, bad := range []string{"", "Alice", "-a", "a.b", "a/b", "..", strings.Repeat("a", MaxProfileNameLen+1)} {
		require.Error(t, CheckProfileName(bad), bad)
	}
	require.Equal(t, "alice", ProfileOf([]byte(`{"url":"http://x/","profile":"alice"}`)))
	require.Empty(t, ProfileOf([]byte(`{"url":"http://x/"}`)))
	require.Empty(t, ProfileOf([]byte(`{"profile":"../x"}`)), "an invalid name is no profile")
	require.Error(t, BrowserOptions{Profile: "a b"}.Validate())

	st, err := ParseProfileState([]byte(`{"cookies":[{"name":"sid","value":"1","domain":"x.test"}],"local_storage":{"https://x.test":{"k":"v"}}}`))
	require.NoError(t, err)
	require.Equal(t, "v", st.LocalStorage["https://x.test"]["k"])
	for _, bad := range []string{
		`{"local_storage":{"https://x.test/path":{}}}`,
		`{"local_storage":{"file://":{}}}`,
		`{"cookies":[{"name":"","value":"1","domain":"x"}]}`,
		`{"cookies":[{"name":"a","value":"1"}]}`,
		`[]`,
	} {
		_, err := ParseProfileState([]byte(bad))
		require.Error(t, err, bad)
	}
	_, err = ParseProfileState(make([]byte, MaxProfileStateBytes+1))
	require.Error(t, err)
}
