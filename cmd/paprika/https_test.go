package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log"
	"net"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"fmt"
	"github.com/paprika-hub/paprika/agent"
	"github.com/paprika-hub/paprika/client"
	"github.com/paprika-hub/paprika/internal/certs"
	"github.com/paprika-hub/paprika/internal/syncbuf"
	"github.com/paprika-hub/paprika/persistence/storetest"
)

// TestSecurityCLIWithCAListsJobsOverHTTPS: against a hub serving a
// certificate from a private CA, `paprika jobs` works with --ca (or
// $PAPRIKA_CA), fails with a hint without it, and a bad --ca is a usage
// error.
func TestSecurityCLIWithCAListsJobsOverHTTPS(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, certs.MakeCA(dir, false, time.Now()))
	require.NoError(t, certs.MakeHub(dir, []string{"127.0.0.1"}, false, time.Now()))
	pair, err := tls.LoadX509KeyPair(filepath.Join(dir, certs.HubCert), filepath.Join(dir, certs.HubKey))
	require.NoError(t, err)
	h := &fakeHub{jobs: map[string]*client.Job{}, logs: map[string][]string{}, byKey: map[string]string{}}
	seedJobs(h)
	srv := httptest.NewUnstartedServer(h.routes())
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes below
	srv.StartTLS()
	t.Cleanup(srv.Close)
	require.True(t, strings.HasPrefix(srv.URL, "https://"))
	ca := filepath.Join(dir, certs.CACert)

	r := runCLI(t, nil, "jobs", "--hub", srv.URL, "--ca", ca)
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "j1  noop   succeeded")
	r = runCLI(t, map[string]string{envHub: srv.URL, envCA: ca}, "jobs", "ls")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "j2  fetch  running")

	r = runCLI(t, map[string]string{envHub: srv.URL}, "jobs")
	require.Equal(t, exitFail, r.code)
	require.Contains(t, r.stderr, "certificate signed by unknown authority")
	require.Contains(t, r.stderr, "hint: the hub's certificate is from a CA this machine does not trust: pass it with --ca or $PAPRIKA_CA")

	r = runCLI(t, nil, "jobs", "--hub", srv.URL, "--ca", filepath.Join(dir, certs.HubKey))
	require.Equal(t, exitUsage, r.code)
	require.Contains(t, r.stderr, "paprika jobs ls: flag -ca: "+filepath.Join(dir, certs.HubKey)+" holds no PEM certificate")
}

// TestSecurityWorkerRefusesTokenOverPlainHTTP: `paprika worker` with a
// token and an http:// hub on a non-loopback address exits 2 with one line
// and never connects; with --insecure it does connect.
func TestSecurityWorkerRefusesTokenOverPlainHTTP(t *testing.T) {
	t.Parallel()
	ip := agent.LanIP()
	if ip == nil || ip.IsLoopback() {
		storetest.Unavailable(t, "a non-loopback address to listen on", fmt.Errorf("LAN IP %v", ip))
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(ip.String(), "0"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	hubURL := "http://" + ln.Addr().String()
	accepted := make(chan struct{}, 8)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- struct{}{}
			_ = c.Close()
		}
	}()

	worker := func(extra ...string) *exec.Cmd {
		cmd := exec.Command(os.Args[0], append([]string{"worker", "--hub", hubURL, "--token", "w-secret", "--id", "wsec"}, extra...)...)
		cmd.Dir = t.TempDir()
		cmd.Env = append(os.Environ(), envRunMain+"=1")
		return cmd
	}
	cmd := worker()
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit), "%v", err)
	require.Equal(t, exitUsage, exit.ExitCode())
	require.Empty(t, stdout.String())
	require.Equal(t, 1, strings.Count(stderr.String(), "\n"), "one line: %q", stderr.String())
	require.Contains(t, stderr.String(), "paprika worker: worker config: hub: refusing to send the worker token in clear text to a non-loopback hub: "+hubURL)
	require.Contains(t, stderr.String(), "--insecure")
	select {
	case <-accepted:
		t.Fatal("the refused worker connected to the hub")
	case <-time.After(200 * time.Millisecond):
	}

	cmd = worker("--insecure")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	select {
	case <-accepted:
	case <-time.After(10 * time.Second):
		t.Fatal("the worker with --insecure never dialled the hub")
	}
}

// TestSecurityUpServesHTTPSToItsLocalWorkers: `paprika up` with
// hub.tls_cert serves https://, and its local workers, trusting that
// certificate with no --ca, link and run a job.
func TestSecurityUpServesHTTPSToItsLocalWorkers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, certs.MakeCA(dir, false, time.Now()))
	require.NoError(t, certs.MakeHub(dir, []string{"127.0.0.1"}, false, time.Now()))
	cmd := exec.Command(os.Args[0], "up", "--listen", "127.0.0.1:0", "--workers", "1", "--lanes", "1", "--log-level", "error")
	cmd.Dir = t.TempDir() // no config.yaml; the embedded stores live here
	cmd.Env = append(os.Environ(), envRunMain+"=1",
		"PAPRIKA_HUB_TLS_CERT="+filepath.Join(dir, certs.HubCert), "PAPRIKA_HUB_TLS_KEY="+filepath.Join(dir, certs.HubKey))
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	stderr := &syncbuf.Buffer{}
	cmd.Stderr = stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err, "stderr: %s", stderr.String())
	m := regexp.MustCompile(`API (https://127\.0\.0\.1:\d+) `).FindStringSubmatch(line)
	require.NotNil(t, m, line)

	pool, err := certs.LoadPool(filepath.Join(dir, certs.CACert))
	require.NoError(t, err)
	c, err := client.New([]string{m[1]}, client.WithRootCAs(pool))
	require.NoError(t, err)
	defer c.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	j, err := c.Submit(ctx, client.SubmitRequest{Mode: "noop"}, "")
	require.NoError(t, err)
	j, err = c.Wait(ctx, j.ID)
	require.NoError(t, err)
	require.Equal(t, client.StatusSucceeded, j.Status, "%s %s; stderr: %s", j.Reason, j.Error, stderr.String())
	require.Equal(t, "local-1", j.WorkerID)
	require.NoError(t, cmd.Process.Signal(os.Interrupt))
	require.NoError(t, cmd.Wait())
}
