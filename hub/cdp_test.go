package hub

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/remote"
	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/messages"
	"github.com/paprika-hub/paprika/persistence"
)

// serveCookiePage serves the form page with a cookie, on 127.0.0.1.
func serveCookiePage(t *testing.T) *httptest.Server {
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.SetCookie(w, &http.Cookie{Name: "flavor", Value: "paprika", Path: "/"})
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, formPage)
	}))
	t.Cleanup(page.Close)
	return page
}

// dialCDP opens a WebSocket to url and reports the HTTP status of a
// refusal (0 when the upgrade succeeded).
func dialCDP(t *testing.T, url string, hdr http.Header) (*websocket.Conn, int) {
	t.Helper()
	ws, resp, err := websocket.DefaultDialer.Dial(url, hdr)
	if err != nil {
		require.NotNil(t, resp, "dial %s: %v", url, err)
		return nil, resp.StatusCode
	}
	t.Cleanup(func() { _ = ws.Close() })
	return ws, 0
}

func wsURL(httpURL string) string { return "ws" + strings.TrimPrefix(httpURL, "http") }

// openCDPSession opens a session through hubURL and returns its id and
// cdp_url.
func openCDPSession(t *testing.T, hubURL string, hdr ...string) (id, cdpURL string) {
	t.Helper()
	st, b := do(t, "POST", hubURL+"/sessions", `{"idle_timeout_s":60}`, hdr...)
	require.Equal(t, http.StatusCreated, st, string(b))
	var sess struct {
		ID     string `json:"id"`
		CDPURL string `json:"cdp_url"`
	}
	require.NoError(t, json.Unmarshal(b, &sess))
	require.NotEmpty(t, sess.CDPURL, string(b))
	return sess.ID, sess.CDPURL
}

// driveWithChromedp is what a chromedp user does through a hub: load a
// page, type, click, read text, take a screenshot, read a cookie.
func driveWithChromedp(t *testing.T, cdpURL, pageURL string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// NoModifyURL: cdp_url is the browser's socket already (chromedp would
	// otherwise ask the hub's root for /json/version).
	actx, cancelAlloc := remote.NewAllocator(ctx, cdpURL, remote.NoModifyURL)
	defer cancelAlloc()
	cctx, cancelTab := chromedp.NewContext(actx)
	defer cancelTab()
	require.NoError(t, chromedp.Do(cctx,
		chromedp.Navigate(pageURL),
		chromedp.SendKeys(chromedp.CSS("#name"), "paprika"),
		chromedp.Click(chromedp.CSS("#go")),
		chromedp.WaitVisible(chromedp.CSS("#out"))))
	text, err := chromedp.Run(cctx, chromedp.Text(chromedp.CSS("#out")))
	require.NoError(t, err)
	shot, err := chromedp.Run(cctx, chromedp.CaptureScreenshot())
	require.NoError(t, err)
	got, err := chromedp.Call(cctx, network.GetCookies, network.GetCookiesParams{URLs: []string{pageURL}})
	require.NoError(t, err)
	cookies := got.Cookies
	require.Equal(t, "hello paprika", text)
	img, err := png.Decode(bytes.NewReader(shot))
	require.NoError(t, err, "the screenshot is a PNG")
	require.Greater(t, img.Bounds().Dx(), 100)
	found := false
	for _, c := range cookies {
		found = found || c.Name == "flavor" && c.Value == "paprika"
	}
	require.True(t, found, "the page's cookie is readable: %v", cookies)
}

// TestCDPGatewayRefusals: the gateway's answers before any upgrade — 401
// without the token (header and query alike), 404 for an unknown session,
// 410 for a closed one, 403 for a web page's origin — and the URLs it
// hands out point at the hub.
func TestCDPGatewayRefusals(t *testing.T) {
	if testing.Short() {
		t.Skip("drives Chromium; skipped with -short")
	}
	cfg := testConfig(t)
	require.NoError(t, cfg.Set("auth.api_token", "tok"))
	require.NoError(t, cfg.Set("limits.cdp_tunnels_per_session", "1"))
	h := startTestHub(t, cfg)
	startChromiumAgent(t, h.URL(), "wc", 1)
	waitLoneWorker(t, h, func(w persistence.WorkerInfo) bool { return w.Alive }, 20*time.Second, 20*time.Millisecond)
	base := wsURL(h.URL())
	bearer := http.Header{"Authorization": {"bearer tok"}}

	for _, u := range []string{base + "/sessions/s-nope/cdp", base + "/sessions/s-nope/cdp?token=wrong", base + "/cdp"} {
		_, st := dialCDP(t, u, nil)
		require.Equal(t, http.StatusUnauthorized, st, u)
	}
	_, st := dialCDP(t, base+"/sessions/s-nope/cdp", bearer)
	require.Equal(t, http.StatusNotFound, st, "header token")
	_, st = dialCDP(t, base+"/sessions/s-nope/cdp?token=tok", nil)
	require.Equal(t, http.StatusNotFound, st, "query token")
	res, body := get(t, h.URL()+"/sessions/s-nope/json/version?token=tok")
	require.Equal(t, http.StatusNotFound, res.StatusCode, string(body))

	id, cdpURL := openCDPSession(t, h.URL(), "Authorization", "Bearer tok")
	require.Equal(t, base+"/sessions/"+id+"/cdp", cdpURL)
	for _, p := range []string{"/json/version", "/json/version/"} {
		res, body := get(t, h.URL()+"/sessions/"+id+p+"?token=tok")
		require.Equal(t, http.StatusOK, res.StatusCode, string(body))
		var v map[string]string
		require.NoError(t, json.Unmarshal(body, &v))
		require.Equal(t, cdpURL+"?token=tok", v["webSocketDebuggerUrl"], "the query token travels on")
		require.Contains(t, v["Browser"], "Chrome")
		require.NotEmpty(t, v["User-Agent"])
		require.NotEmpty(t, v["Protocol-Version"])
	}
	res, body = get(t, h.URL()+"/sessions/"+id+"/json/list", "Authorization", "Bearer tok")
	require.Equal(t, http.StatusOK, res.StatusCode, string(body))
	var list []map[string]string
	require.NoError(t, json.Unmarshal(body, &list))
	require.NotEmpty(t, list, "the session's page is listed")
	for _, e := range list {
		require.Equal(t, cdpURL+"/page/"+e["id"], e["webSocketDebuggerUrl"])
	}
	require.NotContains(t, string(body), "devtools")
	// A page-level tunnel speaks the page's CDP, without a sessionId.
	page, st := dialCDP(t, list[0]["webSocketDebuggerUrl"], bearer)
	require.Zero(t, st)
	require.NoError(t, page.WriteJSON(map[string]any{"id": 1, "method": "Runtime.evaluate", "params": map[string]any{"expression": "6*7"}}))
	var answer struct {
		ID     int `json:"id"`
		Result struct {
			Result struct {
				Value int `json:"value"`
			} `json:"result"`
		} `json:"result"`
	}
	require.NoError(t, page.SetReadDeadline(time.Now().Add(20*time.Second)))
	require.NoError(t, page.ReadJSON(&answer))
	require.Equal(t, 42, answer.Result.Result.Value)
	// One CDP client is all limits.cdp_tunnels_per_session allows here.
	_, st = dialCDP(t, cdpURL, bearer)
	require.Equal(t, http.StatusTooManyRequests, st, "a second client over the bound")
	_ = page.Close()
	require.Eventually(t, func() bool {
		ws, st := dialCDP(t, cdpURL, bearer)
		if ws != nil {
			_ = ws.Close()
		}
		return st == 0
	}, 10*time.Second, 100*time.Millisecond, "the first client's leaving frees its place")

	// A page on another site cannot drive the hub's browsers.
	_, st = dialCDP(t, cdpURL, http.Header{"Authorization": {"Bearer tok"}, "Origin": {"http://evil.example"}})
	require.Equal(t, http.StatusForbidden, st)

	st2, b := do(t, "DELETE", h.URL()+"/sessions/"+id, "", "Authorization", "Bearer tok")
	require.Equal(t, http.StatusOK, st2, string(b))
	_, st = dialCDP(t, cdpURL, bearer)
	require.Equal(t, http.StatusGone, st, "a closed session answers 410 before the upgrade")
}

// TestCDPChromedpThroughHub: chromedp drives the lane through the hub it
// is linked to, through /sessions/{id}/cdp and through /cdp; the session
// of /cdp closes when the client goes, and the lane is free again.
func TestCDPChromedpThroughHub(t *testing.T) {
	if testing.Short() {
		t.Skip("drives Chromium; skipped with -short")
	}
	page := serveCookiePage(t)
	h := startTestHub(t, testConfig(t))
	startChromiumAgent(t, h.URL(), "wc", 1)
	waitLoneWorker(t, h, func(w persistence.WorkerInfo) bool { return w.Alive }, 20*time.Second, 20*time.Millisecond)

	id, cdpURL := openCDPSession(t, h.URL())
	driveWithChromedp(t, cdpURL, page.URL)
	st, b := do(t, "GET", h.URL()+"/sessions/"+id, "")
	require.Equal(t, http.StatusOK, st, string(b))
	require.Contains(t, string(b), `"status":"open"`, "the client left; the session stays")
	st, b = do(t, "DELETE", h.URL()+"/sessions/"+id, "")
	require.Equal(t, http.StatusOK, st, string(b))
	waitLoneWorker(t, h, func(w persistence.WorkerInfo) bool { return w.InFlight == 0 }, 10*time.Second, 50*time.Millisecond)

	driveWithChromedp(t, wsURL(h.URL())+"/cdp?idle_timeout_s=30", page.URL)
	waitLoneWorker(t, h, func(w persistence.WorkerInfo) bool { return w.InFlight == 0 }, 15*time.Second, 50*time.Millisecond)
}

// TestCDPClientKeepsSessionOpen: an attached CDP client is use, however
// quiet — on the hub and on the worker, whose own idle timer is a tenth
// longer — and the idle timeout counts again from its leaving.
func TestCDPClientKeepsSessionOpen(t *testing.T) {
	if testing.Short() {
		t.Skip("drives Chromium; skipped with -short")
	}
	h := startTestHub(t, testConfig(t))
	startChromiumAgent(t, h.URL(), "wc", 1)
	waitLoneWorker(t, h, func(w persistence.WorkerInfo) bool { return w.Alive }, 20*time.Second, 20*time.Millisecond)
	st, b := do(t, "POST", h.URL()+"/sessions", `{"idle_timeout_s":1}`)
	require.Equal(t, http.StatusCreated, st, string(b))
	var sess struct {
		ID     string `json:"id"`
		CDPURL string `json:"cdp_url"`
	}
	require.NoError(t, json.Unmarshal(b, &sess))
	ws, code := dialCDP(t, sess.CDPURL, nil)
	require.Zero(t, code)
	require.Eventually(t, func() bool {
		_, b := do(t, "GET", h.URL()+"/sessions/"+sess.ID, "")
		return strings.Contains(string(b), `"cdp_clients":1`)
	}, 10*time.Second, 50*time.Millisecond, "the client is attached")
	// Several idle timeouts pass without a word on the socket.
	deadline := time.Now().Add(4 * time.Second)
	for time.Now().Before(deadline) {
		st, b := do(t, "GET", h.URL()+"/sessions/"+sess.ID, "")
		require.Equal(t, http.StatusOK, st)
		require.Contains(t, string(b), `"status":"open"`, "an attached client keeps the session open")
		time.Sleep(200 * time.Millisecond)
	}
	// The socket still works end to end: the worker kept the session too.
	require.NoError(t, ws.WriteJSON(map[string]any{"id": 1, "method": "Browser.getVersion"}))
	var v struct {
		ID     int `json:"id"`
		Result struct {
			Product string `json:"product"`
		} `json:"result"`
	}
	require.NoError(t, ws.SetReadDeadline(time.Now().Add(10*time.Second)))
	require.NoError(t, ws.ReadJSON(&v))
	require.Contains(t, v.Result.Product, "Chrome")
	// Gone: the session idles out, and the client of a closed session is
	// told so if it had stayed.
	_ = ws.Close()
	require.Eventually(t, func() bool {
		_, b := do(t, "GET", h.URL()+"/sessions/"+sess.ID, "")
		return strings.Contains(string(b), `"closed"`)
	}, 15*time.Second, 100*time.Millisecond)
	waitLoneWorker(t, h, func(w persistence.WorkerInfo) bool { return w.InFlight == 0 }, 10*time.Second, 50*time.Millisecond)
}

// TestCDPSessionCloseClosesClients: DELETE under an attached client closes
// its socket with 1000 and the reason.
func TestCDPSessionCloseClosesClients(t *testing.T) {
	if testing.Short() {
		t.Skip("drives Chromium; skipped with -short")
	}
	h := startTestHub(t, testConfig(t))
	startChromiumAgent(t, h.URL(), "wc", 1)
	waitLoneWorker(t, h, func(w persistence.WorkerInfo) bool { return w.Alive }, 20*time.Second, 20*time.Millisecond)
	id, cdpURL := openCDPSession(t, h.URL())
	ws, code := dialCDP(t, cdpURL, nil)
	require.Zero(t, code)
	require.NoError(t, ws.WriteJSON(map[string]any{"id": 1, "method": "Browser.getVersion"}))
	_, _, err := ws.ReadMessage()
	require.NoError(t, err)
	st, b := do(t, "DELETE", h.URL()+"/sessions/"+id, "")
	require.Equal(t, http.StatusOK, st, string(b))
	require.NoError(t, ws.SetReadDeadline(time.Now().Add(15*time.Second)))
	for {
		_, _, err = ws.ReadMessage()
		if err != nil {
			break
		}
	}
	var ce *websocket.CloseError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, websocket.CloseNormalClosure, ce.Code)
	require.Contains(t, ce.Text, "session closed")
}

// TestCDPJSONProtocol: GET /sessions/{id}/json/protocol answers the lane
// browser's protocol description as Chromium's /json/protocol does
// (token by query, as the other /json routes); a second request is
// answered from the hub's copy for that browser version, without a
// round trip to the worker; a closed session answers 410, an unknown one
// 404.
func TestCDPJSONProtocol(t *testing.T) {
	if testing.Short() {
		t.Skip("drives Chromium; skipped with -short")
	}
	cfg := testConfig(t)
	require.NoError(t, cfg.Set("auth.api_token", "tok"))
	h, err := New(cfg, testLogger(t))
	require.NoError(t, err)
	var results atomic.Int64 // session_result frames read off the worker's link
	h.deps.OnLinkFrame = func(_, typ string) {
		if typ == messages.TypeSessionResult {
			results.Add(1)
		}
	}
	require.NoError(t, h.Start(context.Background()))
	t.Cleanup(func() { _ = h.Stop(context.Background()) })
	startChromiumAgent(t, h.URL(), "wc", 1)
	waitLoneWorker(t, h, func(w persistence.WorkerInfo) bool { return w.Alive }, 20*time.Second, 20*time.Millisecond)
	id, _ := openCDPSession(t, h.URL(), "Authorization", "Bearer tok")

	res, body := get(t, h.URL()+"/sessions/"+id+"/json/protocol")
	require.Equal(t, http.StatusUnauthorized, res.StatusCode, string(body))
	res, first := get(t, h.URL()+"/sessions/"+id+"/json/protocol?token=tok")
	require.Equal(t, http.StatusOK, res.StatusCode, string(first))
	require.Contains(t, res.Header.Get("Content-Type"), "application/json")
	var proto struct {
		Version struct {
			Major string `json:"major"`
		} `json:"version"`
		Domains []struct {
			Domain   string            `json:"domain"`
			Commands []json.RawMessage `json:"commands"`
		} `json:"domains"`
	}
	require.NoError(t, json.Unmarshal(first, &proto))
	require.Equal(t, "1", proto.Version.Major)
	domains := map[string]int{}
	for _, d := range proto.Domains {
		domains[d.Domain] = len(d.Commands)
	}
	for _, d := range []string{"Browser", "Page", "Runtime", "Target", "Network"} {
		require.Positive(t, domains[d], "domain %s with its commands", d)
	}

	asked := results.Load()
	res, second := get(t, h.URL()+"/sessions/"+id+"/json/protocol/", "Authorization", "Bearer tok")
	require.Equal(t, http.StatusOK, res.StatusCode, string(second))
	require.Equal(t, first, second)
	require.Equal(t, asked, results.Load(), "the second answer is the hub's copy: the worker was not asked")

	st, b := do(t, "DELETE", h.URL()+"/sessions/"+id, "", "Authorization", "Bearer tok")
	require.Equal(t, http.StatusOK, st, string(b))
	res, body = get(t, h.URL()+"/sessions/"+id+"/json/protocol?token=tok")
	require.Equal(t, http.StatusGone, res.StatusCode, string(body))
	res, body = get(t, h.URL()+"/sessions/s-nope/json/protocol?token=tok")
	require.Equal(t, http.StatusNotFound, res.StatusCode, string(body))
}
