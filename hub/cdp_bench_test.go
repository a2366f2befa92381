//go:build !race

package hub

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/paprika-hub/paprika/agent"
	"github.com/paprika-hub/paprika/agent/chromium"
	"github.com/paprika-hub/paprika/config"
	"github.com/paprika-hub/paprika/persistence/storetest"
)

// cdpPage is a CDP connection attached (flat) to one page target.
type cdpPage struct {
	ws      *websocket.Conn
	session string
	seq     int
}

func attachPage(tb testing.TB, url string) *cdpPage {
	ws, _, err := websocket.DefaultDialer.Dial(url, nil)
	if err != nil {
		tb.Fatalf("dial %s: %v", url, err)
	}
	p := &cdpPage{ws: ws}
	res := p.call(tb, "", "Target.getTargets", map[string]any{})
	var targets struct {
		TargetInfos []struct {
			TargetID string `json:"targetId"`
			Type     string `json:"type"`
		} `json:"targetInfos"`
	}
	_ = json.Unmarshal(res, &targets)
	for _, ti := range targets.TargetInfos {
		if ti.Type == "page" {
			res = p.call(tb, "", "Target.attachToTarget", map[string]any{"targetId": ti.TargetID, "flatten": true})
			var a struct {
				SessionID string `json:"sessionId"`
			}
			_ = json.Unmarshal(res, &a)
			p.session = a.SessionID
			return p
		}
	}
	tb.Fatalf("no page behind %s", url)
	return nil
}

func (p *cdpPage) call(tb testing.TB, session, method string, params any) json.RawMessage {
	p.seq++
	msg := map[string]any{"id": p.seq, "method": method, "params": params}
	if session != "" {
		msg["sessionId"] = session
	}
	if err := p.ws.WriteJSON(msg); err != nil {
		tb.Fatal(err)
	}
	for {
		var m struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
		}
		if err := p.ws.ReadJSON(&m); err != nil {
			tb.Fatal(err)
		}
		if m.ID == p.seq {
			return m.Result
		}
	}
}

func (p *cdpPage) eval(tb testing.TB) time.Duration {
	start := time.Now()
	p.call(tb, p.session, "Runtime.evaluate", map[string]any{"expression": "1+1"})
	return time.Since(start)
}

func percentile(d []time.Duration, q float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*q))]
}

// BenchmarkCDPRoundTrip: Runtime.evaluate("1+1") on a session's page,
// directly on the lane's DevTools socket, through the hub the worker is
// linked to (B), and through another hub (A, one cluster hop more). The
// figures are ratios to the direct connection, measured in the same run.
func BenchmarkCDPRoundTrip(b *testing.B) {
	if _, err := chromium.LookPath(""); err != nil {
		storetest.Unavailable(b, "chromium", err)
	}
	dsn := storetest.MySQLDatabase(b)
	url, prefix := storetest.RedisPrefix(b)
	mk := func() *config.Config {
		cfg := testConfig(b)
		for k, v := range map[string]string{"mysql.dsn": dsn, "redis.url": url, "redis.prefix": prefix} {
			if err := cfg.Set(k, v); err != nil {
				b.Fatal(err)
			}
		}
		return cfg
	}
	start := func(cfg *config.Config) *Hub {
		h, err := New(cfg, testLogger(b))
		if err != nil {
			b.Fatal(err)
		}
		if err := h.Start(context.Background()); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = h.Stop(context.Background()) })
		return h
	}
	ha, hb := start(mk()), start(mk())
	for ha.member.Cluster.MemberList.Length() < 2 || hb.member.Cluster.MemberList.Length() < 2 {
		time.Sleep(20 * time.Millisecond)
	}
	drv, err := chromium.New(chromium.Config{Lanes: 1, WorkDir: b.TempDir(), Logger: testLogger(b)})
	if err != nil {
		b.Fatal(err)
	}
	a, err := agent.New(agent.Config{HubURLs: []string{hb.URL()}, ID: "wc", Lanes: 1, DriverImpl: drv, Logger: testLogger(b)})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = a.Run(ctx) })
	b.Cleanup(func() { cancel(); wg.Wait(); _ = drv.Close() })

	var sess struct {
		ID string `json:"id"`
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		st, body := doTB(b, "POST", ha.URL()+"/sessions", `{"idle_timeout_s":600}`)
		if st == 201 {
			_ = json.Unmarshal(body, &sess)
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("no session: %d %s", st, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	paths := []struct {
		name string
		page *cdpPage
	}{
		{"direct", attachPage(b, drv.LaneURL("wc", 0))},
		{"worker_hub", attachPage(b, wsURL(hb.URL())+"/sessions/"+sess.ID+"/cdp")},
		{"other_hub", attachPage(b, wsURL(ha.URL())+"/sessions/"+sess.ID+"/cdp")},
	}
	for _, p := range paths { // warm up
		for range 20 {
			p.page.eval(b)
		}
	}
	times := make([][]time.Duration, len(paths))
	b.ResetTimer()
	for range b.N {
		for i, p := range paths {
			times[i] = append(times[i], p.page.eval(b))
		}
	}
	b.StopTimer()
	d50, d99 := percentile(times[0], 0.5), percentile(times[0], 0.99)
	b.ReportMetric(float64(d50.Microseconds()), "direct-p50-µs")
	b.ReportMetric(float64(d99.Microseconds()), "direct-p99-µs")
	for i, p := range paths[1:] {
		p50, p99 := percentile(times[i+1], 0.5), percentile(times[i+1], 0.99)
		b.ReportMetric(float64(p50)/float64(d50), p.name+"-p50-x")
		b.ReportMetric(float64(p99)/float64(d99), p.name+"-p99-x")
		b.ReportMetric(float64((p50 - d50).Microseconds()), p.name+"-p50-extra-µs")
	}
	for _, p := range paths {
		_ = p.page.ws.Close()
	}
}

// doTB is do for benchmarks.
func doTB(tb testing.TB, method, url, body string) (int, []byte) {
	tb.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, b
}
