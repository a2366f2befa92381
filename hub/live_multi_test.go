//go:build !race

// Two cluster members in one process trip protoactor's upstream data race
// (see multi_member_test.go): this test builds without -race and runs with
// the other TestMultiMember tests.

package hub

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/config"
	"github.com/paprika-hub/paprika/persistence"
	"github.com/paprika-hub/paprika/persistence/storetest"
)

// startLiveCluster starts hubs A and B of one cluster on MariaDB and Redis.
func startLiveCluster(t testing.TB) (ha, hb *Hub) {
	dsn := storetest.MySQLDatabase(t)
	url, prefix := storetest.RedisPrefix(t)
	mk := func() *config.Config {
		cfg := testConfig(t)
		for k, v := range map[string]string{"mysql.dsn": dsn, "redis.url": url, "redis.prefix": prefix} {
			require.NoError(t, cfg.Set(k, v))
		}
		return cfg
	}
	start := func() *Hub {
		h, err := New(mk(), testLogger(t))
		require.NoError(t, err)
		require.NoError(t, h.Start(context.Background()))
		t.Cleanup(func() { _ = h.Stop(context.Background()) })
		return h
	}
	ha, hb = start(), start()
	require.Eventually(t, func() bool {
		return ha.member.Cluster.MemberList.Length() == 2 && hb.member.Cluster.MemberList.Length() == 2
	}, 30*time.Second, 20*time.Millisecond)
	return ha, hb
}

// TestMultiMemberLiveSession: viewers on both hubs of a cluster watch a
// session's lane (the worker linked to B) and see its animation; they
// share one screencast, which stops when the last leaves; a controlling
// viewer's click presses the page's button; closing the session ends the
// view with 1000.
func TestMultiMemberLiveSession(t *testing.T) {
	if testing.Short() {
		t.Skip("drives Chromium; skipped with -short")
	}
	page := serveLivePage(t)
	ha, hb := startLiveCluster(t)
	a := startLiveAgent(t, hb.URL(), "wlive", 1)
	waitLoneWorker(t, hb, func(w persistence.WorkerInfo) bool { return w.Alive }, 30*time.Second, 20*time.Millisecond)
	id := openSession(t, ha.URL())
	st, b := do(t, "POST", ha.URL()+"/sessions/"+id+"/commands", `{"op":"navigate","url":"`+page.URL+`"}`)
	require.Equal(t, http.StatusOK, st, string(b))
	require.Equal(t, 0, a.Screencasts(), "no viewer, no screencast")

	va := dialLive(t, liveLiveSessionURL(ha, id, ""))
	first, err := va.read(10 * time.Second)
	require.NoError(t, err)
	require.Equal(t, "status", first.Type)
	require.Contains(t, []string{"waiting", "live"}, first.State)
	fa := va.frames(3, 20*time.Second)
	require.Len(t, fa, 3, "the animation shows as changing frames")

	vb := dialLive(t, liveLiveSessionURL(hb, id, ""))
	vb.frames(3, 20*time.Second)
	va.frames(2, 20*time.Second)
	require.Equal(t, 1, a.Screencasts(), "two viewers on two hubs share one screencast")
	require.Equal(t, 1.0, metricValue(hb.Metrics().Live.Sources), "one source, on the worker's hub")
	require.Equal(t, 0.0, metricValue(ha.Metrics().Live.Sources))

	// A view-only viewer's input is refused, the socket stays.
	va.send(`{"type":"mouse","event":{"type":"mousePressed","x":10,"y":10,"button":"left","clickCount":1}}`)
	va.send(`{"type":"bogus"}`)
	errs := 0
	for errs < 2 {
		m, err := va.read(10 * time.Second)
		require.NoError(t, err)
		if m.Type == "frame" {
			va.send(fmt.Sprintf(`{"type":"ack","seq":%d}`, m.Seq))
		}
		if m.Type == "error" {
			errs++
		}
	}
	va.frames(1, 10*time.Second)

	require.NoError(t, va.ws.Close())
	require.NoError(t, vb.ws.Close())
	require.Eventually(t, func() bool { return a.Screencasts() == 0 }, 10*time.Second, 20*time.Millisecond,
		"the screencast stops with its last viewer")
	require.Eventually(t, func() bool { return metricValue(hb.Metrics().Live.Sources) == 0 }, 10*time.Second, 20*time.Millisecond)

	// Take control through hub A: a click on the button presses it.
	vc := dialLive(t, liveLiveSessionURL(ha, id, "?control=1"))
	vc.frames(1, 20*time.Second)
	for _, typ := range []string{"mousePressed", "mouseReleased"} {
		vc.send(`{"type":"mouse","event":{"type":"` + typ + `","x":100,"y":60,"button":"left","clickCount":1}}`)
	}
	vc.send(`{"type":"mouse","event":{"type":"mousePressed","x":-5,"y":60}}`) // out of bounds: refused
	require.Eventually(t, func() bool {
		st, b := do(t, "POST", ha.URL()+"/sessions/"+id+"/commands", `{"op":"text","selector":"#out"}`)
		return st == http.StatusOK && strings.Contains(string(b), "pressed")
	}, 10*time.Second, 100*time.Millisecond, "the click through the live socket pressed the button")
	sawErr := false
	for deadline := time.Now().Add(5 * time.Second); !sawErr && time.Now().Before(deadline); {
		m, err := vc.read(5 * time.Second)
		require.NoError(t, err)
		if m.Type == "frame" {
			vc.send(fmt.Sprintf(`{"type":"ack","seq":%d}`, m.Seq))
		}
		sawErr = m.Type == "error"
	}
	require.True(t, sawErr, "a coordinate out of bounds is answered with an error")

	st, b = do(t, "DELETE", ha.URL()+"/sessions/"+id, "")
	require.Equal(t, http.StatusOK, st, string(b))
	reason, code := vc.waitEnded(15 * time.Second)
	require.Equal(t, websocket.CloseNormalClosure, code)
	require.Contains(t, reason, "session closed")
	require.Eventually(t, func() bool { return a.Screencasts() == 0 }, 10*time.Second, 20*time.Millisecond)

	_, resp, err := websocket.DefaultDialer.Dial(liveLiveSessionURL(ha, id, ""), nil)
	require.Error(t, err)
	require.Equal(t, http.StatusGone, resp.StatusCode, "a closed session's live view is gone")
}
