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

// TestHeartbeatLaneURLsUpdateTheWorker: a heartbeat carrying lane_urls
// replaces the lanes the hub shows for the worker (GET /workers reads the
// registry, PATCH answers from the worker grain), and a heartbeat without
// them leaves them as they were.
func TestHeartbeatLaneURLsUpdateTheWorker(t *testing.T) {
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

	placeholders := []string{"chromium://wlanes/lane/0", "chromium://wlanes/lane/1"}
	send(messages.Frame{Type: messages.TypeHello, WorkerID: "wlanes", LanIP: "10.9.8.7",
		Capabilities: &messages.Capabilities{MaxConcurrent: 2, LaneURLs: placeholders, Drivers: []string{"chromium"}},
		Stats:        &messages.Stats{}})
	require.NoError(t, ws.SetReadDeadline(time.Now().Add(10*time.Second)))
	_, data, err := ws.ReadMessage()
	require.NoError(t, err)
	welcome, err := messages.DecodeFrame(data)
	require.NoError(t, err)
	require.Equal(t, messages.TypeWelcome, welcome.Type, string(data))
	waitWorker(t, h.URL(), "wlanes", "the hello's lanes", func(w persistence.WorkerInfo) bool {
		return slices.Equal(w.Lanes, placeholders)
	})

	live := []string{"ws://127.0.0.1:40001/devtools/browser/aaaa", "chromium://wlanes/lane/1"}
	send(messages.Frame{Type: messages.TypeHeartbeat, Stats: &messages.Stats{CPUPct: 11}, LaneURLs: live})
	waitWorker(t, h.URL(), "wlanes", "the heartbeat's lanes", func(w persistence.WorkerInfo) bool {
		return w.CPUPct == 11 && slices.Equal(w.Lanes, live)
	})

	// Without lane_urls: the stats change, the lanes stay.
	send(messages.Frame{Type: messages.TypeHeartbeat, Stats: &messages.Stats{CPUPct: 22}})
	w := waitWorker(t, h.URL(), "wlanes", "the second heartbeat's stats", func(w persistence.WorkerInfo) bool {
		return w.CPUPct == 22
	})
	require.Equal(t, live, w.Lanes, "a heartbeat without lane_urls changed the lanes")

	// The worker grain holds the same (PATCH answers from it).
	st, b := do(t, "PATCH", h.URL()+"/workers/wlanes", `{"status":"active"}`)
	require.Equal(t, http.StatusOK, st, string(b))
	var got persistence.WorkerInfo
	require.NoError(t, json.Unmarshal(b, &got))
	require.Equal(t, live, got.Lanes)
	require.Equal(t, 22.0, got.CPUPct)
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
