package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/client"
	"github.com/paprika-hub/paprika/persistence"
)

// Custom job types end to end: worker binaries built on package worker
// (the examples and testdata/customworker) link to a real `paprika hub`,
// which runs their modes' jobs under the guarantees of built-in ones.

var (
	builtMu sync.Mutex
	built   = map[string]string{} // package → binary
)

// buildWorkerBinary builds the main package pkg (relative to the module
// root) once per test run, with -race, next to the paprika binary.
func buildWorkerBinary(t *testing.T, pkg string) string {
	t.Helper()
	builtMu.Lock()
	defer builtMu.Unlock()
	if bin, ok := built[pkg]; ok {
		return bin
	}
	bin := filepath.Join(filepath.Dir(binary), strings.ReplaceAll(strings.Trim(pkg, "./"), "/", "-"))
	cmd := exec.Command("go", "build", "-race", "-o", bin, pkg)
	cmd.Dir = ".."
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "build %s: %s", pkg, out)
	built[pkg] = bin
	return bin
}

// customHub starts a hub and one worker binary (args after --hub), and
// waits until the worker is alive.
func customHub(t *testing.T, pkg, id string, args ...string) (*client.Client, string, *proc) {
	t.Helper()
	bin := buildWorkerBinary(t, pkg)
	_, url := startHub(t, t.TempDir(), freePort(t))
	w := startBinary(t, bin, id, nil, append([]string{"--hub", url, "--id", id}, args...)...)
	c, err := client.New([]string{url})
	require.NoError(t, err)
	waitWorkers(t, c, 1)
	return c, url, w
}

func submit(t *testing.T, c *client.Client, req client.SubmitRequest) string {
	t.Helper()
	j, err := c.Submit(context.Background(), req, "")
	require.NoError(t, err, "submit %s", req.Mode)
	return j.ID
}

func assetOf(t *testing.T, c *client.Client, id, name string) []byte {
	t.Helper()
	rc, _, err := c.Asset(context.Background(), id, name)
	require.NoError(t, err, "asset %s of %s", name, id)
	defer rc.Close()
	b, err := io.ReadAll(rc)
	require.NoError(t, err)
	return b
}

func TestCustomModesHTTPCheckExample(t *testing.T) {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/ok" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("X-Site", "e2e")
		fmt.Fprint(w, "hello from paprika's e2e site")
	}))
	defer site.Close()
	c, url, _ := customHub(t, "./examples/http-check", "http-check-1", "--lanes", "2")

	id := submit(t, c, client.SubmitRequest{Mode: "http-check", Params: map[string]any{"url": site.URL + "/ok", "contains": "paprika"}})
	j := waitFinal(t, c, id, 90*time.Second)
	require.Equal(t, persistence.StatusSucceeded, j.Status, "%s: %s", j.Reason, j.Error)
	var r struct {
		Status   int   `json:"status"`
		OK       bool  `json:"ok"`
		Contains *bool `json:"contains"`
		Bytes    int   `json:"bytes"`
	}
	require.NoError(t, json.Unmarshal(j.Result, &r))
	assert.Equal(t, http.StatusOK, r.Status)
	assert.True(t, r.OK)
	require.NotNil(t, r.Contains)
	assert.True(t, *r.Contains)
	assert.Equal(t, len("hello from paprika's e2e site"), r.Bytes)
	assert.Equal(t, "http-check-1", j.WorkerID)
	assert.Equal(t, []string{"response-head.txt"}, j.Assets)
	head := string(assetOf(t, c, id, "response-head.txt"))
	assert.Contains(t, head, "200 OK")
	assert.Contains(t, head, "X-Site: e2e")
	assert.Contains(t, strings.Join(logsOf(t, url, id), "\n"), "GET "+site.URL+"/ok")

	// The schema the worker declared is the hub's check at submit.
	res, err := http.Post(url+"/jobs", "application/json",
		strings.NewReader(`{"mode":"http-check","params":{"url":"ftp://example.org","timeout_ms":5}}`))
	require.NoError(t, err)
	var refusal struct {
		Error struct {
			Code, Message, Field string
		} `json:"error"`
	}
	require.NoError(t, json.NewDecoder(res.Body).Decode(&refusal))
	res.Body.Close()
	assert.Equal(t, http.StatusBadRequest, res.StatusCode)
	assert.Equal(t, "bad_params", refusal.Error.Code)
	assert.Contains(t, refusal.Error.Field+" "+refusal.Error.Message, "url")

	// A page that answers, but not as expected, is a result, not a failure.
	id = submit(t, c, client.SubmitRequest{Mode: "http-check", Params: map[string]any{"url": site.URL + "/gone"}})
	j = waitFinal(t, c, id, 90*time.Second)
	require.Equal(t, persistence.StatusSucceeded, j.Status, "%s: %s", j.Reason, j.Error)
	require.NoError(t, json.Unmarshal(j.Result, &r))
	assert.Equal(t, http.StatusNotFound, r.Status)
	assert.False(t, r.OK)
}

func TestCustomModesPDFDiffExample(t *testing.T) {
	needChromium(t)
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		total := strings.TrimPrefix(r.URL.Path, "/invoice/")
		fmt.Fprintf(w, "<!doctype html><title>Invoice</title><h1>Invoice 7</h1><p>Customer: Ada</p><p>Total %s EUR</p>", total)
	}))
	defer site.Close()
	c, url, _ := customHub(t, "./examples/pdf-diff", "pdf-diff-1", "--lanes", "1")

	id := submit(t, c, client.SubmitRequest{Mode: "pdf-diff", TimeoutS: 120,
		Params: map[string]any{"a": site.URL + "/invoice/10", "b": site.URL + "/invoice/12"}})
	j := waitFinal(t, c, id, 90*time.Second)
	require.Equal(t, persistence.StatusSucceeded, j.Status, "%s: %s", j.Reason, j.Error)
	var r struct {
		A, B struct {
			Pages int `json:"pages"`
			Bytes int `json:"bytes"`
		}
		SamePages bool     `json:"same_pages"`
		SameText  bool     `json:"same_text"`
		OnlyInA   []string `json:"only_in_a"`
		OnlyInB   []string `json:"only_in_b"`
	}
	require.NoError(t, json.Unmarshal(j.Result, &r), string(j.Result))
	assert.Equal(t, 1, r.A.Pages)
	assert.True(t, r.SamePages)
	assert.False(t, r.SameText)
	assert.Equal(t, []string{"Total 10 EUR"}, r.OnlyInA)
	assert.Equal(t, []string{"Total 12 EUR"}, r.OnlyInB)
	assert.ElementsMatch(t, []string{"a.pdf", "b.pdf"}, j.Assets)
	pdf := assetOf(t, c, id, "a.pdf")
	assert.True(t, strings.HasPrefix(string(pdf), "%PDF-"), "a.pdf is not a PDF")
	assert.Equal(t, r.A.Bytes, len(pdf))
	assert.Contains(t, strings.Join(logsOf(t, url, id), "\n"), "loading "+site.URL+"/invoice/10")

	// The same page twice: the lane was cleaned and is used again.
	id = submit(t, c, client.SubmitRequest{Mode: "pdf-diff", TimeoutS: 120,
		Params: map[string]any{"a": site.URL + "/invoice/10", "b": site.URL + "/invoice/10"}})
	j = waitFinal(t, c, id, 90*time.Second)
	require.Equal(t, persistence.StatusSucceeded, j.Status, "%s: %s", j.Reason, j.Error)
	require.NoError(t, json.Unmarshal(j.Result, &r))
	assert.True(t, r.SameText)
	assert.Empty(t, r.OnlyInA)
}

func TestCustomModesPanicFailsAttemptWorkerKeepsServing(t *testing.T) {
	c, url, w := customHub(t, "./e2e/testdata/customworker", "custom-1")

	id := submit(t, c, client.SubmitRequest{Mode: "crash"})
	j := waitFinal(t, c, id, 90*time.Second)
	assert.Equal(t, persistence.StatusFailed, j.Status)
	assert.Equal(t, persistence.ReasonJobError, j.Reason)
	assert.Contains(t, j.Error, "handler panic: crash mode panics on purpose")
	assert.Contains(t, logsOf(t, url, id), "about to panic")

	for i := range 3 { // the same worker, still serving
		id = submit(t, c, client.SubmitRequest{Mode: "echo", Params: map[string]any{"n": i}})
		j = waitFinal(t, c, id, 90*time.Second)
		require.Equal(t, persistence.StatusSucceeded, j.Status, "%s: %s", j.Reason, j.Error)
		assert.JSONEq(t, fmt.Sprintf(`{"echo":{"n":%d},"worker":"custom-1"}`, i), string(j.Result))
	}
	select {
	case <-w.done:
		t.Fatal("the worker process exited after a handler panicked")
	default:
	}
}

func TestCustomModesDeadlineFencesLateResult(t *testing.T) {
	c, url, _ := customHub(t, "./e2e/testdata/customworker", "custom-2", "--lanes", "1", "--abandon-after", "300ms")
	marker := filepath.Join(t.TempDir(), "returned")
	id := submit(t, c, client.SubmitRequest{Mode: "stubborn", TimeoutS: 1,
		Params: map[string]any{"sleep_ms": 6000, "marker": marker}})
	// Queued behind the stubborn job on the one lane.
	next := submit(t, c, client.SubmitRequest{Mode: "echo", Params: map[string]any{"after": "stubborn"}})

	j := waitFinal(t, c, id, 90*time.Second)
	assert.Equal(t, persistence.StatusFailed, j.Status)
	assert.Equal(t, persistence.ReasonDeadlineExceeded, j.Reason)
	_, err := os.Stat(marker)
	assert.True(t, os.IsNotExist(err), "the attempt was reported only after the handler returned")

	// The lane stays taken until the handler returns: the next job starts
	// after that.
	n := waitFinal(t, c, next, 90*time.Second)
	require.Equal(t, persistence.StatusSucceeded, n.Status, "%s: %s", n.Reason, n.Error)
	raw, err := os.ReadFile(marker)
	require.NoError(t, err, "the stubborn handler never returned")
	ns, err := strconv.ParseInt(string(raw), 10, 64)
	require.NoError(t, err)
	returned := time.Unix(0, ns)
	assert.False(t, n.StartedAt.Before(returned.Add(-50*time.Millisecond)),
		"the next job started at %s, before the abandoned handler returned at %s", n.StartedAt, returned)

	// Its late result never lands: the job stays failed at its deadline.
	time.Sleep(time.Second)
	j, err = c.Get(context.Background(), id)
	require.NoError(t, err)
	assert.Equal(t, persistence.StatusFailed, j.Status)
	assert.Equal(t, persistence.ReasonDeadlineExceeded, j.Reason)
	assert.Empty(t, j.Result)
	logs := strings.Join(logsOf(t, url, id), "\n")
	assert.Contains(t, logs, "sleeping, deaf to cancellation")
	assert.NotContains(t, logs, "woke up")

	// The hub ended the stubborn job at its deadline, the worker reported
	// it 300 ms later and held its one lane 5 s more: the queued job was
	// offered to it only when a report could say the lane was free — the
	// deadline's end kept the slot until the worker's report, and a
	// rejection holds the capacity until the next one — not over and over
	// while the lane stayed busy.
	rejected := metric(t, url, "paprika_assignments_rejected_total")
	t.Logf("assignments rejected while the lane was held: %d", rejected)
	assert.LessOrEqual(t, rejected, int64(3), "the queued job was placed again and again on the busy lane")
}

// TestCustomModesUnservedModeWaitsVisibly: a job of a mode no alive worker
// declares queues and says what it waits for (require_capacity refuses it
// instead); once a worker declaring the mode links, the job runs there,
// and never on the worker that does not declare it.
func TestCustomModesUnservedModeWaitsVisibly(t *testing.T) {
	c, url, _ := customHub(t, "./examples/http-check", "http-check-w", "--lanes", "1")
	ctx := context.Background()

	_, err := c.Submit(ctx, client.SubmitRequest{Mode: "echo", Params: map[string]any{"n": 1}, RequireCapacity: true}, "")
	e, ok := client.AsAPIError(err)
	require.True(t, ok, "require_capacity for a mode nobody declares is refused: %v", err)
	assert.Equal(t, http.StatusServiceUnavailable, e.Status)
	assert.Equal(t, "no_capacity", e.Code)

	id := submit(t, c, client.SubmitRequest{Mode: "echo", Params: map[string]any{"n": 2}})
	j, err := c.Get(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, persistence.StatusQueued, j.Status)
	assert.Equal(t, "a worker declaring mode echo", j.WaitingFor)
	time.Sleep(500 * time.Millisecond) // the http-check worker has a free lane all along
	j, err = c.Get(ctx, id)
	require.NoError(t, err)
	require.Equal(t, persistence.StatusQueued, j.Status, "not placed on a worker that does not declare echo")

	startBinary(t, buildWorkerBinary(t, "./e2e/testdata/customworker"), "echo-w", nil, "--hub", url, "--id", "echo-w")
	j = waitFinal(t, c, id, 90*time.Second)
	require.Equal(t, persistence.StatusSucceeded, j.Status, "%s: %s", j.Reason, j.Error)
	assert.Equal(t, "echo-w", j.WorkerID)
	assert.Empty(t, j.WaitingFor)
}
