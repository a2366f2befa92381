package messages

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

func TestDecodeFrame(t *testing.T) {
	cases := []struct {
		in   string
		want error
	}{
		{`{"type":"hello","worker_id":"w1","capabilities":{"max_concurrent":4}}`, nil},
		{`{"type":"hello"}`, ErrMalformed},
		{`{"type":"hello","capabilities":{"max_concurrent":-1}}`, ErrMalformed},
		{`{"type":"heartbeat","stats":{"in_flight":1}}`, nil},
		{`{"type":"heartbeat"}`, ErrMalformed},
		{`{"type":"heartbeat","stats":{"in_flight":0},"lane_urls":["ws://127.0.0.1:9222/devtools/browser/x","chromium://w1/lane/1"]}`, nil},
		{`{"type":"heartbeat","stats":{"in_flight":0},"lane_urls":"ws://x"}`, ErrMalformed},
		{`{"type":"heartbeat","stats":{"in_flight":0},"lane_urls":[` + strings.TrimSuffix(strings.Repeat(`"x",`, maxLanes+1), ",") + `]}`, ErrMalformed},
		{`{"type":"heartbeat","stats":{"in_flight":0},"lane_states":["idle","job","session","restarting"]}`, nil},
		{`{"type":"heartbeat","stats":{"in_flight":0},"lane_states":["idle","busy"]}`, ErrMalformed},
		{`{"type":"heartbeat","stats":{"in_flight":0},"lane_states":"idle"}`, ErrMalformed},
		{`{"type":"heartbeat","stats":{"in_flight":0},"lane_states":[` + strings.TrimSuffix(strings.Repeat(`"idle",`, maxLanes+1), ",") + `]}`, ErrMalformed},
		{`{"type":"hello","capabilities":{"max_concurrent":1},"lane_states":["session"]}`, nil},
		{`{"type":"hello","capabilities":{"max_concurrent":1},"lane_states":[""]}`, ErrMalformed},
		{`{"type":"job_log","job_id":"j","seq":3,"line":"x"}`, nil},
		{`{"type":"job_log","seq":3}`, ErrMalformed},
		{`{"type":"job_log","job_id":"j","seq":-1}`, ErrMalformed},
		{`{"type":"job_done","job_id":"j","result":{"lines":2}}`, nil},
		{`{"type":"session_result"}`, ErrMalformed},
		{`{"type":"job_query","job_id":"j","attempt":2}`, nil},
		{`{"type":"job_query","job_id":"j"}`, ErrMalformed},
		{`{"type":"job_status","job_id":"j","attempt":1,"state":"unknown"}`, nil},
		{`{"type":"job_status","job_id":"j","attempt":1,"state":"maybe"}`, ErrMalformed},
		{`{"type":"lane_skip"}`, nil},
		{`{"type":"lane_skip","skip_lanes":[{"lane":0,"reason":"lane_crashes"},{"lane":3,"reason":"lane_rss"}]}`, nil},
		{`{"type":"lane_skip","skip_lanes":[{"lane":1,"reason":"a_reason_of_later_2"}]}`, nil},
		{`{"type":"lane_skip","skip_lanes":[{"lane":-1,"reason":"lane_rss"}]}`, ErrMalformed},
		{`{"type":"lane_skip","skip_lanes":[{"lane":10000,"reason":"lane_rss"}]}`, ErrMalformed},
		{`{"type":"lane_skip","skip_lanes":[{"lane":2,"reason":"lane_rss"},{"lane":2,"reason":"lane_rss"}]}`, ErrMalformed},
		{`{"type":"lane_skip","skip_lanes":[{"lane":2,"reason":"lane_rss"},{"lane":1,"reason":"lane_rss"}]}`, ErrMalformed},
		{`{"type":"lane_skip","skip_lanes":[{"lane":1}]}`, ErrMalformed},
		{`{"type":"lane_skip","skip_lanes":[{"lane":1,"reason":"Lane RSS"}]}`, ErrMalformed},
		{`{"type":"lane_skip","skip_lanes":[{"lane":1,"reason":"` + strings.Repeat("r", MaxSkipReasonBytes+1) + `"}]}`, ErrMalformed},
		{`{"type":"lane_skip","skip_lanes":{"lane":1}}`, ErrMalformed},
		{`{"type":"hello","capabilities":{"max_concurrent":1},"hub_urls":["http://10.0.0.1:8080","https://hub-b.internal"]}`, nil},
		{`{"type":"hello","capabilities":{"max_concurrent":1},"hub_urls":"http://10.0.0.1:8080"}`, ErrMalformed},
		{`{"type":"hello","capabilities":{"max_concurrent":1},"hub_urls":[` + strings.TrimSuffix(strings.Repeat(`"http://h",`, MaxHubURLs+1), ",") + `]}`, ErrMalformed},
		{`{"type":"hello","capabilities":{"max_concurrent":1},"hub_urls":["http://` + strings.Repeat("h", maxURLBytes) + `"]}`, ErrMalformed},
		{`{"type":"relink","hub_url":"http://10.0.0.2:8080"}`, nil},
		{`{"type":"relink"}`, ErrMalformed},
		{`{"type":"relink","hub_url":"http://` + strings.Repeat("h", maxURLBytes) + `"}`, ErrMalformed},
		{`{"type":"teleport"}`, ErrUnknownType},
		{`{"type":`, ErrMalformed},
		{`[]`, ErrMalformed},
		{``, ErrMalformed},
	}
	for _, tc := range cases {
		_, err := DecodeFrame([]byte(tc.in))
		if tc.want == nil {
			require.NoError(t, err, tc.in)
		} else {
			require.True(t, errors.Is(err, tc.want), "%s: got %v", tc.in, err)
		}
	}
	_, err := DecodeFrame([]byte(`{"type":"job_log","line":"` + strings.Repeat("a", MaxFrameBytes) + `"}`))
	require.ErrorIs(t, err, ErrMalformed)
}

// TestHeartbeatLaneURLs: lane_urls of a heartbeat survives the wire, and a
// heartbeat without it decodes to nil (the hub reads that as unchanged).
func TestHeartbeatLaneURLs(t *testing.T) {
	urls := []string{"ws://127.0.0.1:41235/devtools/browser/0b1c", "chromium://w1/lane/1"}
	b, err := Frame{Type: TypeHeartbeat, Stats: &Stats{InFlight: 1}, LaneURLs: urls}.Encode()
	require.NoError(t, err)
	require.Contains(t, string(b), `"lane_urls":["ws://127.0.0.1:41235/devtools/browser/0b1c","chromium://w1/lane/1"]`)
	g, err := DecodeFrame(b)
	require.NoError(t, err)
	require.Equal(t, urls, g.LaneURLs)

	b, err = Frame{Type: TypeHeartbeat, Stats: &Stats{}}.Encode()
	require.NoError(t, err)
	require.NotContains(t, string(b), "lane_urls")
	g, err = DecodeFrame(b)
	require.NoError(t, err)
	require.Nil(t, g.LaneURLs)
}

func TestFrameRoundTrip(t *testing.T) {
	f := Frame{Type: TypeAssignJob, JobID: "j1", Attempt: 2, Mode: "noop", Params: []byte(`{"lines":3}`), Deadline: 1234}
	b, err := f.Encode()
	require.NoError(t, err)
	g, err := DecodeFrame(b)
	require.NoError(t, err)
	require.Equal(t, f.JobID, g.JobID)
	require.Equal(t, f.Attempt, g.Attempt)
	require.JSONEq(t, string(f.Params), string(g.Params))
	require.Equal(t, f.Deadline, g.Deadline)
}

// FuzzDecodeFrame: whatever bytes a worker sends, the decoder returns a
// frame or an error, never panics, and an accepted frame re-encodes and
// decodes to the same type.
func FuzzDecodeFrame(f *testing.F) {
	for _, s := range []string{
		`{"type":"hello","worker_id":"w1","lan_ip":"10.0.0.1","capabilities":{"max_concurrent":4,"lane_urls":["a"]}}`,
		`{"type":"heartbeat","stats":{"in_flight":1,"cpu_pct":3.5},"running":["j1"]}`,
		`{"type":"heartbeat","stats":{"in_flight":1},"running":["session:s-1","01KB3Z0Q8X9V2M5N7P4R6T8W0Y"]}`,
		`{"type":"heartbeat","stats":{"in_flight":0},"lane_urls":["ws://127.0.0.1:41235/devtools/browser/0b1c","chromium://w1/lane/1"]}`,
		`{"type":"heartbeat","stats":{"in_flight":0},"lane_states":["idle","session"]}`,
		`{"type":"heartbeat","stats":{"in_flight":0,"shm_free_mb":512},"lane_health":[{"rss_mb":300,"crashes_10m":1,"restarts_10m":2}]}`,
		`{"type":"job_log","job_id":"j","attempt":1,"seq":7,"line":"hello"}`,
		`{"type":"job_failed","job_id":"j","reason":"job_error","error":"boom"}`,
		`{"type":"job_done","job_id":"j","result":{"lines":2},"assets":["a.png"]}`,
		`{"type":"job_status","job_id":"j","attempt":3,"state":"running"}`,
		`{"type":"job_query","job_id":"j","attempt":1}`,
		`{"type":"hello","capabilities":{"max_concurrent":2},"hub_urls":["http://10.0.0.1:8080","wss://b"]}`,
		`{"type":"relink","hub_url":"http://10.0.0.2:8080"}`,
		`{"type":"x"}`, `{}`, `null`, `"s"`, `{"type":"job_log","seq":1e99}`,
		`{"type":"job_log","job_id":"01KB3Z0Q8X9V2M5N7P4R6T8W0Y","attempt":2,"line":"first"}`,
		`{"type":"job_log","job_id":"j","attempt":1,"seq":12,"line":"a \"quoted\" \u003ctag\u003e \\ line\n"}`,
		"{\"type\":\"job_log\",\"job_id\":\"j\",\"attempt\":1,\"seq\":3,\"line\":\"caf\xc3\xa9 \xff\"}",
		`{"type":"job_log","job_id":"j","attempt":01,"seq":3,"line":"x"}`,
		`{"type":"job_log","job_id":"j","attempt":1,"seq":-3,"line":"x"}`,
		`{"type":"job_log","job_id":"j","attempt":1,"seq":3.0,"line":"x"}`,
		`{"type":"job_log","job_id":"j","attempt":1,"seq":1234567890123456789,"line":"x"}`,
		`{"type":"job_log","job_id":"j","seq":3,"attempt":1,"line":"x"}`,
		`{"type":"job_log","job_id":"j","attempt":1,"line":"x","line":"y"}`,
		`{"type":"job_log","job_id":"j","attempt":1,"line":"x"} `,
		`{"type":"job_log"}`,
	} {
		f.Add([]byte(s))
	}
	// A reader's own Frame, left holding another frame: decoding into it
	// must give what a fresh decode gives, fields and verdict alike.
	dirty := func() Frame {
		d, _ := DecodeFrame([]byte(`{"type":"heartbeat","stats":{"in_flight":1},"running":["j1","j2"],"lane_urls":["a"],` +
			`"lane_states":["idle"],"lane_health":[{"rss_mb":1}],"job_id":"old","seq":9,"line":"old","params":{"x":1}}`))
		return d
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fr, err := DecodeFrame(data)
		into := dirty()
		intoErr := DecodeFrameInto(data, &into)
		if (err == nil) != (intoErr == nil) || !reflect.DeepEqual(fr, into) {
			t.Fatalf("DecodeFrameInto differs from DecodeFrame: %v %+v vs %v %+v", intoErr, into, err, fr)
		}
		// The job_log fast path decodes what encoding/json decodes.
		var viaJSON Frame
		jsonErr := decodeFrameJSON(data, &viaJSON)
		if len(data) <= MaxFrameBytes && ((err == nil) != (jsonErr == nil) || !reflect.DeepEqual(fr, viaJSON)) {
			t.Fatalf("decoders differ on %q: %v %+v vs encoding/json %v %+v", data, err, fr, jsonErr, viaJSON)
		}
		if err != nil {
			return
		}
		b, err := fr.Encode()
		if err != nil {
			t.Fatalf("accepted frame does not encode: %v", err)
		}
		g, err := DecodeFrame(b)
		if err != nil {
			t.Fatalf("re-decode of %s: %v", b, err)
		}
		if g.Type != fr.Type || g.JobID != fr.JobID || g.Seq != fr.Seq || !slices.Equal(g.LaneURLs, fr.LaneURLs) ||
			!slices.Equal(g.LaneStates, fr.LaneStates) || !slices.Equal(g.Running, fr.Running) || !slices.Equal(g.LaneHealth, fr.LaneHealth) {
			t.Fatalf("round trip changed the frame: %+v vs %+v", fr, g)
		}
	})
}

func TestSecurityWorkerFieldsAreBounded(t *testing.T) {
	enc := func(f Frame) []byte {
		b, err := f.Encode()
		require.NoError(t, err)
		return b
	}
	for _, bad := range []Frame{
		{Type: TypeJobFailed, JobID: "j", Attempt: 1, Reason: "pwned"},
		{Type: TypeJobFailed, JobID: "j", Attempt: 1, Reason: "job_error", Error: strings.Repeat("x", MaxErrorBytes+1)},
		{Type: TypeJobStarted, JobID: "j", Attempt: 1, Lane: strings.Repeat("l", 3000)},
		{Type: TypeHello, LanIP: "not-an-ip", Capabilities: &Capabilities{MaxConcurrent: 1}},
		{Type: TypeHello, LanIP: "10.0.0.1", Capabilities: &Capabilities{MaxConcurrent: 1, LaneURLs: []string{strings.Repeat("u", 3000)}}},
		{Type: TypeHeartbeat, Stats: &Stats{}, LaneURLs: []string{strings.Repeat("u", 3000)}},
		{Type: TypeHeartbeat, Stats: &Stats{}, Running: []string{strings.Repeat("j", 65)}},
		{Type: TypeHeartbeat, Stats: &Stats{}, Running: []string{"01HZ", ""}},
		{Type: TypeHeartbeat, Stats: &Stats{}, Running: []string{"../../etc"}},
		{Type: TypeHeartbeat, Stats: &Stats{}, Running: []string{"job\x1b[2J"}},
		{Type: TypeHeartbeat, Stats: &Stats{}, Running: []string{"session:"}},
		{Type: TypeHeartbeat, Stats: &Stats{}, Running: make([]string, maxLanes+1)},
		{Type: TypeHello, Capabilities: &Capabilities{MaxConcurrent: 1}, Running: []string{"a b"}},
	} {
		_, err := DecodeFrame(enc(bad))
		require.ErrorIs(t, err, ErrMalformed, "%+v", bad.Type)
	}
	_, err := DecodeFrame(enc(Frame{Type: TypeHeartbeat, Stats: &Stats{}, Running: []string{"01KB3Z0Q8X9V2M5N7P4R6T8W0Y", "j-1_a", SessionSlotPrefix + "s-ab12"}}))
	require.NoError(t, err, "job ids and session slots pass")
	_, err = DecodeFrame(enc(Frame{Type: TypeJobFailed, JobID: "j", Attempt: 1, Reason: "lane_error", Error: TruncateError(strings.Repeat("é", MaxErrorBytes))}))
	require.NoError(t, err, "a cut error passes")
	require.LessOrEqual(t, len(TruncateError(strings.Repeat("é", MaxErrorBytes))), MaxErrorBytes)
	require.True(t, utf8.ValidString(TruncateError(strings.Repeat("é", MaxErrorBytes))))
}

func TestTunnelIDs(t *testing.T) {
	id := NewTunnelID("s-abc123")
	s, ok := TunnelSession(id)
	require.True(t, ok)
	require.Equal(t, "s-abc123", s)
	for _, bad := range []string{"", "_x", "s-1_", "s-1/2_x", "no-separator", strings.Repeat("a", 60) + "_12345"} {
		_, ok := TunnelSession(bad)
		require.False(t, ok, bad)
	}
	f, err := DecodeFrame([]byte(`{"type":"tunnel_open","session_id":"s-abc123","tunnel_id":"` + id + `","target":"ABC123"}`))
	require.NoError(t, err)
	require.Equal(t, id, f.TunnelID)
	for _, bad := range []string{
		`{"type":"tunnel_open","session_id":"s-other","tunnel_id":"` + id + `"}`,
		`{"type":"tunnel_open","tunnel_id":"` + id + `"}`,
		`{"type":"tunnel_open","session_id":"s-abc123","tunnel_id":"` + id + `","target":"../x"}`,
	} {
		_, err := DecodeFrame([]byte(bad))
		require.ErrorIs(t, err, ErrMalformed, bad)
	}
	require.Len(t, CloseReason(strings.Repeat("é", 100)), 122, "cut on a rune boundary")
}

func TestHelloDeclaredModesAreBounded(t *testing.T) {
	hello := func(modes string) []byte {
		return []byte(`{"type":"hello","worker_id":"w1","capabilities":{"max_concurrent":1,"modes":` + modes + `}}`)
	}
	f, err := DecodeFrame(hello(`[{"name":"noop"},{"name":"pdf-diff","lane":"chromium","schema":{"type":"object"}}]`))
	if err != nil {
		t.Fatalf("good modes refused: %v", err)
	}
	if got := f.Capabilities.Modes; len(got) != 2 || got[1].Lane != LaneNeedChromium || string(got[1].Schema) != `{"type":"object"}` {
		t.Fatalf("modes decoded as %+v", got)
	}
	for name, modes := range map[string]string{
		"bad name":       `[{"name":"Bad Name"}]`,
		"leading dash":   `[{"name":"-x"}]`,
		"empty name":     `[{"name":""}]`,
		"twice":          `[{"name":"a"},{"name":"a"}]`,
		"unknown lane":   `[{"name":"a","lane":"firefox"}]`,
		"schema array":   `[{"name":"a","schema":[1]}]`,
		"schema too big": `[{"name":"a","schema":{"x":"` + strings.Repeat("y", MaxModeSchemaBytes) + `"}}]`,
		"too many":       `[` + strings.TrimSuffix(strings.Repeat(`{"name":"a"},`, MaxModes+1), ",") + `]`,
	} {
		if _, err := DecodeFrame(hello(modes)); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: got %v, want a malformed frame", name, err)
		}
	}
}

// BenchmarkDecodeJobLog is a hub's socket reader on a log line as a
// worker encodes it, into the reader's own Frame.
func BenchmarkDecodeJobLog(b *testing.B) {
	data, err := Frame{Type: TypeJobLog, JobID: "01KB3Z0Q8X9V2M5N7P4R6T8W0Y", Attempt: 1, Seq: 41,
		Line: "GET https://example.com/page 200 in 31ms"}.Encode()
	require.NoError(b, err)
	var f Frame
	b.ReportAllocs()
	for b.Loop() {
		if err := DecodeFrameInto(data, &f); err != nil {
			b.Fatal(err)
		}
	}
}
