package messages

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDecodeLaneHealthBounds: lane_health and stats.shm_free_mb are
// accepted within their bounds on hello and heartbeat, refused past them.
func TestDecodeLaneHealthBounds(t *testing.T) {
	hb := func(rest string) string { return `{"type":"heartbeat","stats":{"in_flight":0` + rest + `}` }
	cases := []struct {
		frame string
		ok    bool
	}{
		{hb(`,"shm_free_mb":512},"lane_health":[{"rss_mb":300,"crashes_10m":1,"restarts_10m":2},{"rss_mb":0,"crashes_10m":0,"restarts_10m":0}]`), true},
		{hb(`}`), true},
		{hb(`,"shm_free_mb":0}`), true},
		{hb(`,"shm_free_mb":-1}`), false},
		{hb(`,"shm_free_mb":1073741825}`), false},
		{hb(`,"shm_free_mb":1.5}`), false},
		{hb(`},"lane_health":[{"rss_mb":16777216}]`), true},
		{hb(`},"lane_health":[{"rss_mb":16777217}]`), false},
		{hb(`},"lane_health":[{"rss_mb":-1}]`), false},
		{hb(`},"lane_health":[{"crashes_10m":-1}]`), false},
		{hb(`},"lane_health":[{"crashes_10m":1048577}]`), false},
		{hb(`},"lane_health":[{"restarts_10m":1048577}]`), false},
		{hb(`},"lane_health":[{"restarts_10m":1e30}]`), false},
		{hb(`},"lane_health":{"rss_mb":1}`), false},
		{hb(`},"lane_health":[` + strings.TrimSuffix(strings.Repeat(`{},`, maxLanes+1), ",") + `]`), false},
		{`{"type":"hello","capabilities":{"max_concurrent":1},"stats":{"in_flight":0,"shm_free_mb":64},"lane_health":[{"rss_mb":1}]}`, true},
		{`{"type":"hello","capabilities":{"max_concurrent":1},"lane_health":[{"crashes_10m":-5}]}`, false},
	}
	for _, tc := range cases {
		_, err := DecodeFrame([]byte(tc.frame))
		if tc.ok {
			require.NoError(t, err, tc.frame[:min(len(tc.frame), 200)])
			continue
		}
		require.Error(t, err, tc.frame[:min(len(tc.frame), 200)])
		require.True(t, errors.Is(err, ErrMalformed), "%v", err)
	}
	f, err := DecodeFrame([]byte(hb(`,"shm_free_mb":77},"lane_health":[{"rss_mb":300,"crashes_10m":1,"restarts_10m":2}]`)))
	require.NoError(t, err)
	require.EqualValues(t, 77, *f.Stats.ShmFreeMB)
	require.Equal(t, []LaneHealth{{RSSMB: 300, Crashes10m: 1, Restarts10m: 2}}, f.LaneHealth)
}
