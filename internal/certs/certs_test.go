package certs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var now = time.Date(2026, 3, 4, 12, 0, 0, 0, time.UTC)

func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	blk, _ := pem.Decode(b)
	require.NotNil(t, blk)
	c, err := x509.ParseCertificate(blk.Bytes)
	require.NoError(t, err)
	return c
}

// TestSecurityCertsCASignsHub: the hub certificate chains to the CA for
// both uses, carries every host as the right kind of SAN, and both keys are
// P-256 and private to their owner.
func TestSecurityCertsCASignsHub(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, MakeCA(dir, false, now))
	require.NoError(t, MakeHub(dir, []string{"10.1.2.3,hub1.internal", "::1", "hub1.internal"}, false, now))

	ca := readCert(t, filepath.Join(dir, CACert))
	hub := readCert(t, filepath.Join(dir, HubCert))
	require.True(t, ca.IsCA)
	require.Equal(t, now.Add(CAValidity), ca.NotAfter)
	require.Equal(t, now.Add(HubValidity), hub.NotAfter)
	require.Equal(t, []string{"hub1.internal"}, hub.DNSNames)
	require.Len(t, hub.IPAddresses, 2)
	require.True(t, hub.IPAddresses[0].Equal(net.ParseIP("10.1.2.3")))
	require.True(t, hub.IPAddresses[1].Equal(net.ParseIP("::1")))
	require.ElementsMatch(t, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}, hub.ExtKeyUsage)
	pub, ok := hub.PublicKey.(*ecdsa.PublicKey)
	require.True(t, ok)
	require.Equal(t, elliptic.P256(), pub.Curve)

	pool := x509.NewCertPool()
	pool.AddCert(ca)
	at := now.Add(time.Hour)
	for _, use := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
		_, err := hub.Verify(x509.VerifyOptions{Roots: pool, CurrentTime: at, KeyUsages: []x509.ExtKeyUsage{use}, DNSName: "hub1.internal"})
		require.NoError(t, err, "usage %v", use)
	}
	_, err := hub.Verify(x509.VerifyOptions{Roots: pool, CurrentTime: at, DNSName: "10.1.2.3"})
	require.NoError(t, err, "an IP SAN")
	_, err = hub.Verify(x509.VerifyOptions{Roots: pool, CurrentTime: at, DNSName: "other.internal"})
	require.Error(t, err, "a host not given")

	// Another CA does not vouch for this hub.
	other := t.TempDir()
	require.NoError(t, MakeCA(other, false, now))
	opool := x509.NewCertPool()
	opool.AddCert(readCert(t, filepath.Join(other, CACert)))
	_, err = hub.Verify(x509.VerifyOptions{Roots: opool, CurrentTime: at})
	require.Error(t, err)

	for _, k := range []string{CAKey, HubKey} {
		st, err := os.Stat(filepath.Join(dir, k))
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), st.Mode().Perm(), k)
	}
	_, err = tls.LoadX509KeyPair(filepath.Join(dir, HubCert), filepath.Join(dir, HubKey))
	require.NoError(t, err, "the pair matches")
	c, err := Load(filepath.Join(dir, CACert), filepath.Join(dir, HubCert), filepath.Join(dir, HubKey))
	require.NoError(t, err)
	require.Equal(t, tls.RequireAndVerifyClientCert, c.Server.ClientAuth)
	require.Equal(t, uint16(tls.VersionTLS13), c.Server.MinVersion)
	require.Equal(t, uint16(tls.VersionTLS13), c.Client.MinVersion)
}

// TestSecurityCertsRefuseOverwrite: existing files stay unless overwrite,
// and an overwritten key is still 0600.
func TestSecurityCertsRefuseOverwrite(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, MakeCA(dir, false, now))
	before, err := os.ReadFile(filepath.Join(dir, CAKey))
	require.NoError(t, err)
	err = MakeCA(dir, false, now)
	require.True(t, errors.Is(err, ErrExists), "%v", err)
	after, _ := os.ReadFile(filepath.Join(dir, CAKey))
	require.Equal(t, before, after)

	require.NoError(t, MakeHub(dir, []string{"127.0.0.1"}, false, now))
	require.ErrorIs(t, MakeHub(dir, []string{"127.0.0.1"}, false, now), ErrExists)
	require.NoError(t, os.Chmod(filepath.Join(dir, HubKey), 0o644))
	require.NoError(t, MakeHub(dir, []string{"127.0.0.1"}, true, now))
	st, err := os.Stat(filepath.Join(dir, HubKey))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), st.Mode().Perm())
}

func TestSecurityCertsHubNeedsCAAndHost(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.ErrorContains(t, MakeHub(dir, []string{"a"}, false, now), "load the CA in "+dir)
	require.NoError(t, MakeCA(dir, false, now))
	require.ErrorContains(t, MakeHub(dir, []string{" , "}, false, now), "no host given")
	_, err := os.Stat(filepath.Join(dir, HubKey))
	require.True(t, os.IsNotExist(err), "nothing written")
}

func TestSecurityCertsLoadErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk.pem")
	require.NoError(t, os.WriteFile(junk, []byte("not pem"), 0o600))
	_, err := LoadPool(junk)
	require.ErrorContains(t, err, "holds no PEM certificate")
	_, err = Load(filepath.Join(dir, "missing"), junk, junk)
	require.Error(t, err)
}
