package hub

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/config"
	"github.com/paprika-hub/paprika/persistence"
	"github.com/paprika-hub/paprika/persistence/storetest"
)

// realConfig points a test hub at the real MariaDB, Redis and MinIO, each
// isolated for this test (own database, key prefix, bucket).
func realConfig(t *testing.T) *config.Config {
	if testing.Short() {
		t.Skip("needs MariaDB, Redis and MinIO; skipped with -short")
	}
	cfg := testConfig(t)
	set := func(k, v string) { require.NoError(t, cfg.Set(k, v), k) }
	set("mysql.dsn", storetest.MySQLDatabase(t))
	url, prefix := storetest.RedisPrefix(t)
	set("redis.url", url)
	set("redis.prefix", prefix)
	ep, ak, sk, bucket := storetest.MinIOEndpoint(t)
	set("minio.endpoint", ep)
	set("minio.access_key", ak)
	set("minio.secret_key", sk)
	set("minio.bucket", bucket)
	return cfg
}

// viaProxy rewrites the config so one store goes through a fault proxy.
func viaMySQLProxy(t *testing.T, cfg *config.Config) *storetest.Proxy {
	dsn, err := gomysql.ParseDSN(cfg.MySQL.DSN)
	require.NoError(t, err)
	p := storetest.NewProxy(t, dsn.Addr)
	dsn.Addr = p.Addr()
	require.NoError(t, cfg.Set("mysql.dsn", dsn.FormatDSN()))
	return p
}

func viaRedisProxy(t *testing.T, cfg *config.Config) *storetest.Proxy {
	opt, err := redis.ParseURL(cfg.Redis.URL)
	require.NoError(t, err)
	p := storetest.NewProxy(t, opt.Addr)
	require.NoError(t, cfg.Set("redis.url", strings.Replace(cfg.Redis.URL, opt.Addr, p.Addr(), 1)))
	return p
}

func TestRealStoresEndToEnd(t *testing.T) {
	h := startTestHub(t, realConfig(t))
	require.Equal(t, "mariadb", h.stores.Kinds["jobs"])
	require.Equal(t, "redis", h.stores.Kinds["logs"])
	require.Contains(t, h.stores.Kinds["assets"], "minio:")
	startAgent(t, h.URL(), "wa", 3)
	startAgent(t, h.URL(), "wb", 3)
	var ids []string
	for i := 0; i < 30; i++ {
		ids = append(ids, submit(t, h.URL(), fmt.Sprintf(`{"mode":"noop","params":{"lines":%d}}`, i%9)).ID)
	}
	for i, id := range ids {
		j := waitFinal(t, h.URL(), id, 30*time.Second)
		require.Equal(t, persistence.StatusSucceeded, j.Status, "%s %s", j.Reason, j.Error)
		st, b := do(t, "GET", h.URL()+"/jobs/"+id+"/logs", "")
		require.Equal(t, http.StatusOK, st)
		require.Equal(t, i%9, strings.Count(string(b), "\n"))
	}
	st, _ := do(t, "PUT", h.URL()+"/jobs/"+ids[0]+"/assets/shot.png", "PNGDATA", "Content-Type", "image/png")
	require.Equal(t, http.StatusNoContent, st)
	st, b := do(t, "GET", h.URL()+"/jobs/"+ids[0]+"/assets/shot.png", "")
	require.Equal(t, http.StatusOK, st)
	require.Equal(t, "PNGDATA", string(b))
	st, b = do(t, "GET", h.URL()+"/readyz", "")
	require.Equal(t, http.StatusOK, st, string(b))
}

// TestRedisCommandsPerLogLine: 100 jobs each emit 500 lines through the hub
// into real Redis. MONITOR (filtered to this test's key prefix, since other
// tests share the server) counts the commands: at most one RPUSH and one
// PUBLISH per 50 lines per job — the done sentinel adds at most one PUBLISH
// per job when it could not ride on the last batch — and every line is
// stored in order. logs.batch_wait is long here so that the 50-line rule,
// not this machine's speed, decides the batches.
func TestRedisCommandsPerLogLine(t *testing.T) {
	cfg := realConfig(t)
	require.NoError(t, cfg.Set("logs.batch_wait", "5s"))
	h := startTestHub(t, cfg)
	// MONITOR over a raw connection (go-redis's Monitor drops lines): each
	// reply line is `+<ts> [<db> <client>] "cmd" "arg" ...`, commands run
	// by scripts show as [<db> lua].
	opt, err := redis.ParseURL(cfg.Redis.URL)
	require.NoError(t, err)
	mon, err := net.Dial("tcp", opt.Addr)
	require.NoError(t, err)
	_, err = mon.Write([]byte("MONITOR\r\n"))
	require.NoError(t, err)
	counts := map[string]int{}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		sc := bufio.NewScanner(mon)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) < 5 || !strings.Contains(f[4], cfg.Redis.Prefix+"log") {
				continue
			}
			counts[strings.ToLower(strings.Trim(f[3], `"`))]++
		}
	}()
	for i := 0; i < 4; i++ {
		startAgent(t, h.URL(), fmt.Sprintf("w%d", i), 25)
	}
	var ids []string
	for i := 0; i < 100; i++ {
		ids = append(ids, submit(t, h.URL(), `{"mode":"noop","params":{"lines":500}}`).ID)
	}
	for _, id := range ids {
		require.Equal(t, persistence.StatusSucceeded, waitFinal(t, h.URL(), id, 2*time.Minute).Status)
	}
	time.Sleep(300 * time.Millisecond) // let MONITOR deliver the tail
	_ = mon.Close()
	wg.Wait()
	rpush, publish := counts["rpush"], counts["publish"]
	t.Logf("commands on this test's log keys: rpush %d, publish %d (for 100 jobs × 500 lines = 1,000 batches of 50)", rpush, publish)
	require.Positive(t, rpush, "MONITOR saw the writes")
	require.LessOrEqual(t, rpush, 100*500/50)
	require.LessOrEqual(t, publish, 100*500/50+100)
	for _, id := range ids {
		lines, done, err := h.stores.Logs.Read(context.Background(), id, 0, 0)
		require.NoError(t, err)
		require.True(t, done)
		require.Len(t, lines, 500)
		for i, l := range lines {
			require.Equal(t, fmt.Sprintf("noop line %d of 500", i+1), l)
		}
	}
}

// TestRedisPausedUnderLoad: Redis stops answering for 3 s under steady load.
// No worker is reported dead, no job fails, no line is lost.
func TestRedisPausedUnderLoad(t *testing.T) {
	cfg := realConfig(t)
	proxy := viaRedisProxy(t, cfg)
	h := startTestHub(t, cfg)
	startAgent(t, h.URL(), "wa", 4)
	startAgent(t, h.URL(), "wb", 4)
	var mu sync.Mutex
	var ids []string
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // steady load: a job every 50 ms
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			res, err := http.Post(h.URL()+"/jobs", "application/json",
				strings.NewReader(`{"mode":"noop","params":{"lines":20,"interval_ms":10}}`))
			if err != nil {
				continue
			}
			var j persistence.Job
			_ = json.NewDecoder(res.Body).Decode(&j)
			res.Body.Close()
			if res.StatusCode == http.StatusCreated {
				mu.Lock()
				ids = append(ids, j.ID)
				mu.Unlock()
			}
		}
	}()
	time.Sleep(2 * time.Second)
	proxy.Pause()
	time.Sleep(3 * time.Second)
	proxy.Resume()
	time.Sleep(2 * time.Second)
	close(stop)
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	require.Greater(t, len(ids), 40)
	for _, id := range ids {
		j := waitFinal(t, h.URL(), id, time.Minute)
		require.Equal(t, persistence.StatusSucceeded, j.Status, "job %s: %s %s", id, j.Reason, j.Error)
		lines, _, err := h.stores.Logs.Read(context.Background(), id, 0, 0)
		require.NoError(t, err)
		require.Len(t, lines, 20, "job %s", id)
	}
	ws, err := h.Workers(context.Background())
	require.NoError(t, err)
	require.Len(t, ws, 2)
	for _, w := range ws {
		require.True(t, w.Alive, "worker %s reported dead", w.ID)
	}
	require.Zero(t, h.Metrics().Get("paprika_worker_lost_jobs_total"))
	require.Zero(t, h.Metrics().Get("paprika_links_closed_total"), "no link dropped")
}

// TestMySQLDownAnswers503: with MariaDB unreachable POST /jobs answers 503
// with Retry-After and writes nothing; when it returns, the same hub takes
// jobs again without a restart.
func TestMySQLDownAnswers503(t *testing.T) {
	cfg := realConfig(t)
	proxy := viaMySQLProxy(t, cfg)
	h := startTestHub(t, cfg)
	startAgent(t, h.URL(), "wa", 2)
	before := submit(t, h.URL(), `{"mode":"noop","params":{"lines":1}}`)
	require.Equal(t, persistence.StatusSucceeded, waitFinal(t, h.URL(), before.ID, 10*time.Second).Status)

	proxy.Cut()
	req, _ := http.NewRequest("POST", h.URL()+"/jobs", strings.NewReader(`{"mode":"noop"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", "during-outage")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	require.Equal(t, http.StatusServiceUnavailable, res.StatusCode, string(b))
	require.NotEmpty(t, res.Header.Get("Retry-After"))
	require.Contains(t, string(b), `"unavailable"`)
	st, rb := do(t, "GET", h.URL()+"/readyz", "")
	require.Equal(t, http.StatusServiceUnavailable, st)
	require.Contains(t, string(rb), `"jobs"`)

	proxy.Restore()
	require.Eventually(t, func() bool {
		st, _ := do(t, "GET", h.URL()+"/readyz", "")
		return st == http.StatusOK
	}, 20*time.Second, 100*time.Millisecond)
	after := submit(t, h.URL(), `{"mode":"noop","params":{"lines":1}}`)
	require.Equal(t, persistence.StatusSucceeded, waitFinal(t, h.URL(), after.ID, 10*time.Second).Status)
	st, lb := do(t, "GET", h.URL()+"/jobs?limit=100", "")
	require.Equal(t, http.StatusOK, st)
	var page struct{ Jobs []persistence.Job }
	require.NoError(t, json.Unmarshal(lb, &page))
	require.Len(t, page.Jobs, 2, "nothing half-written during the outage")
}

// TestRedisDownHubKeepsServing: with Redis cut, reads of jobs keep working
// and /readyz names what is down; when Redis returns, finished jobs' logs
// arrive whole.
func TestRedisDownHubKeepsServing(t *testing.T) {
	cfg := realConfig(t)
	proxy := viaRedisProxy(t, cfg)
	h := startTestHub(t, cfg)
	startAgent(t, h.URL(), "wa", 2)
	j := submit(t, h.URL(), `{"mode":"noop","params":{"lines":1}}`)
	require.Equal(t, persistence.StatusSucceeded, waitFinal(t, h.URL(), j.ID, 10*time.Second).Status)
	proxy.Cut()
	st, _ := do(t, "GET", h.URL()+"/jobs/"+j.ID, "")
	require.Equal(t, http.StatusOK, st)
	st, b := do(t, "GET", h.URL()+"/readyz", "")
	require.Equal(t, http.StatusServiceUnavailable, st)
	require.Contains(t, string(b), `"logs"`)
	during := submit(t, h.URL(), `{"mode":"noop","params":{"lines":30}}`)
	time.Sleep(time.Second)
	proxy.Restore()
	got := waitFinal(t, h.URL(), during.ID, 30*time.Second)
	require.Equal(t, persistence.StatusSucceeded, got.Status, "%s %s", got.Reason, got.Error)
	lines, done, err := h.stores.Logs.Read(context.Background(), during.ID, 0, 0)
	require.NoError(t, err)
	require.True(t, done)
	require.Len(t, lines, 30)
}
