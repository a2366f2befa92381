package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/client"
	"github.com/paprika-hub/paprika/persistence/storetest"
)

// fleet is a cluster of real hub processes sharing MariaDB and Redis, with
// worker processes spread over them.
type fleet struct {
	t       testing.TB
	env     []string
	ports   []int
	hubs    []*proc
	urls    []string
	workers map[string]*proc
	execLog string
}

func newFleet(t *testing.T, hubs int) *fleet { return newFleetTB(t, hubs) }

func newFleetTB(t testing.TB, hubs int) *fleet { return newFleetWith(t, hubs, nil) }

// newFleetWith is newFleet with the stores' addresses rewritten (a fault
// proxy in between) and extra env on top.
func newFleetWith(t testing.TB, hubs int, tweak func(env []string) []string) *fleet {
	if testing.Short() {
		t.Skip("needs MariaDB and Redis; skipped with -short")
	}
	url, prefix := storetest.RedisPrefix(t)
	f := &fleet{t: t, workers: map[string]*proc{}, execLog: filepath.Join(t.TempDir(), "exec.log")}
	f.env = []string{
		"PAPRIKA_MYSQL_DSN=" + storetest.MySQLDatabase(t),
		"PAPRIKA_REDIS_URL=" + url,
		"PAPRIKA_REDIS_PREFIX=" + prefix,
		"PAPRIKA_CLUSTER_MEMBER_TIMEOUT=2s",
		"PAPRIKA_CLUSTER_HUB_TTL=20s",
		"PAPRIKA_RECONCILER_INTERVAL=1s",
		"PAPRIKA_RECONCILER_ORPHAN_GRACE=20s",
		"PAPRIKA_REDRIVE_INTERVAL=1s",
		"PAPRIKA_REDRIVE_MIN_AGE=5s",
		"PAPRIKA_WORKER_HEARTBEAT_INTERVAL=2s",
		"PAPRIKA_WORKER_ALIVE_WINDOW=15s",
		"PAPRIKA_SCHEDULER_ASSIGN_GRACE=3s",
		// An assignment whose answer died with a hub keeps its claim (never
		// a second run) and ends at the deadline: short here.
		"PAPRIKA_JOBS_DEFAULT_TIMEOUT=30s",
	}
	if tweak != nil {
		f.env = tweak(f.env)
	}
	for i := 0; i < hubs; i++ {
		f.ports = append(f.ports, freePort(t))
		f.urls = append(f.urls, fmt.Sprintf("http://127.0.0.1:%d", f.ports[i]))
		f.hubs = append(f.hubs, nil)
		f.startHub(i)
	}
	return f
}

func (f *fleet) startHub(i int) {
	env := append([]string{
		"PAPRIKA_HUB_LISTEN=127.0.0.1:" + strconv.Itoa(f.ports[i]),
		"PAPRIKA_ASSETS_DIR=" + filepath.Join(f.t.TempDir(), "assets"),
	}, f.env...)
	args := []string{"hub"}
	if os.Getenv("PAPRIKA_E2E_DEBUG") != "" {
		args = append(args, "--log-level", "debug")
	}
	f.hubs[i] = startBinary(f.t, clusterBinary, fmt.Sprintf("hub%d", i), env, args...)
	waitReady(f.t, f.urls[i])
}

// startWorkers starts n workers; worker k lists the hubs starting at hub
// k mod hubs, so they spread over the fleet like a round-robin balancer.
func (f *fleet) startWorkers(n, lanes int) {
	for k := 0; k < n; k++ {
		var urls []string
		for j := range f.urls {
			urls = append(urls, f.urls[(k+j)%len(f.urls)])
		}
		id := fmt.Sprintf("w%d", k)
		f.workers[id] = startBinary(f.t, clusterBinary, "worker-"+id, nil, "worker", "--hub", joinComma(urls), "--id", id,
			"--lanes", strconv.Itoa(lanes), "--exec-log", f.execLog)
	}
	c := f.client()
	waitWorkers(f.t, c, n)
}

// linkIndexes maps each live worker to the index of the hub holding its
// link, as GET /workers and GET /hubs through url tell; false when either
// does not answer.
func (f *fleet) linkIndexes(url string) (map[string]int, bool) {
	var ws struct{ Workers []client.Worker }
	var hs struct{ Hubs []client.Hub }
	if !tryJSON(url+"/workers", &ws) || !tryJSON(url+"/hubs", &hs) {
		return nil, false
	}
	at := map[string]int{}
	for i, u := range f.urls {
		for _, h := range hs.Hubs {
			if strings.TrimSuffix(h.Address, "/") == u {
				at[h.ID] = i
			}
		}
	}
	out := map[string]int{}
	for _, w := range ws.Workers {
		if i, ok := at[w.Hub]; ok && w.Alive {
			out[w.ID] = i
		}
	}
	return out, true
}

// tryJSON is getJSON for a poll: false instead of failing the test.
func tryJSON(url string, v any) bool {
	res, err := http.Get(url)
	if err != nil {
		return false
	}
	defer res.Body.Close()
	return res.StatusCode == http.StatusOK && json.NewDecoder(res.Body).Decode(v) == nil
}

func joinComma(s []string) string {
	out := ""
	for i, v := range s {
		if i > 0 {
			out += ","
		}
		out += v
	}
	return out
}

func (f *fleet) client() *client.Client {
	c, err := client.New(f.urls, client.WithMaxAttempts(8))
	require.NoError(f.t, err)
	return c
}

func getJSON(t testing.TB, url string, v any) {
	t.Helper()
	res, err := http.Get(url)
	require.NoError(t, err)
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	require.Equal(t, http.StatusOK, res.StatusCode, "%s: %s", url, b)
	require.NoError(t, json.Unmarshal(b, v), url)
}

// load submits noop jobs at a steady pace until stop is closed.
func load(t testing.TB, c *client.Client, every time.Duration, params map[string]any, stop <-chan struct{}) func() []string {
	var mu sync.Mutex
	var ids []string
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			j, err := c.Submit(ctx, client.SubmitRequest{Mode: "noop", Params: params}, "")
			cancel()
			if err != nil {
				t.Logf("submit: %v", err)
				continue
			}
			mu.Lock()
			ids = append(ids, j.ID)
			mu.Unlock()
		}
	}()
	return func() []string {
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), ids...)
	}
}

// checkInvariants: every job final, none executed twice, every succeeded
// job's log whole and in order.
func (f *fleet) checkInvariants(ids []string, lines int, allowFailed bool) map[string]client.Job {
	t := f.t
	c := f.client()
	final := waitAllFinal(t, c, ids, 2*time.Minute)
	runs := map[string]int{}
	for _, e := range readExecs(t, f.execLog) {
		runs[e.job]++
	}
	alive := f.aliveURL()
	for id, j := range final {
		require.LessOrEqual(t, runs[id], 1, "job %s executed %d times", id, runs[id])
		if !allowFailed {
			require.Equal(t, client.StatusSucceeded, j.Status, "job %s: %s %s", id, j.Reason, j.Error)
		}
		if j.Status == client.StatusSucceeded {
			got := logsOf(t, alive, id)
			require.Len(t, got, lines, "job %s log", id)
			for i, l := range got {
				require.Equal(t, fmt.Sprintf("noop line %d of %d", i+1, lines), l, "job %s", id)
			}
		}
	}
	return final
}

func (f *fleet) aliveURL() string {
	for i, p := range f.hubs {
		select {
		case <-p.done:
		default:
			return f.urls[i]
		}
	}
	f.t.Fatal("no hub alive")
	return ""
}

// TestClusterAnyHubAnswersAnything: three hubs, six workers; every endpoint
// gives the same answer from each hub.
func TestClusterAnyHubAnswersAnything(t *testing.T) {
	f := newFleet(t, 3)
	f.startWorkers(6, 2)
	c := f.client()
	ctx := context.Background()
	var ids []string
	for i := 0; i < 30; i++ {
		j, err := c.Submit(ctx, client.SubmitRequest{Mode: "noop", Params: map[string]any{"lines": 5}}, "")
		require.NoError(t, err)
		ids = append(ids, j.ID)
	}
	f.checkInvariants(ids, 5, false)
	hubsOf := map[string]bool{}
	for _, id := range ids[:10] {
		var first map[string]any
		var firstLogs []string
		for i, u := range f.urls {
			var j map[string]any
			getJSON(t, u+"/jobs/"+id, &j)
			l := logsOf(t, u, id)
			if i == 0 {
				first, firstLogs = j, l
				continue
			}
			require.Equal(t, first, j, "job %s from %s", id, u)
			require.Equal(t, firstLogs, l)
		}
	}
	var views [][]string
	for _, u := range f.urls {
		var ws struct{ Workers []client.Worker }
		getJSON(t, u+"/workers", &ws)
		var ids []string
		for _, w := range ws.Workers {
			ids = append(ids, w.ID+"@"+w.Hub)
			hubsOf[w.Hub] = true
		}
		sort.Strings(ids)
		views = append(views, ids)
	}
	require.Len(t, views[0], 6)
	require.Equal(t, views[0], views[1])
	require.Equal(t, views[0], views[2])
	require.Len(t, hubsOf, 3, "workers spread over the three hubs")
	var hubs0, hubs2 struct{ Hubs []client.Hub }
	getJSON(t, f.urls[0]+"/hubs", &hubs0)
	getJSON(t, f.urls[2]+"/hubs", &hubs2)
	require.Len(t, hubs0.Hubs, 3)
	for i := range hubs0.Hubs {
		require.True(t, hubs0.Hubs[i].Alive)
		require.Equal(t, hubs0.Hubs[i].ID, hubs2.Hubs[i].ID)
	}

	// A worker's status set through one hub is seen through the others,
	// whichever hub holds its socket.
	c2, _ := client.New([]string{f.urls[1]})
	_, err := c2.SetWorkerStatus(ctx, "w0", "standby")
	require.NoError(t, err)
	for _, u := range f.urls {
		var ws struct{ Workers []client.Worker }
		getJSON(t, u+"/workers", &ws)
		for _, w := range ws.Workers {
			if w.ID == "w0" {
				require.Equal(t, "standby", w.Status, "via %s", u)
			}
		}
	}
	// Cancel through a third hub a job running through another.
	j, err := c.Submit(ctx, client.SubmitRequest{Mode: "noop", Params: map[string]any{"sleep_ms": 30000}}, "")
	require.NoError(t, err)
	require.Eventually(t, func() bool { g, _ := c.Get(ctx, j.ID); return g.Status == client.StatusRunning }, 10*time.Second, 20*time.Millisecond)
	c3, _ := client.New([]string{f.urls[2]})
	got, err := c3.Cancel(ctx, j.ID)
	require.NoError(t, err)
	require.Equal(t, client.StatusCanceled, got.Status)
	for _, u := range f.urls {
		var g client.Job
		getJSON(t, u+"/jobs/"+j.ID, &g)
		require.Equal(t, client.StatusCanceled, g.Status)
	}
	_ = reflect.DeepEqual
}

// TestClusterHubKilled: kill -9 one of three hubs under steady load. Every
// job ends final, none runs twice, no line of a succeeded job is lost, and
// the dead hub's workers take jobs again through the others.
func TestClusterHubKilled(t *testing.T) {
	f := newFleet(t, 3)
	clusterHubKilled(t, f)
}

// TestClusterHubKilledDefaultTimings: the same with the default membership
// and heartbeat timings (member_timeout 6 s, heartbeat 15 s), for the
// recovery time an operator gets out of the box.
func TestClusterHubKilledDefaultTimings(t *testing.T) {
	f := newFleetWith(t, 3, func(env []string) []string {
		var out []string
		for _, e := range env {
			if !strings.HasPrefix(e, "PAPRIKA_CLUSTER_MEMBER_TIMEOUT=") && !strings.HasPrefix(e, "PAPRIKA_WORKER_") &&
				!strings.HasPrefix(e, "PAPRIKA_SCHEDULER_ASSIGN_GRACE=") {
				out = append(out, e)
			}
		}
		return out
	})
	clusterHubKilled(t, f)
}

func clusterHubKilled(t *testing.T, f *fleet) {
	f.startWorkers(6, 2)
	c := f.client()
	// Which workers does each hub hold? Each worker links where its grain
	// lives (it was given every hub), so the hash says; the hub killed is
	// one that holds some.
	idx, ok := f.linkIndexes(f.urls[0])
	require.True(t, ok, "GET /workers and /hubs")
	victim := -1
	for _, i := range idx {
		if victim < 0 || i < victim {
			victim = i
		}
	}
	orphans := map[string]bool{}
	for id, i := range idx {
		if i == victim {
			orphans[id] = true
		}
	}
	require.GreaterOrEqual(t, victim, 0, "some hub holds workers: %v", idx)
	t.Logf("hub %d holds %d of the %d workers", victim, len(orphans), len(idx))

	stop := make(chan struct{})
	collect := load(t, c, 40*time.Millisecond, map[string]any{"lines": 20, "interval_ms": 20}, stop)
	time.Sleep(3 * time.Second)
	killed := time.Now()
	f.hubs[victim].kill()
	time.Sleep(12 * time.Second)
	close(stop)
	ids := collect()
	require.Greater(t, len(ids), 100)
	// Every job succeeds: an assignment whose confirmation died with the hub
	// is asked about (job_query) and, if the worker never got it, placed
	// again under a new attempt.
	final := f.checkInvariants(ids, 20, false)
	// Each of them, not only one: a worker whose link and grain died
	// together must get its slots back, whatever its jobs did meanwhile.
	back := map[string]time.Time{}
	for _, e := range readExecs(t, f.execLog) {
		if orphans[e.worker] && e.start.After(killed) && (back[e.worker].IsZero() || e.start.Before(back[e.worker])) {
			back[e.worker] = e.start
		}
	}
	var after []string
	for id := range orphans {
		require.False(t, back[id].IsZero(), "worker %s of the killed hub took no job again (back: %v)", id, back)
		after = append(after, fmt.Sprintf("%s %s", id, back[id].Sub(killed).Round(time.Millisecond)))
	}
	sort.Strings(after)
	t.Logf("%d jobs; hub killed → each of its workers running jobs again after: %s", len(final), strings.Join(after, ", "))
}

// TestClusterFrozenHubIsFenced: one of three hubs is frozen (SIGSTOP) past
// the member timeout under load. Its peers drop it and take over; when it
// resumes it finds itself dropped and exits (status 3) instead of acting
// on stale state; whatever it still sends is refused by the fenced grains
// and the conditional writes. Every job ends final, none runs twice.
func TestClusterFrozenHubIsFenced(t *testing.T) {
	f := newFleet(t, 3)
	f.startWorkers(6, 2)
	c := f.client()
	stop := make(chan struct{})
	collect := load(t, c, 50*time.Millisecond, map[string]any{"lines": 10, "interval_ms": 20}, stop)
	time.Sleep(2 * time.Second)
	frozen := f.hubs[0]
	require.NoError(t, frozen.cmd.Process.Signal(syscall.SIGSTOP))
	time.Sleep(5 * time.Second) // member timeout is 2 s
	require.NoError(t, frozen.cmd.Process.Signal(syscall.SIGCONT))
	select {
	case <-frozen.done:
		require.Equal(t, 3, frozen.cmd.ProcessState.ExitCode(), "a dropped hub exits 3")
	case <-time.After(30 * time.Second):
		t.Fatal("the frozen hub did not notice it was dropped")
	}
	time.Sleep(2 * time.Second)
	close(stop)
	ids := collect()
	require.Greater(t, len(ids), 60)
	f.checkInvariants(ids, 10, false)
}

// BenchmarkClusterNoopThroughput: end-to-end no-op jobs per second through
// 1 and 3 hubs sharing MariaDB and Redis, 6 workers × 4 lanes, jobs
// submitted over HTTP by 8 concurrent clients spread over the hubs.
func BenchmarkClusterNoopThroughput(b *testing.B) {
	for _, hubs := range []int{1, 3} {
		b.Run(fmt.Sprintf("hubs=%d", hubs), func(b *testing.B) {
			f := newFleetTB(b, hubs)
			f.startWorkers(6, 4)
			c := f.client()
			n := max(b.N, 400)
			ids := make([]string, n)
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			for w := 0; w < 8; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := w; i < n; i += 8 {
						j, err := c.Submit(context.Background(), client.SubmitRequest{Mode: "noop"}, "")
						if err != nil {
							b.Error(err)
							return
						}
						ids[i] = j.ID
					}
				}()
			}
			wg.Wait()
			waitAllFinal(b, c, ids, 5*time.Minute)
			b.ReportMetric(float64(n)/time.Since(start).Seconds(), "jobs/s")
		})
	}
}
