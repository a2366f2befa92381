package jsonenc

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestAsEncodingJSON: strings and times are written byte for byte as
// encoding/json writes them, and a time is refused where it is refused.
func TestAsEncodingJSON(t *testing.T) {
	for _, s := range []string{"", "w50150", `w"1\`, "<lane>&", "line\nnext\ttab \x01", "\u2028 é ☃", "w\xff\xfe", "\x7f"} {
		want, err := json.Marshal(s)
		require.NoError(t, err)
		require.Equal(t, string(want), string(AppendString(nil, s)), "%q", s)
	}
	at := time.Date(2026, 12, 7, 10, 11, 12, 123456000, time.UTC)
	for _, tm := range []time.Time{{}, at, at.Truncate(time.Second), at.In(time.FixedZone("x", 9*3600))} {
		want, err := json.Marshal(tm)
		require.NoError(t, err)
		got, err := AppendTime(nil, tm)
		require.NoError(t, err)
		require.Equal(t, string(want), string(got))
	}
	_, err := AppendTime(nil, time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC))
	require.Error(t, err)
}
