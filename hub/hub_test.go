package hub

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/agent"
	"github.com/paprika-hub/paprika/config"
	"github.com/paprika-hub/paprika/persistence"
)

// testLogger writes to the test log only when -v or on failure.
func testLogger(t testing.TB) *slog.Logger {
	if os.Getenv("PAPRIKA_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

func testConfig(t testing.TB) *config.Config {
	cfg := config.Default()
	dir := t.TempDir()
	require.NoError(t, cfg.Set("hub.listen", "127.0.0.1:0"))
	require.NoError(t, cfg.Set("assets.dir", filepath.Join(dir, "assets")))
	require.NoError(t, cfg.Set("reconciler.orphan_grace", "2s"))
	require.NoError(t, cfg.Set("reconciler.interval", "500ms"))
	return cfg
}

func startTestHub(t *testing.T, cfg *config.Config) *Hub {
	h, err := New(cfg, testLogger(t))
	require.NoError(t, err)
	require.NoError(t, h.Start(context.Background()))
	t.Cleanup(func() { _ = h.Stop(context.Background()) })
	return h
}

func startAgent(t *testing.T, url, id string, lanes int) (stop func()) {
	stop = startAgentB(t, url, id, lanes)
	t.Cleanup(stop)
	return stop
}

// startAgentB runs an in-process worker agent until stop is called.
func startAgentB(t testing.TB, url, id string, lanes int) (stop func()) {
	return startAgentHubs(t, []string{url}, id, lanes)
}

// startAgentHubs runs an in-process worker agent given urls (its --hub
// list) until stop is called.
func startAgentHubs(t testing.TB, urls []string, id string, lanes int) (stop func()) {
	a, err := agent.New(agent.Config{HubURLs: urls, ID: id, Lanes: lanes, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = a.Run(ctx) }()
	var once sync.Once
	return func() { once.Do(func() { cancel(); wg.Wait() }) }
}

func submit(t *testing.T, url string, body string) persistence.Job {
	res, err := http.Post(url+"/jobs", "application/json", strings.NewReader(body))
	require.NoError(t, err)
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	require.Equal(t, http.StatusCreated, res.StatusCode, string(b))
	var j persistence.Job
	require.NoError(t, json.Unmarshal(b, &j))
	return j
}

func getJob(t *testing.T, url, id string) persistence.Job {
	res, err := http.Get(url + "/jobs/" + id)
	require.NoError(t, err)
	defer res.Body.Close()
	var j persistence.Job
	require.NoError(t, json.NewDecoder(res.Body).Decode(&j))
	return j
}

func waitFinal(t *testing.T, url, id string, within time.Duration) persistence.Job {
	var j persistence.Job
	require.Eventually(t, func() bool {
		j = getJob(t, url, id)
		return j.Status.Final()
	}, within, 20*time.Millisecond, "job %s never final (last %s)", id, j.Status)
	return j
}

func TestHubRunsNoopJobsEndToEnd(t *testing.T) {
	h := startTestHub(t, testConfig(t))
	startAgent(t, h.URL(), "wa", 3)
	startAgent(t, h.URL(), "wb", 3)
	var ids []string
	for i := 0; i < 40; i++ {
		ids = append(ids, submit(t, h.URL(), fmt.Sprintf(`{"mode":"noop","params":{"lines":%d}}`, i%7)).ID)
	}
	byWorker := map[string]int{}
	for i, id := range ids {
		j := waitFinal(t, h.URL(), id, 20*time.Second)
		require.Equal(t, persistence.StatusSucceeded, j.Status, "job %s: %s %s", id, j.Reason, j.Error)
		byWorker[j.WorkerID]++
		res, err := http.Get(h.URL() + "/jobs/" + id + "/logs")
		require.NoError(t, err)
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		lines := strings.Count(string(b), "\n")
		require.Equal(t, i%7, lines, "log of job %s: %q", id, b)
	}
	require.Len(t, byWorker, 2, "both workers ran jobs: %v", byWorker)
}

func TestHubBadInput(t *testing.T) {
	h := startTestHub(t, testConfig(t))
	cases := []struct{ body, code string }{
		{`{"mode":"Dance!"}`, "bad_mode"},
		{`{"mode":"noop","params":{"lines":-1}}`, "bad_params"},
		{`{"mode":"noop","params":{"lines":"x"}}`, "bad_params"},
		{`{"mode":"fetch","params":{"url":"ftp://x"}}`, "bad_params"},
		{`{"mode":"noop","timeout_s":-5}`, "bad_timeout"},
		{`not json`, "bad_json"},
		{`{"mode":"noop","bogus":1}`, "bad_json"},
	}
	for _, tc := range cases {
		res, err := http.Post(h.URL()+"/jobs", "application/json", strings.NewReader(tc.body))
		require.NoError(t, err)
		var e struct {
			Error struct{ Code, Message string }
		}
		require.NoError(t, json.NewDecoder(res.Body).Decode(&e))
		res.Body.Close()
		require.Equal(t, http.StatusBadRequest, res.StatusCode, tc.body)
		require.Equal(t, tc.code, e.Error.Code, tc.body)
		require.NotEmpty(t, e.Error.Message)
	}
	big := bytes.Repeat([]byte("a"), 2<<20)
	res, err := http.Post(h.URL()+"/jobs", "application/json", bytes.NewReader(big))
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusRequestEntityTooLarge, res.StatusCode)
	res, err = http.Get(h.URL() + "/jobs/bad$id")
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusBadRequest, res.StatusCode)
	res, err = http.Get(h.URL() + "/jobs/nope")
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusNotFound, res.StatusCode)
}

// A store that fails to open is reported as itself, and what had opened
// before it is closed (the embedded job file can be opened again).
func TestOpenStoresFailureNamesTheStore(t *testing.T) {
	cfg := testConfig(t)
	require.NoError(t, cfg.Set("redis.url", "redis://127.0.0.1:1/0"))
	_, err := OpenStores(context.Background(), cfg, testLogger(t))
	require.Error(t, err)
	require.Contains(t, err.Error(), "redis.url")
	require.NoError(t, cfg.Set("redis.url", ""))
	s, err := OpenStores(context.Background(), cfg, testLogger(t))
	require.NoError(t, err, "the job file was left locked")
	require.NoError(t, s.Close())
}
