package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/gorilla/websocket"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/client"
	"github.com/paprika-hub/paprika/persistence/storetest"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// The fault-injection suite (`make chaos`; CI runs it with the rest): real
// hub and worker processes on 127.0.0.1, short intervals from config, each
// scenario under steady load of noop jobs, then the invariants — every job
// final, none executed twice (the workers' exec logs), no log line lost for
// succeeded jobs — and a line of counts for the record.

// setEnv replaces or adds KEY=value in env.
func setEnv(env []string, kv ...string) []string {
	for _, e := range kv {
		k, _, _ := strings.Cut(e, "=")
		found := false
		for i, x := range env {
			if strings.HasPrefix(x, k+"=") {
				env[i], found = e, true
			}
		}
		if !found {
			env = append(env, e)
		}
	}
	return env
}

// report logs a scenario's counts: jobs, final states, duplicates, lost
// lines of succeeded jobs (checkInvariants already failed the test on any).
func report(t *testing.T, f *fleet, name string, final map[string]client.Job, lines int) {
	by := map[string]int{}
	for _, j := range final {
		k := string(j.Status)
		if j.Reason != "" {
			k += "/" + j.Reason
		}
		by[k]++
	}
	runs := map[string]int{}
	for _, e := range readExecs(t, f.execLog) {
		runs[e.job]++
	}
	dup := 0
	for _, n := range runs {
		if n > 1 {
			dup++
		}
	}
	t.Logf("CHAOS %s: %d jobs, final %v, executed twice %d, lost lines 0 (each succeeded job's %d lines checked)",
		name, len(final), by, dup, lines)
}

func chaosLoad(t *testing.T, f *fleet, every time.Duration, lines int) (stop func() []string) {
	c := f.client()
	done := make(chan struct{})
	collect := load(t, c, every, map[string]any{"lines": lines, "interval_ms": 30}, done)
	return func() []string { close(done); return collect() }
}

// Scenario 1: kill -9 a worker mid-job; one comes back at once with the
// same id (within the grace), another never does. Jobs the killed workers
// were running end failed/worker_lost (max_attempts 1: never run twice);
// everything else succeeds.
func TestChaosWorkerKilled(t *testing.T) {
	// A worker that comes back at once has forgotten the jobs it was
	// running: its reports leave them out, the hub asks it (job_query), and
	// a process younger than the claim means the attempt is lost — they end
	// worker_lost within seconds, never run twice, and never wait for
	// their deadline.
	f := newFleetWith(t, 1, func(env []string) []string {
		return setEnv(env, "PAPRIKA_RECONCILER_ORPHAN_GRACE=4s", "PAPRIKA_JOBS_DEFAULT_TIMEOUT=15s")
	})
	f.startWorkers(3, 2)
	stop := chaosLoad(t, f, 60*time.Millisecond, 10)
	time.Sleep(2 * time.Second)
	f.workers["w0"].kill()
	f.workers["w0"] = startBinary(t, clusterBinary, "worker-w0-again", nil, "worker", "--hub", f.urls[0], "--id", "w0",
		"--lanes", "2", "--exec-log", f.execLog)
	time.Sleep(3 * time.Second)
	f.workers["w1"].kill()
	time.Sleep(6 * time.Second)
	ids := stop()
	final := f.checkInvariants(ids, 10, true)
	for id, j := range final {
		if j.Status != client.StatusSucceeded {
			require.Equal(t, client.ReasonWorkerLost, j.Reason, "job %s: %s", id, j.Error)
			require.Contains(t, []string{"w0", "w1"}, j.WorkerID, "job %s", id)
		}
	}
	report(t, f, "worker killed (back within grace, and not back)", final, 10)
}

// Scenario 2: the hub is killed and restarted mid-load (MariaDB + Redis):
// jobs survive — workers keep running them and report to the new process.
func TestChaosHubRestarted(t *testing.T) {
	f := newFleet(t, 1)
	f.startWorkers(3, 2)
	stop := chaosLoad(t, f, 60*time.Millisecond, 10)
	time.Sleep(3 * time.Second)
	f.hubs[0].kill()
	time.Sleep(500 * time.Millisecond)
	f.startHub(0)
	time.Sleep(4 * time.Second)
	ids := stop()
	final := f.checkInvariants(ids, 10, false)
	report(t, f, "hub kill -9 and restart", final, 10)
}

// Scenario 3: Redis stops answering for 3 s under load (a proxy holds
// every byte): no worker is reported dead, no job fails.
func TestChaosRedisPaused(t *testing.T) {
	f, proxy := newProxiedFleet(t, "PAPRIKA_REDIS_URL", func(u string, to func(string) string) string {
		opt, err := redis.ParseURL(u)
		require.NoError(t, err)
		return strings.Replace(u, opt.Addr, to(opt.Addr), 1)
	})
	f.startWorkers(3, 2)
	stop := chaosLoad(t, f, 60*time.Millisecond, 10)
	time.Sleep(2 * time.Second)
	proxy.Pause()
	time.Sleep(3 * time.Second)
	proxy.Resume()
	time.Sleep(3 * time.Second)
	ids := stop()
	final := f.checkInvariants(ids, 10, false)
	ws, err := f.client().Workers(context.Background())
	require.NoError(t, err)
	for _, w := range ws {
		require.True(t, w.Alive, "worker %s reported dead", w.ID)
	}
	require.Zero(t, metric(t, f.urls[0], "paprika_worker_lost_jobs_total"))
	report(t, f, "Redis paused 3 s", final, 10)
}

// Scenario 4: MariaDB unreachable for 10 s under load. Submissions get 503
// (the client retries), claims and results wait with backoff; nothing is
// lost or run twice when it returns.
func TestChaosMariaDBStopped(t *testing.T) {
	f, proxy := newProxiedFleet(t, "PAPRIKA_MYSQL_DSN", func(dsn string, to func(string) string) string {
		cfg, err := gomysql.ParseDSN(dsn)
		require.NoError(t, err)
		cfg.Addr = to(cfg.Addr)
		return cfg.FormatDSN()
	})
	f.startWorkers(3, 2)
	stop := chaosLoad(t, f, 80*time.Millisecond, 10)
	time.Sleep(2 * time.Second)
	proxy.Cut()
	time.Sleep(10 * time.Second)
	proxy.Restore()
	time.Sleep(4 * time.Second)
	ids := stop()
	final := f.checkInvariants(ids, 10, false)
	report(t, f, "MariaDB stopped 10 s", final, 10)
}

// Scenario 5: a worker whose socket stalls — it says hello, then never
// reads or writes again. The hub cuts it off on its own schedule and the
// other workers are never held up: jobs keep finishing during the stall.
// Jobs placed on the stalled worker are retried (max_attempts 2).
func TestChaosStalledWorkerSocket(t *testing.T) {
	f := newFleetWith(t, 1, func(env []string) []string {
		return setEnv(env, "PAPRIKA_RECONCILER_ORPHAN_GRACE=3s", "PAPRIKA_WORKER_ALIVE_WINDOW=6s")
	})
	f.startWorkers(2, 2)
	u, _ := url.Parse(f.urls[0])
	ws, _, err := websocket.DefaultDialer.Dial("ws://"+u.Host+"/workers/stalled/link", nil)
	require.NoError(t, err)
	defer ws.Close()
	require.NoError(t, ws.WriteMessage(websocket.TextMessage,
		[]byte(`{"type":"hello","worker_id":"stalled","lan_ip":"10.9.9.9","capabilities":{"max_concurrent":2,"lane_urls":["a","b"],"drivers":["simulated"]},"stats":{"in_flight":0}}`)))
	// ...and never reads again.
	c := f.client()
	done := make(chan struct{})
	collect := load(t, c, 60*time.Millisecond, map[string]any{"lines": 5, "interval_ms": 20}, done)
	var finishedDuringStall atomic.Int64
	deadline := time.Now().Add(8 * time.Second)
	for time.Now().Before(deadline) {
		page, err := c.List(context.Background(), client.ListOptions{Status: client.StatusSucceeded, Limit: 1000})
		if err == nil {
			finishedDuringStall.Store(int64(len(page.Jobs)))
		}
		time.Sleep(500 * time.Millisecond)
	}
	close(done)
	ids := collect()
	require.Greater(t, finishedDuringStall.Load(), int64(40), "other workers kept finishing jobs")
	_ = ids
	// The stalled worker's jobs were submitted with the default max_attempts
	// 1 by load(); resubmit-free check: they end worker_lost, the rest succeed.
	final := f.checkInvariants(ids, 5, true)
	for id, j := range final {
		if j.Status != client.StatusSucceeded {
			require.Equal(t, "stalled", j.WorkerID, "job %s failed on a healthy worker: %s %s", id, j.Reason, j.Error)
		}
	}
	report(t, f, "stalled worker socket", final, 5)
}

// Scenario 6: two hubs on one MariaDB, queued jobs old enough for both
// hubs' re-drive to wake them at once, then workers arrive: every job runs
// exactly once (one grain per job, and the conditional claim).
func TestChaosRedriveRace(t *testing.T) {
	f := newFleetWith(t, 2, func(env []string) []string {
		return setEnv(env, "PAPRIKA_REDRIVE_MIN_AGE=1s", "PAPRIKA_REDRIVE_INTERVAL=300ms")
	})
	c := f.client()
	var ids []string
	for i := 0; i < 80; i++ {
		j, err := c.Submit(context.Background(), client.SubmitRequest{Mode: "noop", Params: map[string]any{"lines": 3}}, "")
		require.NoError(t, err)
		ids = append(ids, j.ID)
	}
	time.Sleep(3 * time.Second) // both hubs' re-drive sweep them several times
	f.startWorkers(4, 2)
	final := f.checkInvariants(ids, 3, false)
	woke := metric(t, f.urls[0], "paprika_redrive_jobs_total") + metric(t, f.urls[1], "paprika_redrive_jobs_total")
	require.Positive(t, woke, "the re-drive ran on the hubs")
	report(t, f, fmt.Sprintf("two hubs' re-drive racing (%d wake-ups)", woke), final, 3)
}

// Scenario 7: a panic injected into each actor kind of a hub under load:
// the hub never exits, each actor restarts, the invariants hold.
func TestChaosActorPanics(t *testing.T) {
	f := newFleetWith(t, 1, func(env []string) []string {
		return setEnv(env, "PAPRIKA_DEBUG_FAULT_INJECTION=true")
	})
	f.startWorkers(3, 2)
	c := f.client()
	stop := chaosLoad(t, f, 60*time.Millisecond, 10)
	// A job that runs now: under a loaded CI the first placements can take
	// longer than the load's first seconds.
	var running string
	require.Eventually(t, func() bool {
		page, err := c.List(context.Background(), client.ListOptions{Status: client.StatusRunning, Limit: 5})
		if err != nil || len(page.Jobs) == 0 {
			return false
		}
		running = page.Jobs[0].ID
		return true
	}, 30*time.Second, 100*time.Millisecond, "a running job to aim the job and log_stream panics at")
	for _, k := range []struct{ kind, id string }{
		{"job", running}, {"log_stream", running}, {"scheduler", ""}, {"reconciler", ""},
		{"worker", "w0"}, {"worker_conn", "w1"},
	} {
		res, err := http.Post(f.urls[0]+"/debug/panic?kind="+k.kind+"&id="+k.id, "application/json", nil)
		require.NoError(t, err)
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		require.Equal(t, http.StatusNoContent, res.StatusCode, "%s: %s", k.kind, b)
		time.Sleep(400 * time.Millisecond)
	}
	time.Sleep(4 * time.Second)
	ids := stop()
	final := f.checkInvariants(ids, 10, false)
	for _, kind := range []string{"job", "log_stream", "scheduler", "reconciler", "worker", "worker_conn"} {
		require.GreaterOrEqual(t, metric(t, f.urls[0], `paprika_actor_panics_total{kind="`+kind+`"}`), int64(1), kind)
	}
	select {
	case <-f.hubs[0].done:
		t.Fatal("the hub exited")
	default:
	}
	report(t, f, "a panic in each actor kind", final, 10)
}

// metric reads one series from a hub's /metrics (0 when absent).
func metric(t *testing.T, hubURL, series string) int64 {
	res, err := http.Get(hubURL + "/metrics")
	require.NoError(t, err)
	defer res.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(res.Body)
	require.NoError(t, err)
	name, sel, _ := strings.Cut(strings.TrimSuffix(series, "}"), "{")
	want := map[string]string{}
	for _, kv := range strings.Split(sel, ",") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			want[k] = strings.Trim(v, `"`)
		}
	}
	var total float64
	for _, m := range fams[name].GetMetric() {
		matched := 0
		for _, l := range m.GetLabel() {
			if v, ok := want[l.GetName()]; ok && v == l.GetValue() {
				matched++
			}
		}
		if matched == len(want) {
			total += m.GetCounter().GetValue() + m.GetGauge().GetValue() + m.GetUntyped().GetValue()
		}
	}
	return int64(total)
}

// Scenario 3b: Redis restarted under load — a private redis-server with an
// append-only file (what a deployment that keeps live logs across a Redis
// restart runs), stopped and started again on its port. Hubs and workers
// reconnect by themselves; nothing is lost or run twice.
func TestChaosRedisRestarted(t *testing.T) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		storetest.Unavailable(t, "redis-server", err)
	}
	dir := t.TempDir()
	port := freePort(t)
	startRedis := func() *exec.Cmd {
		cmd := exec.Command(bin, "--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--dir", dir,
			"--appendonly", "yes", "--appendfsync", "always", "--save", "")
		require.NoError(t, cmd.Start())
		require.Eventually(t, func() bool {
			c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
			if err == nil {
				c.Close()
			}
			return err == nil
		}, 10*time.Second, 20*time.Millisecond)
		return cmd
	}
	rs := startRedis()
	t.Cleanup(func() { _ = rs.Process.Kill(); _ = rs.Wait() })
	f := newFleetWith(t, 1, func(env []string) []string {
		return setEnv(env, fmt.Sprintf("PAPRIKA_REDIS_URL=redis://127.0.0.1:%d/0", port))
	})
	f.startWorkers(3, 2)
	stop := chaosLoad(t, f, 60*time.Millisecond, 10)
	time.Sleep(2 * time.Second)
	require.NoError(t, rs.Process.Signal(syscall.SIGTERM))
	_ = rs.Wait()
	time.Sleep(time.Second)
	rs = startRedis()
	time.Sleep(4 * time.Second)
	ids := stop()
	final := f.checkInvariants(ids, 10, false)
	report(t, f, "Redis restarted (append-only file)", final, 10)
}

// newProxiedFleet is a one-hub fleet whose hub reaches the service named
// by env key through a fault proxy, returned with it: rewrite gets the
// key's value and a function that starts the proxy for an address and
// returns the proxy's address.
func newProxiedFleet(t *testing.T, key string, rewrite func(value string, to func(addr string) string) string) (*fleet, *storetest.Proxy) {
	var proxy *storetest.Proxy
	f := newFleetWith(t, 1, func(env []string) []string {
		for _, e := range env {
			if v, ok := strings.CutPrefix(e, key+"="); ok {
				return setEnv(env, key+"="+rewrite(v, func(addr string) string {
					proxy = storetest.NewProxy(t, addr)
					return proxy.Addr()
				}))
			}
		}
		t.Fatalf("%s is not in the fleet's environment", key)
		return nil
	})
	return f, proxy
}
