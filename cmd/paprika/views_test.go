package main

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/client"
)

func TestRenderJobs(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	renderJobs(&b, []client.Job{
		{ID: "j-0001", Mode: "macro", Status: client.StatusFailed, Reason: client.ReasonWorkerLost, WorkerID: "w10-10-5-150",
			Attempts: 2, MaxAttempts: 2, CreatedAt: testNow.Add(-3 * time.Hour), StartedAt: testNow.Add(-3 * time.Hour),
			FinishedAt: testNow.Add(-3*time.Hour + 5*time.Minute + 4*time.Second)},
		{ID: "j2", Mode: "noop", Status: client.StatusQueued, MaxAttempts: 1, CreatedAt: testNow.Add(-3 * 24 * time.Hour)},
	}, testNow)
	require.Equal(t, ""+
		"ID      MODE   STATUS  REASON       WORKER        ATTEMPTS  AGE  DURATION\n"+
		"j-0001  macro  failed  worker_lost  w10-10-5-150  2/2       3h   5m4s\n"+
		"j2      noop   queued  -            -             0/1       3d   -\n", b.String())

	b.Reset()
	renderJobs(&b, nil, testNow)
	require.Equal(t, "no jobs\n", b.String())
}

func TestRenderJob(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	renderJob(&b, client.Job{
		ID: "j1", Mode: "fetch", Status: client.StatusSucceeded, WorkerID: "w50150", Lane: "lane-2",
		Attempts: 1, MaxAttempts: 1, TimeoutS: 180,
		CreatedAt: testNow.Add(-2 * time.Minute), StartedAt: testNow.Add(-2 * time.Minute), FinishedAt: testNow.Add(-time.Minute),
		Params: json.RawMessage(`{ "url": "https://example.com" }`),
		Result: json.RawMessage(`{"status": 200, "title": "Example\tDomain"}`),
		Assets: []string{"page.html", "screenshot.png"}, Labels: map[string]string{"team": "qa", "env": "ci"},
	}, testNow)
	require.Equal(t, ""+
		"ID        j1\n"+
		"MODE      fetch\n"+
		"STATUS    succeeded\n"+
		"REASON    -\n"+
		"ERROR     -\n"+
		"WORKER    w50150\n"+
		"LANE      lane-2\n"+
		"ATTEMPTS  1/1\n"+
		"TIMEOUT   180s\n"+
		"CREATED   2026-03-04T11:58:00Z (2m ago)\n"+
		"STARTED   2026-03-04T11:58:00Z (2m ago)\n"+
		"FINISHED  2026-03-04T11:59:00Z (1m ago)\n"+
		"DURATION  1m0s\n"+
		`PARAMS    {"url":"https://example.com"}`+"\n"+
		`RESULT    {"status":200,"title":"Example\tDomain"}`+"\n"+
		"ASSETS    page.html, screenshot.png\n"+
		"LABELS    env=ci,team=qa\n", b.String())
}

func TestRenderWorkers(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	renderWorkers(&b, []client.Worker{
		{ID: "w50151", Hub: "hub-b", Status: "drain", Alive: false, InFlight: 0, MaxConcurrent: 4,
			Lanes: json.RawMessage(`[{"url":"ws://a"},{"url":"ws://b"}]`), CPUPct: 3.2, MemPct: 41.6, DiskPct: 91, LastSeen: testNow.Add(-5 * time.Minute)},
		{ID: "w50150", Hub: "hub-a", Status: "active", Alive: true, InFlight: 3, MaxConcurrent: 4,
			Lanes: json.RawMessage(`4`), CPUPct: 87.5, MemPct: 60, DiskPct: 12, LastSeen: testNow.Add(-4 * time.Second)},
	}, testNow)
	require.Equal(t, ""+
		"ID      HUB    STATUS  ALIVE  JOBS  LANES  CPU  MEM  DISK  SEEN\n"+
		"w50150  hub-a  active  yes    3/4   4      88%  60%  12%   4s\n"+
		"w50151  hub-b  drain   no     0/4   2      3%   42%  91%   5m\n", b.String())

	b.Reset()
	renderWorkers(&b, nil, testNow)
	require.Equal(t, "no workers\n", b.String())
}

func TestRenderHubs(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	renderHubs(&b, []client.Hub{
		{ID: "hub-b", Address: "http://10.0.0.2:8080", Alive: false, StartedAt: testNow.Add(-50 * time.Hour), LastSeen: testNow.Add(-2 * time.Minute)},
		{ID: "hub-a", Address: "http://10.0.0.1:8080", Alive: true, Local: true, StartedAt: testNow.Add(-26 * time.Hour), LastSeen: testNow.Add(-time.Second)},
	}, testNow)
	require.Equal(t, ""+
		"ID     ADDRESS               ALIVE  LOCAL  UPTIME  SEEN\n"+
		"hub-a  http://10.0.0.1:8080  yes    *      26h     1s\n"+
		"hub-b  http://10.0.0.2:8080  no     -      -       2m\n", b.String())
}

func TestWorkersAndHubsCommands(t *testing.T) {
	t.Parallel()
	h, srv := setup(t)
	h.workers = []client.Worker{{ID: "w1", Hub: "hub-a", Status: "active", Alive: true, MaxConcurrent: 2, Lanes: json.RawMessage(`2`), LastSeen: testNow}}
	h.hubs = []client.Hub{{ID: "hub-a", Address: srv.URL, Alive: true, Local: true, StartedAt: testNow.Add(-time.Hour), LastSeen: testNow}}
	env := map[string]string{envHub: srv.URL}

	r := runCLI(t, env, "workers")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Equal(t, ""+
		"ID  HUB    STATUS  ALIVE  JOBS  LANES  CPU  MEM  DISK  SEEN\n"+
		"w1  hub-a  active  yes    0/2   2      0%   0%   0%    0s\n", r.stdout)

	r = runCLI(t, env, "workers", "drain", "w1")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Equal(t, "worker w1 is drain\n", r.stdout)

	r = runCLI(t, env, "hubs")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "hub-a  "+srv.URL+"  yes    *      1h      0s\n")
}

func TestAge(t *testing.T) {
	t.Parallel()
	for d, want := range map[time.Duration]string{
		0: "0s", 59 * time.Second: "59s", time.Minute: "1m", 59 * time.Minute: "59m",
		time.Hour: "1h", 47 * time.Hour: "47h", 48 * time.Hour: "2d", -time.Second: "0s",
	} {
		require.Equal(t, want, age(testNow, testNow.Add(-d)), d)
	}
	require.Empty(t, age(testNow, time.Time{}))
}
