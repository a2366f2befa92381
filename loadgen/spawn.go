package loadgen

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Defaults of SpawnOptions.
const (
	DefaultSpawnReadyTimeout = 30 * time.Second // SpawnOptions.ReadyTimeout
	DefaultSpawnStopTimeout  = 30 * time.Second // the usual timeout of Stop
)

// SpawnOptions describe a hub started as a child process.
type SpawnOptions struct {
	// Binary is the paprika executable (usually os.Executable()).
	Binary string
	// Args are extra arguments after `hub --listen ADDR`.
	Args []string
	// Env is the child's environment; nil means os.Environ(). PAPRIKA_*
	// variables (PAPRIKA_REDIS_URL, …) pass through to the hub. When it
	// names no PAPRIKA_ASSETS_DIR, the hub's embedded stores go to a fresh
	// temporary directory, removed by Stop.
	Env []string
	// ReadyTimeout bounds the wait for /healthz. Default
	// DefaultSpawnReadyTimeout.
	ReadyTimeout time.Duration
	// LogDir holds the hub's log file. Default os.TempDir().
	LogDir string
}

// SpawnedHub is a hub running as a child process. Stop ends it.
type SpawnedHub struct {
	// URL is the hub's base URL; PID its process id; LogPath the file that
	// holds its stdout and stderr (removed by a clean Stop, kept when the
	// hub failed).
	URL     string
	PID     int
	LogPath string

	cmd     *exec.Cmd
	dataDir string // "" when the caller chose the assets dir
	logFile *os.File
	keepLog bool          // set by KeepLog before Stop
	exited  chan struct{} // closed by the wait goroutine
	waitErr error         // set before exited is closed
	once    sync.Once
	stopErr error
}

// SpawnHub starts `Binary hub --listen 127.0.0.1:<free port>` and waits
// until it answers /healthz. Its stdout and stderr go to a log file.
func SpawnHub(ctx context.Context, o SpawnOptions) (*SpawnedHub, error) {
	if o.Binary == "" {
		return nil, errors.New("spawn hub: no binary")
	}
	if o.ReadyTimeout == 0 {
		o.ReadyTimeout = DefaultSpawnReadyTimeout
	}
	env := o.Env
	if env == nil {
		env = os.Environ()
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	h := &SpawnedHub{URL: "http://" + addr, exited: make(chan struct{})}
	if !hasEnv(env, "PAPRIKA_ASSETS_DIR") {
		if h.dataDir, err = os.MkdirTemp("", "paprika-bench-hub-*"); err != nil {
			return nil, fmt.Errorf("spawn hub: data dir: %w", err)
		}
		env = append(env, "PAPRIKA_ASSETS_DIR="+filepath.Join(h.dataDir, "assets"))
	}
	// A bench streams far more lines per job than any job would, from one
	// address: the per-job log bounds and the per-address caps would cut
	// the very load it measures. The caller's env still wins.
	for _, kv := range benchUnbounded {
		if k, _, _ := strings.Cut(kv, "="); !hasEnv(env, k) {
			env = append(env, kv)
		}
	}
	if h.logFile, err = os.CreateTemp(o.LogDir, "paprika-bench-hub-*.log"); err != nil {
		h.removeData()
		return nil, fmt.Errorf("spawn hub: log file: %w", err)
	}
	h.LogPath = h.logFile.Name()
	args := append([]string{"hub", "--listen", addr}, o.Args...)
	h.cmd = exec.Command(o.Binary, args...)
	h.cmd.Env = env
	h.cmd.Stdout, h.cmd.Stderr = h.logFile, h.logFile
	h.cmd.SysProcAttr = childProcAttr()
	if err := h.cmd.Start(); err != nil {
		_ = h.logFile.Close()
		h.removeData()
		return nil, fmt.Errorf("spawn hub %s: %w", o.Binary, err)
	}
	h.PID = h.cmd.Process.Pid
	go func() { // owned by h: ends when the child exits, which Stop ensures
		h.waitErr = h.cmd.Wait()
		close(h.exited)
	}()
	if err := h.waitReady(ctx, o.ReadyTimeout); err != nil {
		h.keepLog = true // the error names it
		_ = h.Stop(5 * time.Second)
		return nil, err
	}
	return h, nil
}

// waitReady polls /healthz until it answers 200, the child exits, or the
// timeout passes.
func (h *SpawnedHub) waitReady(ctx context.Context, timeout time.Duration) error {
	hc := &http.Client{Timeout: time.Second, Transport: &http.Transport{Proxy: nil}}
	defer hc.CloseIdleConnections()
	deadline := time.Now().Add(timeout)
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		res, err := hc.Get(h.URL + "/healthz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-h.exited:
			return fmt.Errorf("spawned hub exited at start (%v): %s", h.waitErr, h.logTail())
		case <-ctx.Done():
			return fmt.Errorf("wait for the spawned hub: %w", ctx.Err())
		case <-t.C:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("spawned hub not healthy at %s within %s: %s", h.URL, timeout, h.logTail())
		}
	}
}

// Stop sends SIGTERM, waits up to timeout for a clean exit (then SIGKILL),
// and removes the temporary data directory. Safe to call twice. A hub that
// exits with an error status is reported, and its log is kept.
func (h *SpawnedHub) Stop(timeout time.Duration) error {
	h.once.Do(func() {
		if timeout <= 0 {
			timeout = DefaultSpawnStopTimeout
		}
		_ = h.cmd.Process.Signal(syscall.SIGTERM)
		t := time.NewTimer(timeout)
		defer t.Stop()
		select {
		case <-h.exited:
			if h.waitErr != nil {
				h.stopErr = fmt.Errorf("spawned hub exited: %w (log: %s)", h.waitErr, h.LogPath)
			}
		case <-t.C:
			_ = h.cmd.Process.Kill()
			<-h.exited
			h.stopErr = fmt.Errorf("spawned hub did not stop within %s of SIGTERM; killed (log: %s)", timeout, h.LogPath)
		}
		_ = h.logFile.Close()
		if h.stopErr == nil && !h.keepLog {
			_ = os.Remove(h.LogPath)
		}
		h.removeData()
	})
	return h.stopErr
}

// KeepLog keeps the hub's log file after Stop (call it when the run went
// wrong, so the log is there to read).
func (h *SpawnedHub) KeepLog() { h.keepLog = true }

func (h *SpawnedHub) removeData() {
	if h.dataDir != "" {
		_ = os.RemoveAll(h.dataDir)
	}
}

// logTail is the end of the hub's log, for an error message.
func (h *SpawnedHub) logTail() string {
	b, err := os.ReadFile(h.LogPath)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	b = bytes.TrimSpace(b)
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	if len(b) == 0 {
		return "(empty log)"
	}
	return "log " + h.LogPath + ":\n" + string(b)
}

// freeAddr asks the kernel for a free loopback port. It is free again the
// moment the probe closes, so another process could take it first; the
// hub then fails to listen and SpawnHub reports it.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find a free port: %w", err)
	}
	defer ln.Close()
	return "127.0.0.1:" + strconv.Itoa(ln.Addr().(*net.TCPAddr).Port), nil
}

func hasEnv(env []string, key string) bool {
	for _, kv := range env {
		if strings.HasPrefix(kv, key+"=") {
			return true
		}
	}
	return false
}

// benchUnbounded lifts the limits a bench's own load would hit.
var benchUnbounded = []string{"PAPRIKA_LIMITS_MAX_LOG_LINES=0", "PAPRIKA_LIMITS_MAX_LOG_BYTES=0",
	"PAPRIKA_LIMITS_MAX_CONNS_PER_IP=0", "PAPRIKA_LIMITS_API_RATE=0"}
