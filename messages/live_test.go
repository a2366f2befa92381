package messages

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLiveIDs(t *testing.T) {
	id := NewLiveID(LiveIdentity(LiveKindJob, "01ABC"))
	identity, kind, target, ok := ParseLiveID(id)
	require.True(t, ok, id)
	require.Equal(t, "job.01ABC", identity)
	require.Equal(t, LiveKindJob, kind)
	require.Equal(t, "01ABC", target)
	for _, bad := range []string{"", "job.x", "pod.x.y", "job..y", "job.x.y.z", "job.x/y.z", "session.a." + strings.Repeat("a", 130)} {
		_, _, _, ok := ParseLiveID(bad)
		require.False(t, ok, bad)
	}
}

func TestDecodeLiveOpen(t *testing.T) {
	id := NewLiveID(LiveIdentity(LiveKindSession, "s-1"))
	f, err := DecodeFrame([]byte(`{"type":"live_open","session_id":"s-1","live_id":"` + id + `"}`))
	require.NoError(t, err)
	require.Equal(t, id, f.LiveID)
	for _, bad := range []string{
		`{"type":"live_open","session_id":"s-2","live_id":"` + id + `"}`,
		`{"type":"live_open","job_id":"s-1","live_id":"` + id + `"}`,
		`{"type":"live_open","session_id":"s-1","live_id":"nope"}`,
		`{"type":"live_open","session_id":"s-1","job_id":"s-1","live_id":"` + id + `"}`,
	} {
		_, err := DecodeFrame([]byte(bad))
		require.Error(t, err, bad)
	}
}
