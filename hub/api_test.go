package hub

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/agent"
	"github.com/paprika-hub/paprika/persistence"
)

func do(t *testing.T, method, url, body string, hdr ...string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	if method != http.MethodGet {
		// What every client sends; a test of the 415 overrides it.
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, b
}

func TestIdempotencyKey(t *testing.T) {
	h := startTestHub(t, testConfig(t))
	st1, b1 := do(t, "POST", h.URL()+"/jobs", `{"mode":"noop"}`, "Idempotency-Key", "k-1")
	st2, b2 := do(t, "POST", h.URL()+"/jobs", `{"mode":"noop"}`, "Idempotency-Key", "k-1")
	require.Equal(t, http.StatusCreated, st1)
	require.Equal(t, http.StatusOK, st2)
	var j1, j2 persistence.Job
	require.NoError(t, json.Unmarshal(b1, &j1))
	require.NoError(t, json.Unmarshal(b2, &j2))
	require.Equal(t, j1.ID, j2.ID)
}

func TestListPagesWithCursor(t *testing.T) {
	h := startTestHub(t, testConfig(t))
	created := map[string]bool{}
	for i := 0; i < 73; i++ {
		created[submit(t, h.URL(), `{"mode":"noop"}`).ID] = true
	}
	seen := map[string]bool{}
	cursor := ""
	var prev time.Time
	for pages := 0; ; pages++ {
		require.Less(t, pages, 10)
		st, b := do(t, "GET", h.URL()+"/jobs?status=queued&limit=20&cursor="+cursor, "")
		require.Equal(t, http.StatusOK, st, string(b))
		var page struct {
			Jobs       []persistence.Job `json:"jobs"`
			NextCursor string            `json:"next_cursor"`
		}
		require.NoError(t, json.Unmarshal(b, &page))
		for _, j := range page.Jobs {
			require.False(t, seen[j.ID], "duplicate %s", j.ID)
			seen[j.ID] = true
			if !prev.IsZero() {
				require.False(t, j.CreatedAt.After(prev), "newest first")
			}
			prev = j.CreatedAt
		}
		if page.NextCursor == "" {
			break
		}
		cursor = page.NextCursor
	}
	require.Equal(t, created, seen)
	st, _ := do(t, "GET", h.URL()+"/jobs?limit=0", "")
	require.Equal(t, http.StatusBadRequest, st)
	st, _ = do(t, "GET", h.URL()+"/jobs?status=dancing", "")
	require.Equal(t, http.StatusBadRequest, st)
}

func TestCancelQueuedAndRunning(t *testing.T) {
	h := startTestHub(t, testConfig(t))
	queued := submit(t, h.URL(), `{"mode":"noop"}`)
	st, b := do(t, "POST", h.URL()+"/jobs/"+queued.ID+"/cancel", "")
	require.Equal(t, http.StatusOK, st, string(b))
	require.Equal(t, persistence.StatusCanceled, getJob(t, h.URL(), queued.ID).Status)
	st, b = do(t, "POST", h.URL()+"/jobs/"+queued.ID+"/cancel", "")
	require.Equal(t, http.StatusConflict, st, string(b))

	startAgent(t, h.URL(), "wa", 1)
	running := submit(t, h.URL(), `{"mode":"noop","params":{"lines":2,"sleep_ms":60000}}`)
	require.Eventually(t, func() bool { return getJob(t, h.URL(), running.ID).Status == persistence.StatusRunning },
		10*time.Second, 10*time.Millisecond)
	st, b = do(t, "POST", h.URL()+"/jobs/"+running.ID+"/cancel", "")
	require.Equal(t, http.StatusOK, st, string(b))
	j := getJob(t, h.URL(), running.ID)
	require.Equal(t, persistence.StatusCanceled, j.Status)
	require.Equal(t, persistence.ReasonCanceled, j.Reason)
	// The lane was stopped and freed: the next job runs on the one lane.
	next := submit(t, h.URL(), `{"mode":"noop","params":{"lines":1}}`)
	require.Equal(t, persistence.StatusSucceeded, waitFinal(t, h.URL(), next.ID, 10*time.Second).Status)
	st, _ = do(t, "POST", h.URL()+"/jobs/nosuchjob/cancel", "")
	require.Equal(t, http.StatusNotFound, st)
}

func TestHardDeadlineStopsTheJobAndFreesTheLane(t *testing.T) {
	h := startTestHub(t, testConfig(t))
	startAgent(t, h.URL(), "wa", 1)
	slow := submit(t, h.URL(), `{"mode":"noop","timeout_s":1,"params":{"sleep_ms":60000}}`)
	j := waitFinal(t, h.URL(), slow.ID, 10*time.Second)
	require.Equal(t, persistence.StatusFailed, j.Status)
	require.Equal(t, persistence.ReasonDeadlineExceeded, j.Reason)
	next := submit(t, h.URL(), `{"mode":"noop","params":{"lines":1}}`)
	require.Equal(t, persistence.StatusSucceeded, waitFinal(t, h.URL(), next.ID, 10*time.Second).Status)
}

func TestQueuedTimeout(t *testing.T) {
	cfg := testConfig(t)
	require.NoError(t, cfg.Set("reconciler.queued_timeout", "1s"))
	h := startTestHub(t, cfg)
	j := submit(t, h.URL(), `{"mode":"noop"}`) // no worker at all
	got := waitFinal(t, h.URL(), j.ID, 10*time.Second)
	require.Equal(t, persistence.StatusFailed, got.Status)
	require.Equal(t, persistence.ReasonQueuedTimeout, got.Reason)
}

// TestFollowLogsOverSSE: a follower that starts before the job gets every
// line once, in order, then the done event.
func TestFollowLogsOverSSE(t *testing.T) {
	h := startTestHub(t, testConfig(t))
	j := submit(t, h.URL(), `{"mode":"noop","params":{"lines":60,"interval_ms":5}}`)
	res, err := http.Get(h.URL() + "/jobs/" + j.ID + "/logs?follow=1")
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, "text/event-stream", res.Header.Get("Content-Type"))
	startAgent(t, h.URL(), "wa", 1)
	var lines []string
	done := false
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		l := sc.Text()
		if l == "event: done" {
			done = true
			break
		}
		if d, ok := strings.CutPrefix(l, "data: "); ok {
			lines = append(lines, d)
		}
	}
	require.True(t, done, "stream ended with event: done")
	require.Len(t, lines, 60)
	for i, l := range lines {
		require.Equal(t, fmt.Sprintf("noop line %d of 60", i+1), l)
	}
	// resume from an index: no gap, no duplicate
	st, b := do(t, "GET", h.URL()+"/jobs/"+j.ID+"/logs?follow=1", "", "Last-Event-ID", "57")
	require.Equal(t, http.StatusOK, st)
	require.Equal(t, 2, strings.Count(string(b), "data: noop"), string(b))
	require.Contains(t, string(b), "noop line 59 of 60")
}

func TestAuthTokens(t *testing.T) {
	cfg := testConfig(t)
	require.NoError(t, cfg.Set("auth.api_token", "api-secret"))
	require.NoError(t, cfg.Set("auth.worker_token", "worker-secret"))
	h := startTestHub(t, cfg)
	st, _ := do(t, "POST", h.URL()+"/jobs", `{"mode":"noop"}`)
	require.Equal(t, http.StatusUnauthorized, st)
	st, _ = do(t, "POST", h.URL()+"/jobs", `{"mode":"noop"}`, "Authorization", "Bearer wrong")
	require.Equal(t, http.StatusUnauthorized, st)
	st, b := do(t, "POST", h.URL()+"/jobs", `{"mode":"noop","params":{"lines":1}}`, "Authorization", "Bearer api-secret")
	require.Equal(t, http.StatusCreated, st, string(b))
	st, _ = do(t, "GET", h.URL()+"/healthz", "")
	require.Equal(t, http.StatusOK, st, "health is open")
	st, _ = do(t, "GET", h.URL()+"/workers/wx/link", "", "Authorization", "Bearer api-secret")
	require.Equal(t, http.StatusUnauthorized, st, "the API token does not open worker links")

	a, err := agent.New(agent.Config{HubURLs: []string{h.URL()}, ID: "wa", Lanes: 1, Token: "worker-secret", Logger: testLogger(t)})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = a.Run(ctx) }()
	var j persistence.Job
	require.NoError(t, json.Unmarshal(b, &j))
	require.Eventually(t, func() bool {
		st, b := do(t, "GET", h.URL()+"/jobs/"+j.ID, "", "Authorization", "Bearer api-secret")
		return st == http.StatusOK && strings.Contains(string(b), `"succeeded"`)
	}, 10*time.Second, 20*time.Millisecond)
	cancel()
}

// TestShortWorkerIDTakenByAnotherIP: the second machine whose short id
// collides gets the long form.
func TestShortWorkerIDTakenByAnotherIP(t *testing.T) {
	h := startTestHub(t, testConfig(t))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var agents []*agent.Agent
	for _, ip := range []string{"10.10.50.150", "10.11.50.150"} {
		a, err := agent.New(agent.Config{HubURLs: []string{h.URL()}, LanIP: ip, Lanes: 1, Logger: testLogger(t)})
		require.NoError(t, err)
		agents = append(agents, a)
		go func() { _ = a.Run(ctx) }()
		time.Sleep(300 * time.Millisecond) // the first claims the short id first
	}
	require.Eventually(t, func() bool {
		ws, err := h.Workers(ctx)
		if err != nil || len(ws) != 2 {
			return false
		}
		return ws[0].Alive && ws[1].Alive
	}, 15*time.Second, 20*time.Millisecond)
	ids := []string{agents[0].ID(), agents[1].ID()}
	require.ElementsMatch(t, []string{"w50150", "w10-11-50-150"}, ids)
}

func TestHealthReadyHubs(t *testing.T) {
	h := startTestHub(t, testConfig(t))
	st, b := do(t, "GET", h.URL()+"/readyz", "")
	require.Equal(t, http.StatusOK, st, string(b))
	require.Eventually(t, func() bool {
		st, b = do(t, "GET", h.URL()+"/hubs", "")
		return st == http.StatusOK && strings.Contains(string(b), h.ID())
	}, 5*time.Second, 20*time.Millisecond)
	var hubs struct{ Hubs []persistence.HubInfo }
	require.NoError(t, json.Unmarshal(b, &hubs))
	require.Len(t, hubs.Hubs, 1)
	require.True(t, hubs.Hubs[0].Alive)
	require.True(t, hubs.Hubs[0].Local)
	st, b = do(t, "GET", h.URL()+"/metrics", "")
	require.Equal(t, http.StatusOK, st)
	require.Contains(t, string(b), "paprika_hub_uptime_seconds")
	st, b = do(t, "POST", h.URL()+"/sessions", `{}`)
	require.Equal(t, http.StatusServiceUnavailable, st, "no chromium worker: %s", b)
	require.Contains(t, string(b), "no_capacity")
	st, _ = do(t, "POST", h.URL()+"/sessions", `{"idle_timeout_s":-1}`)
	require.Equal(t, http.StatusBadRequest, st)
	st, _ = do(t, "GET", h.URL()+"/sessions/s-nothing", "")
	require.Equal(t, http.StatusNotFound, st)
	st, _ = do(t, "PATCH", h.URL()+"/workers/nobody", `{"status":"drain"}`)
	require.Equal(t, http.StatusNotFound, st)
	st, _ = do(t, "PATCH", h.URL()+"/workers/nobody", `{"status":"asleep"}`)
	require.Equal(t, http.StatusBadRequest, st)
}

func TestAssetUploadAndDownload(t *testing.T) {
	cfg := testConfig(t)
	require.NoError(t, cfg.Set("auth.worker_token", "wt"))
	h := startTestHub(t, cfg)
	j := submit(t, h.URL(), `{"mode":"noop"}`)
	st, _ := do(t, "PUT", h.URL()+"/jobs/"+j.ID+"/assets/page.html", "<html>hi</html>", "Content-Type", "text/html")
	require.Equal(t, http.StatusUnauthorized, st, "uploads need the worker token")
	st, b := do(t, "PUT", h.URL()+"/jobs/"+j.ID+"/assets/page.html", "<html>hi</html>", "Content-Type", "text/html",
		"Authorization", "Bearer wt")
	require.Equal(t, http.StatusNoContent, st, string(b))
	res, err := http.Get(h.URL() + "/jobs/" + j.ID + "/assets/page.html")
	require.NoError(t, err)
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, "text/html", res.Header.Get("Content-Type"))
	require.Equal(t, "<html>hi</html>", string(body))
	st, _ = do(t, "GET", h.URL()+"/jobs/"+j.ID+"/assets/nothing.png", "")
	require.Equal(t, http.StatusNotFound, st)
	st, _ = do(t, "PUT", h.URL()+"/jobs/"+j.ID+"/assets/..", "x", "Authorization", "Bearer wt")
	require.NotEqual(t, http.StatusNoContent, st)
}

// TestWorkerSelfRestart: a worker past its job threshold drains, finishes
// what it runs, and its Run returns (exit 0 under a supervisor); started
// again with the same id it takes the rest. Nothing fails, nothing runs
// twice.
func TestWorkerSelfRestart(t *testing.T) {
	h := startTestHub(t, testConfig(t))
	a, err := agent.New(agent.Config{HubURLs: []string{h.URL()}, ID: "wr", Lanes: 2, Logger: testLogger(t),
		RestartAfterJobs: 3, RestartJitter: time.Nanosecond})
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- a.Run(context.Background()) }()
	var ids []string
	for i := 0; i < 8; i++ {
		ids = append(ids, submit(t, h.URL(), `{"mode":"noop","params":{"lines":2,"sleep_ms":200}}`).ID)
	}
	select {
	case err := <-done:
		require.NoError(t, err, "Run returns nil after a threshold restart")
	case <-time.After(30 * time.Second):
		t.Fatal("the worker did not restart itself")
	}
	startAgent(t, h.URL(), "wr", 2) // the supervisor starts it again, same id
	for _, id := range ids {
		j := waitFinal(t, h.URL(), id, 30*time.Second)
		require.Equal(t, persistence.StatusSucceeded, j.Status, "job %s: %s %s", id, j.Reason, j.Error)
		require.Equal(t, 1, j.Attempts, "job %s ran once", id)
	}
}
