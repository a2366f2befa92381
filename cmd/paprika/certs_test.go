package main

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSecurityCertsCommand: ca then hub write the four files, the hub's
// for every host given; a second run keeps them unless --overwrite.
func TestSecurityCertsCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := runCLI(t, nil, "certs", "ca", "--dir", dir)
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Equal(t, filepath.Join(dir, "ca.crt")+"\n"+filepath.Join(dir, "ca.key")+"\n", r.stdout)
	r = runCLI(t, nil, "certs", "hub", "--dir", dir, "--host", "10.1.2.3,hub1.internal", "--host", "hub1")
	require.Equal(t, exitOK, r.code, r.stderr)
	b, err := os.ReadFile(filepath.Join(dir, "hub.crt"))
	require.NoError(t, err)
	blk, _ := pem.Decode(b)
	crt, err := x509.ParseCertificate(blk.Bytes)
	require.NoError(t, err)
	require.Equal(t, []string{"hub1.internal", "hub1"}, crt.DNSNames)
	require.Equal(t, "10.1.2.3", crt.IPAddresses[0].String())
	require.True(t, crt.NotBefore.Before(testNow) && crt.NotAfter.After(testNow), "valid at the CLI's clock")

	r = runCLI(t, nil, "certs", "hub", "--dir", dir, "--host", "hub1")
	require.Equal(t, exitFail, r.code)
	require.Equal(t, "paprika certs hub: "+filepath.Join(dir, "hub.crt")+": exists (pass --overwrite to replace it)\n", r.stderr)
	after, _ := os.ReadFile(filepath.Join(dir, "hub.crt"))
	require.Equal(t, b, after, "kept")
	r = runCLI(t, nil, "certs", "hub", "--dir", dir, "--host", "hub2", "--overwrite")
	require.Equal(t, exitOK, r.code, r.stderr)
}

func TestSecurityCertsCommandUsage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for args, want := range map[string]string{
		"certs":                            "paprika certs: missing subcommand (ca, hub)",
		"certs sign":                       `paprika certs: unknown subcommand "sign" (ca, hub)`,
		"certs ca":                         "paprika certs ca: flag -dir is required",
		"certs hub --dir " + dir:           "paprika certs hub: flag -host is required (the hub's cluster.host)",
		"certs ca --dir " + dir + " extra": `paprika certs ca: unexpected argument "extra"`,
		"certs ca --host h --dir " + dir:   "paprika certs ca: flag provided but not defined: -host",
	} {
		r := runCLI(t, nil, strings.Fields(args)...)
		require.Equal(t, exitUsage, r.code, args)
		require.Equal(t, want+" (see "+strings.SplitN(want, ":", 2)[0]+" -h)\n", r.stderr, args)
	}
	r := runCLI(t, nil, "certs", "hub", "--dir", dir, "--host", "h")
	require.Equal(t, exitFail, r.code)
	require.Contains(t, r.stderr, "paprika certs hub: load the CA in "+dir)
	r = runCLI(t, nil, "help", "certs")
	require.Equal(t, exitOK, r.code)
	require.Contains(t, r.stdout, "paprika certs hub --dir D --host H")
}

// TestSecurityHubRefusesNonLoopbackWithoutTLS: `paprika hub` on a cluster
// host other machines can reach, with no cluster TLS, stops before
// listening: one line naming the keys, exit status 2.
func TestSecurityHubRefusesNonLoopbackWithoutTLS(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(os.Args[0], "hub", "--listen", "127.0.0.1:0")
	cmd.Dir = t.TempDir() // no config.yaml
	cmd.Env = append(os.Environ(), envRunMain+"=1", "PAPRIKA_CLUSTER_HOST=10.1.2.3")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit), "%v", err)
	require.Equal(t, exitUsage, exit.ExitCode())
	require.Empty(t, stdout.String())
	require.Equal(t, 1, strings.Count(stderr.String(), "\n"), "one line: %q", stderr.String())
	require.Contains(t, stderr.String(), `paprika: invalid configuration: cluster.host: "10.1.2.3" is not a loopback address and cluster TLS is off: `+
		"set cluster.tls_ca, cluster.tls_cert and cluster.tls_key (paprika certs), or cluster.insecure: true")
}
