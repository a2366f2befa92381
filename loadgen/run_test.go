package loadgen_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/config"
	"github.com/paprika-hub/paprika/hub"
	"github.com/paprika-hub/paprika/internal/syncbuf"
	"github.com/paprika-hub/paprika/loadgen"
)

// startHub runs a hub on embedded stores in this process.
func startHub(t *testing.T) *hub.Hub {
	t.Helper()
	cfg := config.Default()
	require.NoError(t, cfg.Set("hub.listen", "127.0.0.1:0"))
	require.NoError(t, cfg.Set("assets.dir", filepath.Join(t.TempDir(), "assets")))
	// As a spawned bench hub: a flat-out run streams more lines per job
	// than the per-job log bound.
	require.NoError(t, cfg.Set("limits.max_log_lines", "0"))
	require.NoError(t, cfg.Set("limits.max_log_bytes", "0"))
	h, err := hub.New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	require.NoError(t, h.Start(context.Background()))
	t.Cleanup(func() { _ = h.Stop(context.Background()) })
	return h
}

// TestRunAgainstInProcessHub runs a small bench against a real hub and
// checks the accounting: every line sent is stored, every job succeeds, the
// followers measured latencies. It asserts no speed: targets are measured
// by `paprika bench`, never by a timed test.
func TestRunAgainstInProcessHub(t *testing.T) {
	h := startHub(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var progress syncbuf.Buffer
	rep, err := loadgen.Run(ctx, loadgen.Options{
		HubURL:    h.URL(),
		HubPID:    os.Getpid(),
		Workers:   5,
		Rate:      200,
		Duration:  2 * time.Second,
		Warmup:    500 * time.Millisecond,
		Followers: 2,
		LineBytes: 80,
		// Progress on, to run the monitor alongside everything else.
		Progress: &progress, ProgressEvery: 500 * time.Millisecond,
	})
	require.NoError(t, err)
	t.Logf("report:\n%s", text(t, &rep))

	require.Equal(t, 5, rep.Jobs.Submitted)
	require.Equal(t, 5, rep.Jobs.Started)
	require.Equal(t, 5, rep.Jobs.Acked)
	require.Equal(t, 5, rep.Jobs.Succeeded, "every job succeeds")
	require.Zero(t, rep.Jobs.Lost)

	require.Positive(t, rep.Lines.TotalSent)
	require.Equal(t, rep.Lines.TotalSent, rep.Lines.TotalIngested, "every line sent was stored")
	require.Zero(t, rep.Lines.Missing)
	require.Positive(t, rep.Lines.WindowSent)
	require.Positive(t, rep.Lines.WindowIngested)
	require.Positive(t, rep.Lines.LogWrites)
	require.InDelta(t, 2.0, rep.Window.Seconds(), 0.5)

	require.Positive(t, rep.Latency.Samples, "followers saw lines")
	require.Positive(t, rep.Latency.P50)
	require.GreaterOrEqual(t, rep.Latency.P99, rep.Latency.P50)
	require.GreaterOrEqual(t, rep.Latency.Max, rep.Latency.P99)

	require.NotNil(t, rep.Hub)
	require.True(t, rep.Hub.InProcess)
	require.Positive(t, rep.Hub.RSSMax)
	require.Nil(t, rep.Loadgen, "the load generator is the hub's process here")
	require.Nil(t, rep.Redis)
	require.True(t, rep.OK())
	require.Contains(t, progress.String(), "ingested", "progress lines were written")
}

// TestRunFlatOut checks that a flat-out run ends its jobs at the window's
// end and still stores every line.
func TestRunFlatOut(t *testing.T) {
	h := startHub(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rep, err := loadgen.Run(ctx, loadgen.Options{
		HubURL: h.URL(), Workers: 3, Lanes: 2, FlatOut: true,
		Duration: time.Second, Warmup: -1, Followers: -1,
	})
	require.NoError(t, err)
	require.Equal(t, 6, rep.Jobs.Succeeded)
	require.Positive(t, rep.Lines.TotalSent)
	require.Equal(t, rep.Lines.TotalSent, rep.Lines.TotalIngested)
	require.Zero(t, rep.Latency.Samples)
	require.Nil(t, rep.Hub, "no pid, no process figures")
}

func TestRunHubDown(t *testing.T) {
	t.Parallel()
	_, err := loadgen.Run(context.Background(), loadgen.Options{HubURL: "http://127.0.0.1:1", Workers: 1})
	require.ErrorContains(t, err, "not reachable")
}

func TestRunBadOptions(t *testing.T) {
	t.Parallel()
	_, err := loadgen.Run(context.Background(), loadgen.Options{HubURL: "ftp://x", Rate: -1, LineBytes: -3})
	require.ErrorContains(t, err, "hub URL")
	require.ErrorContains(t, err, "rate")
	require.ErrorContains(t, err, "line bytes")
}

func text(t *testing.T, r *loadgen.Report) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "report.txt")
	w, err := os.Create(f)
	require.NoError(t, err)
	require.NoError(t, r.WriteText(w))
	require.NoError(t, w.Close())
	b, err := os.ReadFile(f)
	require.NoError(t, err)
	return string(b)
}
