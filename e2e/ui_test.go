package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/paprika-hub/paprika/client"
	"github.com/paprika-hub/paprika/persistence/storetest"
	"github.com/stretchr/testify/require"
)

// The console's browser tests: real hub and worker processes, the
// console driven by Playwright (playwright-core from testdata/cdp, pinned)
// on Debian's Chromium, one scenario of testdata/ui/console.js per run.
// Screenshots go to $PAPRIKA_UI_SHOTS (default e2e/artifacts/ui/, which
// git ignores), one folder per test.

// uiScript is console.js, after checking node, playwright-core and
// Chromium are here (a skip locally, a failure under CI=true).
func uiScript(t testing.TB) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		storetest.Unavailable(t, "node", err)
	}
	if _, err := os.Stat("/usr/bin/chromium"); err != nil {
		storetest.Unavailable(t, "chromium", err)
	}
	if _, err := os.Stat(filepath.Join("testdata", "cdp", "node_modules", "playwright-core", "package.json")); err != nil {
		storetest.Unavailable(t, "playwright-core (run scripts/cdp-clients.sh)", err)
	}
	p, err := filepath.Abs(filepath.Join("testdata", "ui", "console.js"))
	require.NoError(t, err)
	return p
}

// uiShots is this test's screenshot folder.
func uiShots(t testing.TB) string {
	root := os.Getenv("PAPRIKA_UI_SHOTS")
	if root == "" {
		root = filepath.Join("artifacts", "ui")
	}
	dir, err := filepath.Abs(filepath.Join(root, strings.ReplaceAll(t.Name(), "/", "_")))
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	return dir
}

// uiRun is one running scenario: its stdout lines, and stdin to signal it.
type uiRun struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string
	out   strings.Builder // stderr, for the failure message
	done  chan error
}

func startUI(t testing.TB, env []string, scenario, hubURL string, args ...string) *uiRun {
	t.Helper()
	script := uiScript(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, "node", append([]string{script, scenario, hubURL}, args...)...)
	cmd.Env = append(append(os.Environ(), "PAPRIKA_UI_SHOTS="+uiShots(t)), env...)
	r := &uiRun{cmd: cmd, lines: make(chan string, 16), done: make(chan error, 1)}
	var err error
	r.stdin, err = cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = &syncWriter{b: &r.out}
	require.NoError(t, cmd.Start())
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			r.lines <- sc.Text()
		}
		close(r.lines)
		r.done <- cmd.Wait()
	}()
	return r
}

type syncWriter struct {
	mu sync.Mutex
	b  *strings.Builder
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// wait reads lines until the scenario's closing JSON and returns it.
func (r *uiRun) wait(t testing.TB) map[string]any {
	t.Helper()
	var last string
	for l := range r.lines {
		last = l
	}
	err := <-r.done
	require.NoError(t, err, "console scenario failed:\n%s", r.cmd.Stderr.(*syncWriter).String())
	var res map[string]any
	require.NoError(t, json.Unmarshal([]byte(last), &res), "closing line %q", last)
	require.Equal(t, true, res["ok"])
	return res
}

// expect waits for one stdout line.
func (r *uiRun) expect(t testing.TB, want string, within time.Duration) {
	t.Helper()
	select {
	case l, ok := <-r.lines:
		require.True(t, ok, "scenario ended before %q:\n%s", want, r.cmd.Stderr.(*syncWriter).String())
		require.Equal(t, want, l)
	case <-time.After(within):
		t.Fatalf("no %q from the scenario within %s:\n%s", want, within, r.cmd.Stderr.(*syncWriter).String())
	}
}

func runUI(t testing.TB, env []string, scenario, hubURL string, args ...string) map[string]any {
	t.Helper()
	return startUI(t, env, scenario, hubURL, args...).wait(t)
}

// animatedPage changes what it shows every 100 ms (so the screencast has
// frames to send) and shows #done after 12 s (so a fetch job waiting for
// it runs that long).
const animatedPage = `<!doctype html><title>moving</title><body style="font:40px sans-serif">
<div id="n">0</div><script>let i=0;setInterval(()=>{document.getElementById('n').textContent=++i;
document.body.style.background='hsl('+(i*7%360)+',70%,80%)'},100);
setTimeout(()=>{const d=document.createElement('p');d.id='done';d.textContent='done';document.body.append(d)},12000)</script>`

// TestUIConsole drives the console of a hub with a simulated and a
// chromium worker: jobs submitted through the API appear, a job page
// follows its log live, a running chromium job's live view shows frames
// that change, and drain pressed on a worker reaches the API.
func TestUIConsole(t *testing.T) {
	uiScript(t)
	_, hubURL := startHub(t, t.TempDir(), freePort(t))
	startWorker(t, hubURL, "sim1", 2, filepath.Join(t.TempDir(), "exec.log"))
	c, err := client.New([]string{hubURL})
	require.NoError(t, err)
	waitWorkers(t, c, 1)

	t.Run("jobs appear", func(t *testing.T) {
		res := runUI(t, nil, "jobs", hubURL)
		require.Len(t, res["ids"], 3)
	})
	t.Run("log arrives live", func(t *testing.T) {
		res := runUI(t, nil, "log", hubURL)
		t.Logf("log line counts the page showed while the job ran: %v", res["counts"])
	})
	t.Run("live view frames change", func(t *testing.T) {
		needChromium(t)
		startChromiumWorker(t, "chr1", hubURL)
		waitWorkers(t, c, 2)
		site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			_, _ = io.WriteString(w, animatedPage)
		}))
		defer site.Close()
		j, err := c.Submit(context.Background(), client.SubmitRequest{Mode: "fetch", MaxAttempts: 1,
			Params: map[string]any{"url": site.URL, "wait_for": "#done", "screenshot": true}}, "")
		require.NoError(t, err)
		require.Eventually(t, func() bool {
			got, err := c.Get(context.Background(), j.ID)
			return err == nil && got.Status == "running"
		}, 60*time.Second, 100*time.Millisecond, "the fetch job starts")
		out := runUI(t, nil, "live", hubURL, j.ID)
		t.Logf("distinct live frames seen: %v", out["frames"])
	})
	t.Run("drain a worker", func(t *testing.T) {
		runUI(t, nil, "drain", hubURL, "sim1")
		require.Eventually(t, func() bool {
			ws, err := c.Workers(context.Background())
			if err != nil {
				return false
			}
			for _, w := range ws {
				if w.ID == "sim1" {
					return w.Status == "drain"
				}
			}
			return false
		}, 10*time.Second, 100*time.Millisecond, "GET /workers shows sim1 draining")
	})
}

// buttonPage is one button filling the page that says when it was
// clicked (the session scenario clicks it through the live view).
const buttonPage = `<!doctype html><title>button</title><body style="margin:0">
<button id="b" style="width:100vw;height:100vh;font:40px sans-serif" onclick="this.textContent='clicked'">click me</button>`

// TestUISessions: a chromium session shows in Sessions; its page's live
// view takes control and a click on the frame reaches the lane's page;
// "Close session" closes it.
func TestUISessions(t *testing.T) {
	uiScript(t)
	needChromium(t)
	_, hubURL := startHub(t, t.TempDir(), freePort(t))
	startChromiumWorker(t, "chr1", hubURL)
	c, err := client.New([]string{hubURL})
	require.NoError(t, err)
	waitWorkers(t, c, 1)
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = io.WriteString(w, buttonPage)
	}))
	defer site.Close()
	s := openSession(t, hubURL)
	st, b := httpDo(t, "POST", hubURL+"/sessions/"+s.ID+"/commands", mustJSON(map[string]any{"op": "navigate", "url": site.URL}))
	require.Equal(t, http.StatusOK, st, string(b))
	runUI(t, nil, "session", hubURL, s.ID, "1")
	require.Eventually(t, func() bool {
		st, b := httpDo(t, "GET", hubURL+"/sessions/"+s.ID, "")
		return st == http.StatusNotFound || st == http.StatusGone || strings.Contains(string(b), `"closed"`)
	}, 15*time.Second, 200*time.Millisecond, "the session is closed")
}

// TestUIHubKilled: a two-hub fleet; the Hubs page of hub 0 shows hub 1
// alive, then dead (highlighted) once hub 1 is killed.
func TestUIHubKilled(t *testing.T) {
	uiScript(t)
	f := newFleet(t, 2)
	var hubs struct {
		Hubs []struct {
			ID    string `json:"id"`
			Local bool   `json:"local"`
		} `json:"hubs"`
	}
	getJSON(t, f.urls[1]+"/hubs", &hubs)
	victim := ""
	for _, h := range hubs.Hubs {
		if h.Local {
			victim = h.ID
		}
	}
	require.NotEmpty(t, victim)
	run := startUI(t, nil, "hubdead", f.urls[0], victim)
	run.expect(t, "ready", 60*time.Second)
	f.hubs[1].kill()
	_, err := io.WriteString(run.stdin, "go\n")
	require.NoError(t, err)
	require.NoError(t, run.stdin.Close())
	run.wait(t)
}

// TestUITokenPrompt: a hub with an API token; the console asks for it on
// the first 401, says so when a wrong one is given, and keeps the right
// one for the tab.
func TestUITokenPrompt(t *testing.T) {
	uiScript(t)
	const token = "ui-test-token-0123456789"
	_, hubURL := startHub(t, t.TempDir(), freePort(t), "PAPRIKA_AUTH_API_TOKEN="+token)
	runUI(t, []string{"PAPRIKA_UI_TOKEN=" + token}, "token", hubURL)

	// The log follow takes ?token= (EventSource sends no header), and
	// refuses a wrong one.
	j := submitWithToken(t, hubURL, token)
	res, err := http.Get(hubURL + "/jobs/" + j + "/logs?token=" + token)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	res, err = http.Get(hubURL + "/jobs/" + j + "/logs?token=wrong")
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusUnauthorized, res.StatusCode)
}

func submitWithToken(t *testing.T, hubURL, token string) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, hubURL+"/jobs", strings.NewReader(`{"mode":"noop"}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, http.StatusCreated, res.StatusCode)
	var j struct{ ID string }
	require.NoError(t, json.NewDecoder(res.Body).Decode(&j))
	return j.ID
}

// BenchmarkUIPageLoad measures the console's first render of Overview and
// Jobs from a hub with an empty store and from one holding 10,000
// finished jobs. Both hubs run side by side and are timed in alternation
// (PAPRIKA_UI_ROUNDS rounds, default 3, of PAPRIKA_UI_LOADS loads per
// page, default 7), so the shared machine's load weighs on both alike.
// It reports the median ms of each page on each hub and their ratio.
//
//	go test ./e2e/ -run '^$' -bench BenchmarkUIPageLoad -benchtime 1x
func BenchmarkUIPageLoad(b *testing.B) {
	uiScript(b)
	const seeded = 10000
	hubs := map[int]string{}
	for _, n := range []int{0, seeded} {
		port := freePort(b)
		startBinary(b, clusterBinary, fmt.Sprintf("hub-%d", n), hubEnv(b.TempDir(), port), "hub")
		hubURL := fmt.Sprintf("http://127.0.0.1:%d", port)
		waitReady(b, hubURL)
		id := fmt.Sprintf("bench%d", n)
		startBinary(b, clusterBinary, "worker-"+id, nil, "worker", "--hub", hubURL, "--id", id, "--lanes", "16")
		c, err := client.New([]string{hubURL})
		require.NoError(b, err)
		waitWorkers(b, c, 1)
		seedJobs(b, hubURL, n)
		hubs[n] = hubURL
	}
	rounds := 3
	if v, err := strconv.Atoi(os.Getenv("PAPRIKA_UI_ROUNDS")); err == nil && v > 0 {
		rounds = v
	}
	for i := 0; i < b.N; i++ {
		ms := map[string][]float64{}
		for r := 0; r < rounds; r++ {
			for _, n := range []int{0, seeded} {
				res := runUI(b, nil, "timing", hubs[n])
				for _, page := range []string{"overview", "jobs"} {
					for _, v := range res[page].(map[string]any)["all_ms"].([]any) {
						ms[fmt.Sprintf("%s-%d", page, n)] = append(ms[fmt.Sprintf("%s-%d", page, n)], v.(float64))
					}
				}
			}
		}
		for _, page := range []string{"overview", "jobs"} {
			empty, full := median(ms[page+"-0"]), median(ms[fmt.Sprintf("%s-%d", page, seeded)])
			b.ReportMetric(empty, page+"-empty-ms")
			b.ReportMetric(full, page+"-10k-ms")
			b.ReportMetric(full/empty, page+"-ratio")
		}
	}
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}

// seedJobs submits n noop jobs (16 at a time) and waits for none to be
// queued or running.
func seedJobs(b *testing.B, hubURL string, n int) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(n) {
				res, err := http.Post(hubURL+"/jobs", "application/json", strings.NewReader(`{"mode":"noop","labels":{"seed":"ui"}}`))
				if err != nil {
					b.Error(err)
					return
				}
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if res.StatusCode != http.StatusCreated {
					b.Errorf("POST /jobs: %d", res.StatusCode)
					return
				}
			}
		}()
	}
	wg.Wait()
	if n == 0 {
		return
	}
	require.Eventually(b, func() bool {
		for _, st := range []string{"queued", "running"} {
			var page struct{ Jobs []json.RawMessage }
			getJSON(b, hubURL+"/jobs?limit=1&status="+st, &page)
			if len(page.Jobs) > 0 {
				return false
			}
		}
		return true
	}, 5*time.Minute, time.Second, "the seeded jobs finish")
}
