package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/client"
	"github.com/paprika-hub/paprika/internal/syncbuf"
)

// binary is built with -race; clusterBinary without it, because several
// protoactor members talking to each other trip an upstream data race
// (remote.BlockList is read without its lock while gossip updates it —
// blocklist.go BlockedMembers vs Block), which would make every multi-hub
// process exit 66 under the detector. Our own code is still raced by the
// single-hub tests and by `go test -race ./...`.
var binary, clusterBinary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "paprika-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "paprika")
	clusterBinary = filepath.Join(dir, "paprika-norace")
	for _, b := range []struct {
		out  string
		args []string
	}{{binary, []string{"-race"}}, {clusterBinary, nil}} {
		args := append(append([]string{"build"}, b.args...), "-o", b.out, "../cmd/paprika")
		build := exec.Command("go", args...)
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "build paprika:", err)
			os.Exit(1)
		}
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// proc is one paprika process of a test.
type proc struct {
	t    testing.TB
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	seq  int64
}

var procSeq atomic.Int64

func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func start(t testing.TB, name string, env []string, args ...string) *proc {
	t.Helper()
	return startBinary(t, binary, name, env, args...)
}

func startBinary(t testing.TB, bin, name string, env []string, args ...string) *proc {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), name+".log")
	f, err := os.Create(logPath)
	require.NoError(t, err)
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Dir = t.TempDir()
	require.NoError(t, cmd.Start())
	p := &proc{t: t, name: name, cmd: cmd, log: logPath, done: make(chan struct{}), seq: procSeq.Add(1)}
	go func() { _ = cmd.Wait(); f.Close(); close(p.done) }()
	t.Cleanup(func() {
		p.kill()
		if t.Failed() || os.Getenv("PAPRIKA_E2E_KEEP_ALL") != "" {
			b, _ := os.ReadFile(logPath)
			if dir := os.Getenv("PAPRIKA_E2E_KEEP_LOGS"); dir != "" {
				_ = os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s-%s-%d.log", strings.ReplaceAll(t.Name(), "/", "_"), name, p.seq)), b, 0o644)
			}
			if i := strings.Index(string(b), "WARNING: DATA RACE"); i >= 0 {
				race := string(b[i:])
				if len(race) > 6000 {
					race = race[:6000]
				}
				t.Logf("---- data race in %s ----\n%s", name, race)
			}
			t.Logf("---- last lines of %s ----\n%s", name, syncbuf.LastLines(string(b), 60))
		}
	})
	return p
}

// kill sends SIGKILL: no goodbye, no flush.
func (p *proc) kill() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// stop sends SIGTERM and waits for a clean exit.
func (p *proc) stop(within time.Duration) int {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return p.cmd.ProcessState.ExitCode()
	case <-time.After(within):
		p.t.Errorf("%s did not stop within %s", p.name, within)
		p.kill()
		return -1
	}
}

// hubEnv is the embedded-store hub config of a test, with short recovery
// intervals so a test sees them act.
func hubEnv(dataDir string, port int, extra ...string) []string {
	return append([]string{
		"PAPRIKA_HUB_LISTEN=127.0.0.1:" + strconv.Itoa(port),
		"PAPRIKA_ASSETS_DIR=" + filepath.Join(dataDir, "assets"),
		"PAPRIKA_RECONCILER_INTERVAL=500ms",
		"PAPRIKA_RECONCILER_ORPHAN_GRACE=3s",
		"PAPRIKA_REDRIVE_INTERVAL=500ms",
		"PAPRIKA_REDRIVE_MIN_AGE=2s",
	}, extra...)
}

func startHub(t testing.TB, dataDir string, port int, extra ...string) (*proc, string) {
	p := start(t, "hub", hubEnv(dataDir, port, extra...), "hub")
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	waitReady(t, url)
	return p, url
}

func waitReady(t testing.TB, url string) {
	t.Helper()
	require.Eventually(t, func() bool {
		res, err := http.Get(url + "/readyz")
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK
	}, 30*time.Second, 50*time.Millisecond, "hub at %s never ready", url)
}

func startWorker(t testing.TB, hubURL, id string, lanes int, execLog string) *proc {
	return start(t, "worker-"+id, nil, "worker", "--hub", hubURL, "--id", id, "--lanes", strconv.Itoa(lanes), "--exec-log", execLog)
}

func waitWorkers(t testing.TB, c *client.Client, n int) {
	t.Helper()
	require.Eventually(t, func() bool {
		ws, err := c.Workers(context.Background())
		if err != nil {
			return false
		}
		alive := 0
		for _, w := range ws {
			if w.Alive {
				alive++
			}
		}
		return alive >= n
	}, 30*time.Second, 50*time.Millisecond, "%d workers never alive", n)
}

// execution is one line pair of a worker's exec log.
type execution struct {
	worker, job string
	attempt     int
	start, end  time.Time
}

// readExecs parses exec logs ("start|end worker job attempt unixnano").
func readExecs(t testing.TB, paths ...string) []execution {
	t.Helper()
	var out []execution
	open := map[string]int{}
	for _, path := range paths {
		f, err := os.Open(path)
		if os.IsNotExist(err) {
			continue
		}
		require.NoError(t, err)
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			parts := strings.Fields(sc.Text())
			require.Len(t, parts, 5, "exec log line %q", sc.Text())
			att, _ := strconv.Atoi(parts[3])
			ns, _ := strconv.ParseInt(parts[4], 10, 64)
			key := parts[1] + " " + parts[2] + " " + parts[3]
			switch parts[0] {
			case "start":
				open[key] = len(out)
				out = append(out, execution{worker: parts[1], job: parts[2], attempt: att, start: time.Unix(0, ns)})
			case "end":
				if i, ok := open[key]; ok {
					out[i].end = time.Unix(0, ns)
				}
			}
		}
		f.Close()
	}
	return out
}

// maxConcurrent is the most executions of one worker that overlapped.
func maxConcurrent(execs []execution, worker string) int {
	type ev struct {
		at    time.Time
		delta int
	}
	var evs []ev
	for _, e := range execs {
		if e.worker != worker {
			continue
		}
		end := e.end
		if end.IsZero() {
			end = time.Now()
		}
		evs = append(evs, ev{e.start, 1}, ev{end, -1})
	}
	// ends before starts at the same instant
	for i := 1; i < len(evs); i++ {
		for j := i; j > 0 && (evs[j].at.Before(evs[j-1].at) || evs[j].at.Equal(evs[j-1].at) && evs[j].delta < evs[j-1].delta); j-- {
			evs[j], evs[j-1] = evs[j-1], evs[j]
		}
	}
	cur, best := 0, 0
	for _, e := range evs {
		cur += e.delta
		best = max(best, cur)
	}
	return best
}

func logsOf(t testing.TB, url, id string) []string {
	res, err := http.Get(url + "/jobs/" + id + "/logs")
	require.NoError(t, err)
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	s := strings.TrimSuffix(string(b), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func waitAllFinal(t testing.TB, c *client.Client, ids []string, within time.Duration) map[string]client.Job {
	t.Helper()
	final := map[string]client.Job{}
	deadline := time.Now().Add(within)
	for _, id := range ids {
		for {
			j, err := c.Get(context.Background(), id)
			if err == nil && j.Status.Final() {
				final[id] = j
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("job %s not final after %s (status %q, err %v)", id, within, j.Status, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return final
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
