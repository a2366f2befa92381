package hub

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/messages"
	"github.com/paprika-hub/paprika/persistence"
)

// TestHeartbeatLaneStatesUpdateTheWorker: GET /workers shows one entry per
// lane of hello's lane_urls, with the state hello and then heartbeats'
// lane_states report; a heartbeat without lane_states, or with a list that
// does not match the lane count, leaves them as they were; the lanes'
// addresses (an older worker's live DevTools URLs included) are never
// shown, nor is a browser_url.
func TestHeartbeatLaneStatesUpdateTheWorker(t *testing.T) {
	h := startTestHub(t, testConfig(t))
	ws, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(h.URL(), "http")+"/workers/wlanes/link", nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ws.Close() })
	send := func(f messages.Frame) {
		t.Helper()
		b, err := f.Encode()
		require.NoError(t, err)
		require.NoError(t, ws.WriteMessage(websocket.TextMessage, b))
	}
	lanes := func(states ...string) []persistence.LaneStatus {
		out := make([]persistence.LaneStatus, len(states))
		for i, s := range states {
			out[i] = persistence.LaneStatus{Lane: i, State: s}
		}
		return out
	}

	send(messages.Frame{Type: messages.TypeHello, WorkerID: "wlanes", LanIP: "10.9.8.7",
		Capabilities: &messages.Capabilities{MaxConcurrent: 2, Drivers: []string{"chromium"},
			LaneURLs:   []string{"ws://127.0.0.1:40001/devtools/browser/aaaa", "chromium://wlanes/lane/1"},
			BrowserURL: "ws://127.0.0.1:40002/devtools/browser/bbbb"},
		LaneStates: []string{messages.LaneSession, messages.LaneIdle},
		Stats:      &messages.Stats{}})
	require.NoError(t, ws.SetReadDeadline(time.Now().Add(10*time.Second)))
	_, data, err := ws.ReadMessage()
	require.NoError(t, err)
	welcome, err := messages.DecodeFrame(data)
	require.NoError(t, err)
	require.Equal(t, messages.TypeWelcome, welcome.Type, string(data))
	waitWorker(t, h.URL(), "wlanes", "the hello's lane states", func(w persistence.WorkerInfo) bool {
		return slices.Equal(w.Lanes, lanes(messages.LaneSession, messages.LaneIdle))
	})

	send(messages.Frame{Type: messages.TypeHeartbeat, Stats: &messages.Stats{CPUPct: 11},
		LaneURLs:   []string{"ws://127.0.0.1:40003/devtools/browser/cccc", "chromium://wlanes/lane/1"},
		LaneStates: []string{messages.LaneIdle, messages.LaneRestarting}})
	want := lanes(messages.LaneIdle, messages.LaneRestarting)
	waitWorker(t, h.URL(), "wlanes", "the heartbeat's lane states", func(w persistence.WorkerInfo) bool {
		return w.CPUPct == 11 && slices.Equal(w.Lanes, want)
	})

	// Without lane_states, or with one state too many: the stats change,
	// the lanes stay.
	send(messages.Frame{Type: messages.TypeHeartbeat, Stats: &messages.Stats{CPUPct: 22}})
	send(messages.Frame{Type: messages.TypeHeartbeat, Stats: &messages.Stats{CPUPct: 33},
		LaneStates: []string{messages.LaneJob, messages.LaneJob, messages.LaneJob}})
	w := waitWorker(t, h.URL(), "wlanes", "the third heartbeat's stats", func(w persistence.WorkerInfo) bool {
		return w.CPUPct == 33
	})
	require.Equal(t, want, w.Lanes, "a heartbeat without a matching lane_states changed the lanes")

	// The worker grain holds the same (PATCH answers from it); neither
	// answer carries an address.
	st, b := do(t, "PATCH", h.URL()+"/workers/wlanes", `{"status":"active"}`)
	require.Equal(t, http.StatusOK, st, string(b))
	require.NotContains(t, string(b), "ws://")
	require.NotContains(t, string(b), "browser_url")
	var got persistence.WorkerInfo
	require.NoError(t, json.Unmarshal(b, &got))
	require.Equal(t, want, got.Lanes)
	require.Equal(t, 33.0, got.CPUPct)
	st, b = do(t, "GET", h.URL()+"/workers", "")
	require.Equal(t, http.StatusOK, st, string(b))
	require.NotContains(t, string(b), "ws://")
	require.Contains(t, string(b), `"lanes":[{"lane":0,"state":"idle"},{"lane":1,"state":"restarting"}]`)
}

// waitWorker polls GET /workers until worker id satisfies ok.
func waitWorker(t *testing.T, url, id, what string, ok func(persistence.WorkerInfo) bool) persistence.WorkerInfo {
	t.Helper()
	var last persistence.WorkerInfo
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, b := do(t, "GET", url+"/workers", "")
		var body struct{ Workers []persistence.WorkerInfo }
		if st == http.StatusOK && json.Unmarshal(b, &body) == nil {
			for _, w := range body.Workers {
				if w.ID == id {
					if last = w; ok(w) {
						return w
					}
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("worker %s never showed %s; last seen %+v", id, what, last)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
