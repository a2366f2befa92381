//go:build !race

package hub

// The browser gateway's benchmarks (make bench-cdp; also in make bench).
// Each starts two hubs of one cluster (MariaDB and Redis shared, so the
// Redis membership provider joins them) and a worker with Chromium lanes
// linked to hub B; a client reaches a lane directly (its DevTools socket,
// the baseline), through B (the worker's hub) and through A (another hub,
// one cluster hop more). Every figure is a ratio to the direct connection
// measured in the same run; absolute figures are reported beside them.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
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
	"github.com/paprika-hub/paprika/messages"
	"github.com/paprika-hub/paprika/persistence"
	"github.com/paprika-hub/paprika/persistence/storetest"
)

// gatewayBench is a benchmark's cluster: hub A (other), hub B (the
// worker's), one worker "wc" with Chromium lanes linked to B.
type gatewayBench struct {
	ha, hb *Hub
	drv    *chromium.Driver
}

const benchWorker = "wc"

// startGatewayBench starts the cluster. set holds config keys for both
// hubs; onFrame, when set, sees every frame read off B's worker links.
func startGatewayBench(b *testing.B, lanes int, set map[string]string, onFrame func(workerID, typ string)) *gatewayBench {
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
		for k, v := range set {
			if err := cfg.Set(k, v); err != nil {
				b.Fatal(k, err)
			}
		}
		return cfg
	}
	start := func(cfg *config.Config, hook func(string, string)) *Hub {
		h, err := New(cfg, testLogger(b))
		if err != nil {
			b.Fatal(err)
		}
		h.deps.OnLinkFrame = hook // before Start: Deps are fixed once the hub runs
		if err := h.Start(context.Background()); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = h.Stop(context.Background()) })
		return h
	}
	g := &gatewayBench{}
	g.ha, g.hb = start(mk(), nil), start(mk(), onFrame)
	for g.ha.member.Cluster.MemberList.Length() < 2 || g.hb.member.Cluster.MemberList.Length() < 2 {
		time.Sleep(20 * time.Millisecond)
	}
	drv, err := chromium.New(chromium.Config{Lanes: lanes, WorkDir: b.TempDir(), Logger: testLogger(b)})
	if err != nil {
		b.Fatal(err)
	}
	g.drv = drv
	a, err := agent.New(agent.Config{HubURLs: []string{g.hb.URL()}, ID: benchWorker, Lanes: lanes, DriverImpl: drv, Logger: testLogger(b)})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = a.Run(ctx) })
	b.Cleanup(func() { cancel(); wg.Wait(); _ = drv.Close() })
	return g
}

// openSession opens a session through hubURL, retrying while the worker
// links or its lanes come free.
func (g *gatewayBench) openSession(b *testing.B, hubURL string) (id, cdpURL string) {
	var sess struct {
		ID     string `json:"id"`
		CDPURL string `json:"cdp_url"`
	}
	for deadline := time.Now().Add(60 * time.Second); ; {
		st, body := doTB(b, "POST", hubURL+"/sessions", `{"idle_timeout_s":600}`)
		if st == http.StatusCreated {
			if err := json.Unmarshal(body, &sess); err != nil {
				b.Fatal(err)
			}
			return sess.ID, sess.CDPURL
		}
		if time.Now().After(deadline) {
			b.Fatalf("no session: %d %s", st, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitLanesIdle waits until the worker is alive with every lane idle
// (its browser running and clean), as the hubs see it.
func (g *gatewayBench) waitLanesIdle(b *testing.B) {
	for deadline := time.Now().Add(60 * time.Second); ; {
		ws, err := g.hb.Workers(context.Background())
		if err == nil && len(ws) == 1 && ws[0].Alive && ws[0].InFlight == 0 &&
			!slices.ContainsFunc(ws[0].Lanes, func(l persistence.LaneStatus) bool { return l.State != messages.LaneIdle }) {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("lanes not idle: %+v %v", ws, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// devTools is lane's own DevTools URL (the direct baseline).
func (g *gatewayBench) devTools(b *testing.B, lane int) string {
	u, ok := g.drv.DevToolsURL(lane)
	if !ok {
		b.Fatalf("lane %d has no browser running", lane)
	}
	return u
}

// cdpPage is a CDP connection attached (flat) to one page target.
type cdpPage struct {
	ws      *websocket.Conn
	session string
	seq     int
	buf     bytes.Buffer
}

var benchDialer = websocket.Dialer{ReadBufferSize: 64 << 10, WriteBufferSize: 64 << 10}

func dialBenchCDP(tb testing.TB, url string) *cdpPage {
	ws, _, err := benchDialer.Dial(url, nil)
	if err != nil {
		tb.Fatalf("dial %s: %v", url, err)
	}
	return &cdpPage{ws: ws}
}

func attachPage(tb testing.TB, url string) *cdpPage {
	p := dialBenchCDP(tb, url)
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
	raw := p.callRaw(tb, session, method, params)
	var m struct {
		Result json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		tb.Fatal(err)
	}
	return m.Result
}

// callRaw sends one command and returns its answer as read, without
// decoding it (a 27 MB answer is not decoded per sample); the bytes are
// valid until the next call.
func (p *cdpPage) callRaw(tb testing.TB, session, method string, params any) []byte {
	p.seq++
	msg := map[string]any{"id": p.seq, "method": method, "params": params}
	if session != "" {
		msg["sessionId"] = session
	}
	if err := p.ws.WriteJSON(msg); err != nil {
		tb.Fatal(err)
	}
	prefix := fmt.Appendf(nil, `{"id":%d,`, p.seq)
	for {
		_, r, err := p.ws.NextReader()
		if err != nil {
			tb.Fatalf("%s: %v", method, err)
		}
		p.buf.Reset()
		if _, err := p.buf.ReadFrom(r); err != nil {
			tb.Fatalf("%s: %v", method, err)
		}
		b := p.buf.Bytes()
		if !bytes.HasPrefix(b, prefix) { // Chromium writes the id first: this is an event
			continue
		}
		if bytes.HasPrefix(b[len(prefix):], []byte(`"error"`)) {
			tb.Fatalf("%s: %.300s", method, b)
		}
		return b
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

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// BenchmarkCDPRoundTrip: Runtime.evaluate("1+1") on a session's page,
// directly on the lane's DevTools socket, through the hub the worker is
// linked to (B), and through another hub (A, one cluster hop more). The
// figures are ratios to the direct connection, measured in the same run.
func BenchmarkCDPRoundTrip(b *testing.B) {
	g := startGatewayBench(b, 1, nil, nil)
	id, _ := g.openSession(b, g.ha.URL())
	paths := []struct {
		name string
		page *cdpPage
	}{
		{"direct", attachPage(b, g.devTools(b, 0))},
		{"worker_hub", attachPage(b, wsURL(g.hb.URL())+"/sessions/"+id+"/cdp")},
		{"other_hub", attachPage(b, wsURL(g.ha.URL())+"/sessions/"+id+"/cdp")},
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

// The 20 MB transfer: a page holding a canvas of random pixels (PNG does
// not compress noise, so the PNG is about 3 bytes a pixel) and a 20 MB
// string, the latter to show the path's own cost without Chromium's PNG
// encoding in the time.
const (
	noiseW, noiseH = 2560, 2600
	bigString      = 20_000_000
)

// noisePage draws the canvas and keeps the string in the page.
var noisePage = fmt.Sprintf(`(() => {
	document.body.style.margin = '0';
	const c = document.createElement('canvas');
	c.width = %[1]d; c.height = %[2]d;
	document.body.appendChild(c);
	const x = c.getContext('2d');
	const img = x.createImageData(%[1]d, %[2]d), d = img.data;
	const chunk = new Uint8Array(65536);
	for (let i = 0; i < d.length; i += chunk.length) {
		crypto.getRandomValues(chunk);
		d.set(chunk.subarray(0, Math.min(chunk.length, d.length - i)), i);
	}
	for (let i = 3; i < d.length; i += 4) d[i] = 255;
	x.putImageData(img, 0, 0);
	window.__big = 'x'.repeat(%[3]d);
	return d.length;
})()`, noiseW, noiseH, bigString)

var screenshotParams = map[string]any{
	"format": "png", "captureBeyondViewport": true,
	"clip": map[string]any{"x": 0, "y": 0, "width": noiseW, "height": noiseH, "scale": 1},
}

// screenshot takes the canvas's screenshot and returns the PNG's size.
func (p *cdpPage) screenshot(tb testing.TB) int {
	raw := p.callRaw(tb, p.session, "Page.captureScreenshot", screenshotParams)
	_, after, ok := bytes.Cut(raw, []byte(`"data":"`))
	end := bytes.IndexByte(after, '"')
	if !ok || end < 0 {
		tb.Fatalf("screenshot answer without data: %.200s", raw)
	}
	return end / 4 * 3
}

// bigEval reads the page's 20 MB string and returns the answer's size.
func (p *cdpPage) bigEval(tb testing.TB) int {
	return len(p.callRaw(tb, p.session, "Runtime.evaluate", map[string]any{"expression": "window.__big", "returnByValue": true}))
}

// transferPaths attaches to the session's page directly, through B and
// through A.
func (g *gatewayBench) transferPaths(b *testing.B, id string) []namedPage {
	return []namedPage{
		{"direct", attachPage(b, g.devTools(b, 0))},
		{"worker_hub", attachPage(b, wsURL(g.hb.URL())+"/sessions/"+id+"/cdp")},
		{"other_hub", attachPage(b, wsURL(g.ha.URL())+"/sessions/"+id+"/cdp")},
	}
}

type namedPage struct {
	name string
	page *cdpPage
}

// BenchmarkCDPTransfer20MB: Page.captureScreenshot of a 2560×2600 canvas
// of noise (a PNG of about 20 MB, 27 MB of base64 in the CDP answer) and
// Runtime.evaluate of a 20 MB string, directly, through the worker's hub
// and through another hub. At least 7 samples per path, interleaved;
// the figures are medians, and the ratios medians over the direct
// median of the same run (goal: ≤ 2× direct).
func BenchmarkCDPTransfer20MB(b *testing.B) {
	g := startGatewayBench(b, 1, nil, nil)
	id, _ := g.openSession(b, g.ha.URL())
	paths := g.transferPaths(b, id)
	defer func() {
		for _, p := range paths {
			_ = p.page.ws.Close()
		}
	}()
	paths[0].page.call(b, paths[0].page.session, "Runtime.evaluate", map[string]any{"expression": noisePage, "awaitPromise": true})
	for _, kind := range []struct {
		name string
		do   func(*cdpPage, testing.TB) int
		unit string
	}{
		{"screenshot", (*cdpPage).screenshot, "png-MB"},
		{"evaluate", (*cdpPage).bigEval, "answer-MB"},
	} {
		b.Run(kind.name, func(b *testing.B) {
			size := 0
			for _, p := range paths { // warm up, and every path sees the same page
				size = kind.do(p.page, b)
			}
			n := max(b.N, 7)
			times := make([][]time.Duration, len(paths))
			b.ResetTimer()
			for range n {
				for i, p := range paths {
					start := time.Now()
					kind.do(p.page, b)
					times[i] = append(times[i], time.Since(start))
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(size)/1e6, kind.unit)
			d50 := percentile(times[0], 0.5)
			b.ReportMetric(ms(d50), "direct-ms")
			for i, p := range paths[1:] {
				p50 := percentile(times[i+1], 0.5)
				b.ReportMetric(ms(p50), p.name+"-ms")
				b.ReportMetric(float64(p50)/float64(d50), p.name+"-x")
			}
		})
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

// linkClock records when B read each frame of the worker's link.
type linkClock struct {
	mu     sync.Mutex
	frames []linkFrame
}

type linkFrame struct {
	at  time.Time
	typ string
}

func (c *linkClock) seen(workerID, typ string) {
	if workerID != benchWorker {
		return
	}
	now := time.Now()
	c.mu.Lock()
	c.frames = append(c.frames, linkFrame{now, typ})
	c.mu.Unlock()
}

// gaps are the intervals between consecutive frames of type typ read
// within one of spans (a gap that straddles two spans is not counted).
func (c *linkClock) gaps(typ string, spans []span) []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []time.Duration
	for _, sp := range spans {
		var last time.Time
		for _, f := range c.frames {
			if f.typ != typ || f.at.Before(sp.from) || !f.at.Before(sp.to) {
				continue
			}
			if !last.IsZero() {
				out = append(out, f.at.Sub(last))
			}
			last = f.at
		}
	}
	return out
}

// span is a stretch of time.
type span struct{ from, to time.Time }

func (c *linkClock) count(typ string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(slices.DeleteFunc(slices.Clone(c.frames), func(f linkFrame) bool { return f.typ != typ }))
}

// Link timing: heartbeats every linkHeartbeat, and a noop job on the
// worker's second lane logging a line every linkLogEvery.
const (
	linkHeartbeat = 100 * time.Millisecond
	linkLogEvery  = 20 * time.Millisecond
)

// BenchmarkCDPLinkDuringTransfer: how long the worker's link is held up
// while its tunnels carry 20 MB screenshots back to back. The worker
// heartbeats every 100 ms and a noop job on its other lane logs a line
// every 20 ms; hub B (the worker's) records when it reads each frame of
// the link. The gaps between consecutive heartbeats and between
// consecutive log lines, max and p99, are reported while screenshots run
// (through B and through A, alternately) and over as long a stretch with
// no transfer, with their ratio (goal: held up by at most 100 ms, i.e. a
// heartbeat gap ≤ 200 ms and a log gap ≤ 120 ms).
func BenchmarkCDPLinkDuringTransfer(b *testing.B) {
	clock := &linkClock{}
	g := startGatewayBench(b, 2, map[string]string{"worker.heartbeat_interval": linkHeartbeat.String()}, clock.seen)
	id, _ := g.openSession(b, g.ha.URL())
	paths := g.transferPaths(b, id)
	defer func() {
		for _, p := range paths {
			_ = p.page.ws.Close()
		}
	}()
	paths[0].page.call(b, paths[0].page.session, "Runtime.evaluate", map[string]any{"expression": noisePage, "awaitPromise": true})
	for _, p := range paths[1:] {
		p.page.screenshot(b) // warm up
	}
	st, body := doTB(b, "POST", g.hb.URL()+"/jobs", fmt.Sprintf(`{"mode":"noop","timeout_s":900,"params":{"lines":100000,"interval_ms":%d}}`, linkLogEvery.Milliseconds()))
	if st != http.StatusCreated {
		b.Fatalf("submit: %d %s", st, body)
	}
	var job struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(body, &job)
	defer doTB(b, "POST", g.hb.URL()+"/jobs/"+job.ID+"/cancel", "")
	for deadline := time.Now().Add(30 * time.Second); clock.count(messages.TypeJobLog) < 20; {
		if time.Now().After(deadline) {
			b.Fatal("the noop job logs nothing")
		}
		time.Sleep(20 * time.Millisecond)
	}

	// Rounds of four phases: screenshots through the hubs (B and A
	// alternately); 20 MB evaluates through them (the bytes at the
	// path's own pace, without Chromium's PNG encoding between them); as
	// many screenshots directly (the lane's own socket: Chromium's and
	// the machine's share of the delay, with no tunnel); and as long a
	// stretch with no transfer. The machine's other load falls on all
	// four alike.
	shot := func(p *cdpPage) { p.screenshot(b) }
	eval := func(p *cdpPage) { p.bigEval(b) }
	phases := []struct {
		name  string
		do    func(*cdpPage)
		pages []*cdpPage
		spans []span
	}{
		{name: "hubs", do: shot, pages: []*cdpPage{paths[1].page, paths[2].page}},
		{name: "hubs_eval", do: eval, pages: []*cdpPage{paths[1].page, paths[2].page, paths[1].page, paths[2].page}},
		{name: "direct", do: shot, pages: []*cdpPage{paths[0].page, paths[0].page}},
		{name: "idle"},
	}
	b.ResetTimer()
	for range max(b.N, 4) {
		for i := range phases {
			p := &phases[i]
			from := time.Now()
			for _, page := range p.pages {
				p.do(page)
			}
			if p.pages == nil {
				last := phases[0].spans[len(phases[0].spans)-1]
				time.Sleep(last.to.Sub(last.from))
			}
			p.spans = append(p.spans, span{from, time.Now()})
		}
	}
	b.StopTimer()

	for _, s := range []struct {
		typ, name string
		every     time.Duration
	}{{messages.TypeHeartbeat, "hb", linkHeartbeat}, {messages.TypeJobLog, "log", linkLogEvery}} {
		gaps := map[string][]time.Duration{}
		for _, p := range phases {
			g := clock.gaps(s.typ, p.spans)
			if len(g) < 5 {
				b.Fatalf("%s: %d gaps in phase %s", s.typ, len(g), p.name)
			}
			gaps[p.name] = g
			b.Logf("%s gaps %s: p50 %v p90 %v p99 %v max %v (%d)", s.name, p.name, percentile(g, .5), percentile(g, .9),
				percentile(g, .99), slices.Max(g), len(g))
			b.ReportMetric(ms(slices.Max(g)), s.name+"-"+p.name+"-max-ms")
			b.ReportMetric(ms(percentile(g, 0.99)), s.name+"-"+p.name+"-p99-ms")
		}
		for _, ph := range []string{"hubs", "hubs_eval"} {
			b.ReportMetric(float64(percentile(gaps[ph], 0.99))/float64(percentile(gaps["direct"], 0.99)), s.name+"-"+ph+"-p99-x-direct")
			b.ReportMetric(float64(percentile(gaps[ph], 0.99))/float64(percentile(gaps["idle"], 0.99)), s.name+"-"+ph+"-p99-x-idle")
		}
	}
}

// BenchmarkCDPSessionStart: from nothing to the first CDP answer on a
// warm lane (its browser running, idle, clean): POST /sessions, connect
// to its cdp_url, Browser.getVersion answered; and the same through the
// one-step GET /cdp (connect, answer). Each through the worker's hub and
// through another hub, against the direct baseline: connecting to the
// lane's own DevTools socket of the already-started browser and asking
// the same. After each sample the session is closed and the lane waited
// for until it is idle again (untimed). At least 20 samples per path,
// interleaved (p99 of 20 is their max); goal: p50 ≤ 150 ms.
func BenchmarkCDPSessionStart(b *testing.B) {
	g := startGatewayBench(b, 1, nil, nil)
	version := func(p *cdpPage) {
		if res := p.call(b, "", "Browser.getVersion", map[string]any{}); !bytes.Contains(res, []byte("product")) {
			b.Fatalf("Browser.getVersion: %s", res)
		}
	}
	// Warm the lane: its browser starts for the first session and stays.
	id, _ := g.openSession(b, g.ha.URL())
	doTB(b, "DELETE", g.ha.URL()+"/sessions/"+id, "")
	g.waitLanesIdle(b)

	direct := func() {
		p := dialBenchCDP(b, g.devTools(b, 0))
		version(p)
		_ = p.ws.Close()
	}
	posts := map[*Hub][]time.Duration{} // the POST's share of each session sample
	// viaSession times POST /sessions on hub → first answer; the close
	// and the lane's cleaning are not timed. A 503 (the hubs' view of the
	// lane a moment behind the worker's report) is tried again, and the
	// sample starts with the try that got the lane.
	viaSession := func(h *Hub) func() (time.Time, func()) {
		return func() (time.Time, func()) {
			var start time.Time
			var st int
			var body []byte
			for try := 0; st != http.StatusCreated; try++ {
				if try > 0 {
					if st != http.StatusServiceUnavailable || try > 100 {
						b.Fatalf("POST /sessions: %d %s", st, body)
					}
					time.Sleep(20 * time.Millisecond)
				}
				start = time.Now()
				st, body = doTB(b, "POST", h.URL()+"/sessions", `{"idle_timeout_s":60}`)
			}
			posts[h] = append(posts[h], time.Since(start))
			var sess struct {
				ID     string `json:"id"`
				CDPURL string `json:"cdp_url"`
			}
			_ = json.Unmarshal(body, &sess)
			p := dialBenchCDP(b, sess.CDPURL)
			version(p)
			return start, func() {
				_ = p.ws.Close()
				doTB(b, "DELETE", h.URL()+"/sessions/"+sess.ID, "")
			}
		}
	}
	// oneStep times GET /cdp → first answer; its session closes when the
	// client goes.
	oneStep := func(h *Hub) func() (time.Time, func()) {
		return func() (time.Time, func()) {
			for try := 0; ; try++ {
				start := time.Now()
				ws, resp, err := benchDialer.Dial(wsURL(h.URL())+"/cdp?idle_timeout_s=60", nil)
				if err != nil {
					if resp == nil || resp.StatusCode != http.StatusServiceUnavailable || try > 100 {
						b.Fatalf("GET /cdp: %v", err)
					}
					time.Sleep(20 * time.Millisecond)
					continue
				}
				p := &cdpPage{ws: ws}
				version(p)
				return start, func() { _ = p.ws.Close() }
			}
		}
	}
	paths := []struct {
		name  string
		start func() (time.Time, func()) // when the sample began, and its untimed end
	}{
		{"direct", func() (time.Time, func()) { start := time.Now(); direct(); return start, func() {} }},
		{"session_worker_hub", viaSession(g.hb)},
		{"session_other_hub", viaSession(g.ha)},
		{"cdp_worker_hub", oneStep(g.hb)},
		{"cdp_other_hub", oneStep(g.ha)},
	}
	for _, p := range paths { // warm up every path once
		_, end := p.start()
		end()
		g.waitLanesIdle(b)
	}
	times := make([][]time.Duration, len(paths))
	b.ResetTimer()
	for range max(b.N, 20) {
		for i, p := range paths {
			g.waitLanesIdle(b)
			start, end := p.start()
			times[i] = append(times[i], time.Since(start))
			b.StopTimer()
			end()
			b.StartTimer()
		}
	}
	b.StopTimer()
	d50 := percentile(times[0], 0.5)
	b.ReportMetric(ms(d50), "direct-p50-ms")
	b.ReportMetric(ms(percentile(times[0], 0.99)), "direct-p99-ms")
	for i, p := range paths[1:] {
		p50 := percentile(times[i+1], 0.5)
		b.ReportMetric(ms(p50), p.name+"-p50-ms")
		b.ReportMetric(ms(percentile(times[i+1], 0.99)), p.name+"-p99-ms")
		b.ReportMetric(float64(p50)/float64(d50), p.name+"-p50-x")
	}
	for name, h := range map[string]*Hub{"session_worker_hub": g.hb, "session_other_hub": g.ha} {
		b.ReportMetric(ms(percentile(posts[h], 0.5)), name+"-post-p50-ms")
	}
}
