package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/internal/testproxy"
	"github.com/paprika-hub/paprika/persistence/storetest"
)

// The browser gateway with real processes: hubs, a chromium worker, and
// real CDP clients — Puppeteer and Playwright on the machine's Node — each
// connected to a hub that is NOT the one the worker is linked to.

const formPage = `<!doctype html><title>Form</title>
<form onsubmit="document.getElementById('out').textContent='hello '+document.getElementById('name').value;return false">
<input id="name"><button id="go" type="submit">go</button></form><p id="out"></p>`

func serveFormPage(t *testing.T) *httptest.Server {
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.SetCookie(w, &http.Cookie{Name: "flavor", Value: "paprika", Path: "/"})
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, formPage)
	}))
	t.Cleanup(page.Close)
	return page
}

// needChromium skips (fails under CI) without Chromium.
func needChromium(t *testing.T) {
	if _, err := exec.LookPath("chromium"); err != nil {
		if _, err2 := os.Stat("/usr/bin/chromium"); err2 != nil {
			storetest.Unavailable(t, "chromium", err)
		}
	}
}

// cdpClients is the directory of the Node clients, installed by
// scripts/cdp-clients.sh (which make test runs).
func cdpClients(t *testing.T) string {
	dir, err := filepath.Abs(filepath.Join("testdata", "cdp"))
	require.NoError(t, err)
	if _, err := exec.LookPath("node"); err != nil {
		storetest.Unavailable(t, "node", err)
	}
	for _, m := range []string{"puppeteer-core", "playwright-core"} {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", m, "package.json")); err != nil {
			storetest.Unavailable(t, m+" (run scripts/cdp-clients.sh)", err)
		}
	}
	return dir
}

// startChromiumWorker starts a one-lane chromium worker linked to hubs
// (the first, then the next on reconnect).
func startChromiumWorker(t *testing.T, id string, hubs ...string) *proc {
	return startBinary(t, clusterBinary, "worker-"+id, nil, "worker", "--hub", strings.Join(hubs, ","), "--id", id,
		"--lanes", "1", "--driver", "chromium")
}

type sessionAnswer struct {
	ID     string `json:"id"`
	CDPURL string `json:"cdp_url"`
	Status string `json:"status"`
}

func httpDo(t *testing.T, method, url, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(res.Body)
	return res.StatusCode, b.Bytes()
}

func openSession(t *testing.T, hubURL string) sessionAnswer {
	t.Helper()
	var s sessionAnswer
	require.Eventually(t, func() bool {
		st, b := httpDo(t, "POST", hubURL+"/sessions", `{"idle_timeout_s":120}`)
		if st != http.StatusCreated {
			t.Logf("POST /sessions: %d %s", st, b)
			return false
		}
		require.NoError(t, json.Unmarshal(b, &s))
		return true
	}, 30*time.Second, 500*time.Millisecond, "a session opens")
	require.NotEmpty(t, s.CDPURL)
	return s
}

func waitLaneFree(t *testing.T, hubURL string) {
	t.Helper()
	require.Eventually(t, func() bool {
		var ws struct {
			Workers []struct {
				Alive    bool `json:"alive"`
				InFlight int  `json:"in_flight"`
			} `json:"workers"`
		}
		getJSON(t, hubURL+"/workers", &ws)
		return len(ws.Workers) == 1 && ws.Workers[0].Alive && ws.Workers[0].InFlight == 0
	}, 30*time.Second, 100*time.Millisecond, "the worker's lane is free")
}

// clientSaw is what drive.js printed.
type clientSaw struct {
	Version     string `json:"version"`
	Text        string `json:"text"`
	PNG         string `json:"png"`
	PNGBytes    int    `json:"pngBytes"`
	Cookies     []struct{ Name, Value string }
	Intercepted int `json:"intercepted"` // requests the client's own interception continued (PAPRIKA_INTERCEPT=1)
}

// runClient runs drive.js and checks what the client saw.
func runClient(t *testing.T, dir, client, endpoint, pageURL string) {
	t.Helper()
	runClientEnv(t, dir, client, endpoint, pageURL)
}

// runClientEnv is runClient with more environment for drive.js.
func runClientEnv(t *testing.T, dir, client, endpoint, pageURL string, env ...string) clientSaw {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "drive.js", client, endpoint, pageURL)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	require.NoError(t, cmd.Run(), "%s via %s: %s", client, endpoint, errOut.String())
	var got clientSaw
	require.NoError(t, json.Unmarshal(out.Bytes(), &got), out.String())
	require.Equal(t, "hello paprika", got.Text, "%s typed, clicked and read the text", client)
	require.Equal(t, "89504e470d0a1a0a", got.PNG, "%s took a PNG screenshot", client)
	require.Greater(t, got.PNGBytes, 1000)
	require.Contains(t, got.Cookies, struct{ Name, Value string }{"flavor", "paprika"}, "%s read the page's cookie", client)
	require.NotEmpty(t, got.Version, "the browser's version, from the lane")
	t.Logf("%s via %s: %s", client, endpoint, out.String())
	return got
}

// TestCDPClientsThroughAnotherHub: Puppeteer (connect with
// browserWSEndpoint) and Playwright (connectOverCDP with the session's
// HTTP address, which fetches /json/version/) drive the lane through hub
// 0 while the worker is linked to hub 1; the same through GET /cdp.
func TestCDPClientsThroughAnotherHub(t *testing.T) {
	needChromium(t)
	dir := cdpClients(t)
	page := serveFormPage(t)
	f := newFleet(t, 2)
	startChromiumWorker(t, "wc", f.urls[1])
	waitLaneFree(t, f.urls[0])

	for _, client := range []string{"puppeteer", "playwright"} {
		s := openSession(t, f.urls[0])
		require.True(t, strings.HasPrefix(s.CDPURL, "ws://"+strings.TrimPrefix(f.urls[0], "http://")+"/"), s.CDPURL)
		endpoint := s.CDPURL
		if client == "playwright" {
			endpoint = f.urls[0] + "/sessions/" + s.ID // connectOverCDP asks <endpoint>/json/version/
		}
		runClient(t, dir, client, endpoint, page.URL)
		st, b := httpDo(t, "DELETE", f.urls[0]+"/sessions/"+s.ID, "")
		require.Equal(t, http.StatusOK, st, string(b))
		waitLaneFree(t, f.urls[0])

		runClient(t, dir, client, "ws://"+strings.TrimPrefix(f.urls[0], "http://")+"/cdp", page.URL)
		waitLaneFree(t, f.urls[0]) // /cdp's session closed with its client
	}
}

// cdpCall sends one CDP command on ws and returns its result.
func cdpCall(ws *websocket.Conn, id int, method string, params any) (json.RawMessage, error) {
	if err := ws.WriteJSON(map[string]any{"id": id, "method": method, "params": params}); err != nil {
		return nil, err
	}
	_ = ws.SetReadDeadline(time.Now().Add(20 * time.Second))
	for {
		var m struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if err := ws.ReadJSON(&m); err != nil {
			return nil, err
		}
		if m.ID == id {
			if m.Error != nil {
				return nil, fmt.Errorf("%s: %s", method, m.Error)
			}
			return m.Result, nil
		}
	}
}

// hasPage reports whether the browser behind cdpURL shows a page at url
// titled title.
func hasPage(t *testing.T, cdpURL, url, title string) bool {
	ws, _, err := websocket.DefaultDialer.Dial(cdpURL, nil)
	if err != nil {
		t.Logf("dial %s: %v", cdpURL, err)
		return false
	}
	defer ws.Close()
	res, err := cdpCall(ws, 1, "Target.getTargets", map[string]any{})
	if err != nil {
		t.Logf("getTargets via %s: %v", cdpURL, err)
		return false
	}
	var got struct {
		TargetInfos []struct{ Type, URL, Title string } `json:"targetInfos"`
	}
	_ = json.Unmarshal(res, &got)
	for _, ti := range got.TargetInfos {
		if ti.Type == "page" && strings.TrimSuffix(ti.URL, "/") == strings.TrimSuffix(url, "/") && ti.Title == title {
			return true
		}
	}
	t.Logf("targets via %s: %+v", cdpURL, got.TargetInfos)
	return false
}

// waitClose reads ws until it closes and returns the close frame.
func waitClose(t *testing.T, ws *websocket.Conn) *websocket.CloseError {
	t.Helper()
	_ = ws.SetReadDeadline(time.Now().Add(30 * time.Second))
	for {
		_, _, err := ws.ReadMessage()
		if err == nil {
			continue
		}
		var ce *websocket.CloseError
		require.True(t, errors.As(err, &ce), "the client's socket closes with a close frame, not %v", err)
		return ce
	}
}

// TestCDPHubKilledUnderClient: a hub under a connected CDP client goes
// away — the client's hub stopped cleanly (SIGTERM: 1001), then the hub
// carrying the worker's tunnel killed (SIGKILL: 1011) — and each time the
// client's socket closes with a reason, and reconnecting to the session's
// cdp_url through another hub finds the same page.
func TestCDPHubKilledUnderClient(t *testing.T) {
	needChromium(t)
	page := serveFormPage(t)
	f := newFleet(t, 3)
	// The worker links to hub 1, or is sent on to hub 2 when its grain is
	// there, and to the other of the two when its hub is gone.
	startChromiumWorker(t, "wc", f.urls[1], f.urls[2])
	waitLaneFree(t, f.urls[0])
	s := openSession(t, f.urls[0])
	st, b := httpDo(t, "POST", f.urls[0]+"/sessions/"+s.ID+"/commands", `{"op":"navigate","url":"`+page.URL+`"}`)
	require.Equal(t, http.StatusOK, st, string(b))
	cdpOn := func(i int) string {
		return "ws://" + strings.TrimPrefix(f.urls[i], "http://") + "/sessions/" + s.ID + "/cdp"
	}

	// 1. The client's own hub (0) stops: 1001, go elsewhere.
	ws, _, err := websocket.DefaultDialer.Dial(s.CDPURL, nil)
	require.NoError(t, err)
	_, err = cdpCall(ws, 1, "Target.getTargets", map[string]any{})
	require.NoError(t, err, "the tunnel works before the stop")
	go f.hubs[0].stop(30 * time.Second)
	ce := waitClose(t, ws)
	require.Equal(t, websocket.CloseGoingAway, ce.Code)
	require.Contains(t, ce.Text, "shutting down")
	require.Contains(t, ce.Text, "cdp_url")
	require.Eventually(t, func() bool { return hasPage(t, cdpOn(2), page.URL, "Form") }, 30*time.Second, 500*time.Millisecond,
		"the same page, through another hub")

	// 2. The hub carrying the worker's tunnel — its link's: hub 1, or hub
	// 2 when hub 1 sent it on to its grain's hub (relink) — is killed
	// under a client on the other: 1011, and the worker moves to that
	// other hub. The cluster may still be settling after hub 0 left (the
	// worker's and the session's grains moving): a tunnel that does not
	// open is retried.
	tunnel := linkHub(t, f, "wc", 1, 2)
	other := 3 - tunnel
	t.Logf("the worker's link is on hub %d; the client goes through hub %d", tunnel, other)
	require.Eventually(t, func() bool {
		c, _, err := websocket.DefaultDialer.Dial(cdpOn(other), nil)
		if err != nil {
			return false
		}
		if _, err = cdpCall(c, 1, "Target.getTargets", map[string]any{}); err != nil {
			_ = c.Close()
			return false
		}
		ws = c
		return true
	}, 30*time.Second, 500*time.Millisecond, "a tunnel through the other hub before the kill")
	f.hubs[tunnel].kill()
	ce = waitClose(t, ws)
	require.Equal(t, websocket.CloseInternalServerErr, ce.Code, ce.Text)
	require.Contains(t, ce.Text, "went away", "the reason says the tunnel's hub is gone")
	require.Eventually(t, func() bool { return hasPage(t, cdpOn(other), page.URL, "Form") }, 60*time.Second, time.Second,
		"after the worker reconnected, the same page")
	st, b = httpDo(t, "GET", f.urls[other]+"/sessions/"+s.ID, "")
	require.Equal(t, http.StatusOK, st, string(b))
	require.Contains(t, string(b), `"status":"open"`)
}

// linkHub is the index, among candidates, of the hub holding worker's
// link (fleet.linkIndexes through the first candidate): a worker given
// several hubs links where its grain lives when it was given that hub, so
// a test that kills "the worker's hub" asks.
func linkHub(t *testing.T, f *fleet, worker string, candidates ...int) int {
	t.Helper()
	var at int
	require.Eventually(t, func() bool {
		idx, ok := f.linkIndexes(f.urls[candidates[0]])
		i, found := idx[worker]
		at = i
		return ok && found && slices.Contains(candidates, i)
	}, 20*time.Second, 200*time.Millisecond, "the hub holding %s's link, among %v", worker, candidates)
	return at
}

// rssMiB reads a process's resident set size.
func rssMiB(t *testing.T, pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(t, err)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			var kb int
			_, err := fmt.Sscanf(strings.TrimSpace(v), "%d kB", &kb)
			require.NoError(t, err)
			return kb / 1024
		}
	}
	t.Fatalf("no VmRSS for pid %d", pid)
	return 0
}

// TestCDPSlowClientMemoryFlat: a client asks for 160 MB of answers and
// reads none of them. The hubs (the client's and the worker's) and the
// worker hold back rather than buffer — their memory stays flat, sampled
// from /proc — and once the client reads, every answer arrives whole.
func TestCDPSlowClientMemoryFlat(t *testing.T) {
	needChromium(t)
	f := newFleet(t, 2)
	worker := startChromiumWorker(t, "wc", f.urls[1])
	waitLaneFree(t, f.urls[0])
	s := openSession(t, f.urls[0])
	ws, _, err := websocket.DefaultDialer.Dial(s.CDPURL, nil)
	require.NoError(t, err)
	defer ws.Close()
	res, err := cdpCall(ws, 1, "Target.getTargets", map[string]any{})
	require.NoError(t, err)
	var targets struct {
		TargetInfos []struct{ TargetID, Type string } `json:"targetInfos"`
	}
	require.NoError(t, json.Unmarshal(res, &targets))
	var pageID string
	for _, ti := range targets.TargetInfos {
		if ti.Type == "page" {
			pageID = ti.TargetID
		}
	}
	require.NotEmpty(t, pageID)
	res, err = cdpCall(ws, 2, "Target.attachToTarget", map[string]any{"targetId": pageID, "flatten": true})
	require.NoError(t, err)
	var att struct {
		SessionID string `json:"sessionId"`
	}
	require.NoError(t, json.Unmarshal(res, &att))
	// 160 MiB: Chromium itself closes a DevTools socket with more than
	// 256 MiB waiting to be sent (its kSendBufferSizeForDevTools).
	const answerBytes, answers = 8 << 20, 20
	eval := func(id int) map[string]any {
		return map[string]any{"id": id, "sessionId": att.SessionID, "method": "Runtime.evaluate",
			"params": map[string]any{"expression": fmt.Sprintf("'x'.repeat(%d)", answerBytes), "returnByValue": true}}
	}
	// Warm up: one answer read in full, so the sockets' buffers exist.
	require.NoError(t, ws.WriteJSON(eval(3)))
	for {
		_, b, err := ws.ReadMessage()
		require.NoError(t, err)
		if len(b) > answerBytes {
			break
		}
	}
	procs := map[string]int{"client's hub": f.hubs[0].cmd.Process.Pid, "worker's hub": f.hubs[1].cmd.Process.Pid,
		"worker": worker.cmd.Process.Pid}
	base := map[string]int{}
	for name, pid := range procs {
		base[name] = rssMiB(t, pid)
	}
	for i := range answers {
		require.NoError(t, ws.WriteJSON(eval(100+i)))
	}
	peak := map[string]int{}
	for range 20 { // 10 s of answers piling up behind a client that reads nothing
		for name, pid := range procs {
			peak[name] = max(peak[name], rssMiB(t, pid))
		}
		time.Sleep(500 * time.Millisecond)
	}
	for name := range procs {
		t.Logf("%s: RSS %d MiB before, %d MiB at most while %d MiB of answers waited", name, base[name], peak[name], answers*answerBytes>>20)
		require.Less(t, peak[name]-base[name], 96, "%s buffers the answers instead of holding back", name)
	}
	got, start := 0, time.Now()
	defer func() { t.Logf("read %d answers in %s", got, time.Since(start)) }()
	_ = ws.SetReadDeadline(time.Now().Add(120 * time.Second))
	for got < answers {
		_, b, err := ws.ReadMessage()
		require.NoError(t, err)
		if len(b) > answerBytes {
			require.True(t, bytes.Contains(b, []byte(`"sessionId"`)))
			got++
		}
	}
}

// TestCDPSessionWithAuthenticatingProxy: a session opened with a proxy
// that asks for credentials and a block option, driven by Puppeteer
// through a hub the worker is not linked to: the page it opens itself
// loads through the proxy with the session's credentials (the worker's
// guard answers the 407), and the blocked script is never requested —
// also while Puppeteer intercepts the page's requests itself.
func TestCDPSessionWithAuthenticatingProxy(t *testing.T) {
	needChromium(t)
	dir := cdpClients(t)
	var mu sync.Mutex
	var paths []string
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.URL.Path)
		mu.Unlock()
		http.SetCookie(w, &http.Cookie{Name: "flavor", Value: "paprika", Path: "/"})
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, formPage+`<script src="/ads/tracker.js"></script>`)
	}))
	t.Cleanup(page.Close)
	const user, pass = "dora", "e2e-pr0xy-Pw"
	proxy := testproxy.New(user, pass)
	t.Cleanup(proxy.Close)
	f := newFleet(t, 2)
	startChromiumWorker(t, "wp", f.urls[1])
	waitLaneFree(t, f.urls[0])

	body, err := json.Marshal(map[string]any{"idle_timeout_s": 120,
		"proxy": map[string]string{"server": proxy.URL, "username": user, "password": pass},
		"block": map[string]any{"url_patterns": []string{"*/ads/*"}}})
	require.NoError(t, err)
	for _, intercept := range []string{"0", "1"} {
		var s sessionAnswer
		require.Eventually(t, func() bool {
			st, b := httpDo(t, "POST", f.urls[0]+"/sessions", string(body))
			if st != http.StatusCreated {
				t.Logf("POST /sessions: %d %s", st, b)
				return false
			}
			require.NoError(t, json.Unmarshal(b, &s))
			return true
		}, 30*time.Second, 500*time.Millisecond, "a session opens")
		saw := runClientEnv(t, dir, "puppeteer", s.CDPURL, page.URL+"/form", "PAPRIKA_INTERCEPT="+intercept)
		if intercept == "1" {
			require.Positive(t, saw.Intercepted, "Puppeteer's own interception saw the requests")
		}
		authed := slices.ContainsFunc(proxy.Requests(), func(r testproxy.Request) bool {
			return r.Auth == "ok" && strings.HasSuffix(r.Target, "/form")
		})
		require.True(t, authed, "the proxy saw the page with the session's credentials: %+v", proxy.Requests())
		mu.Lock()
		require.Contains(t, paths, "/form")
		require.NotContains(t, paths, "/ads/tracker.js", "the blocked script was requested")
		mu.Unlock()
		st, b := httpDo(t, "DELETE", f.urls[0]+"/sessions/"+s.ID, "")
		require.Equal(t, http.StatusOK, st, string(b))
		waitLaneFree(t, f.urls[0])
	}
}
