// Package certs makes and loads the certificates of cluster TLS: one
// cluster CA, and per hub a certificate it signed that serves the hub's
// cluster port and authenticates the hub when it dials a peer. Hubs trust
// only certificates from that CA, so a process that can reach a cluster
// port but holds no such certificate is refused in the handshake.
package certs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Validity of what Make* writes: the CA outlives many hub certificates, so
// rotating hubs never forces a new CA onto every hub at once.
const (
	CAValidity  = 10 * 365 * 24 * time.Hour
	HubValidity = 2 * 365 * 24 * time.Hour
)

// File names in a certificate directory (like cockroach's certs dir).
const (
	CACert  = "ca.crt"
	CAKey   = "ca.key"
	HubCert = "hub.crt"
	HubKey  = "hub.key"
)

// ErrExists is returned when a file to write exists and overwrite is off.
var ErrExists = errors.New("exists (pass --overwrite to replace it)")

// MakeCA writes dir/ca.crt and dir/ca.key: a self-signed ECDSA P-256 CA.
func MakeCA(dir string, overwrite bool, now time.Time) error {
	if err := writable(dir, overwrite, CACert, CAKey); err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{Organization: []string{"Paprika"}, CommonName: "Paprika cluster CA"},
		NotBefore:             now.Add(-time.Hour), // clock skew between hubs
		NotAfter:              now.Add(CAValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	return issue(dir, CACert, CAKey, tmpl, nil, nil)
}

// issue makes a fresh P-256 key, signs tmpl for it — by parent and
// parentKey, or by itself when parent is nil — and writes the pair.
func issue(dir, certName, keyName string, tmpl, parent *x509.Certificate, parentKey any) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		return err
	}
	return writePair(dir, certName, keyName, der, key)
}

// MakeHub writes dir/hub.crt and dir/hub.key, signed by dir/ca.crt and
// dir/ca.key. hosts become the certificate's SANs (IPs as IP SANs, names as
// DNS SANs); a peer checks the host it dialled (its cluster.host) against
// them. The certificate serves and dials: ExtKeyUsage ServerAuth and
// ClientAuth.
func MakeHub(dir string, hosts []string, overwrite bool, now time.Time) error {
	hosts = SplitHosts(hosts)
	if len(hosts) == 0 {
		return errors.New("no host given (--host, the hub's cluster.host)")
	}
	if err := writable(dir, overwrite, HubCert, HubKey); err != nil {
		return err
	}
	ca, err := tls.LoadX509KeyPair(filepath.Join(dir, CACert), filepath.Join(dir, CAKey))
	if err != nil {
		return fmt.Errorf("load the CA in %s (paprika certs ca --dir %s): %w", dir, dir, err)
	}
	caCert, err := x509.ParseCertificate(ca.Certificate[0])
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{Organization: []string{"Paprika"}, CommonName: hosts[0]},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(HubValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	return issue(dir, HubCert, HubKey, tmpl, caCert, ca.PrivateKey)
}

// SplitHosts flattens repeated and comma-separated host values, blanks and
// duplicates dropped, order kept.
func SplitHosts(values []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, v := range values {
		for _, h := range strings.Split(v, ",") {
			if h = strings.TrimSpace(h); h != "" && !seen[h] {
				seen[h] = true
				out = append(out, h)
			}
		}
	}
	return out
}

// Cluster holds the two sides of cluster TLS built from the CA and the
// hub's pair.
type Cluster struct {
	// Server is for the cluster port: it demands a client certificate from
	// the CA.
	Server *tls.Config
	// Client is for dialling peers: it presents the hub's certificate and
	// trusts only the CA.
	Client *tls.Config
}

// Load reads the CA certificate and the hub's pair (PEM files) into the
// server and client configurations of mutual TLS 1.3.
func Load(caFile, certFile, keyFile string) (*Cluster, error) {
	pool, err := LoadPool(caFile)
	if err != nil {
		return nil, err
	}
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, err
	}
	return &Cluster{
		Server: &tls.Config{
			Certificates: []tls.Certificate{pair},
			ClientAuth:   tls.RequireAndVerifyClientCert,
			ClientCAs:    pool,
			MinVersion:   tls.VersionTLS13,
		},
		Client: &tls.Config{
			Certificates: []tls.Certificate{pair},
			RootCAs:      pool,
			MinVersion:   tls.VersionTLS13,
		},
	}, nil
}

// LoadPool reads a PEM file holding at least one CA certificate.
func LoadPool(caFile string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s holds no PEM certificate", caFile)
	}
	return pool, nil
}

// writable fails when one of names exists in dir and overwrite is off,
// before anything is generated, so a refused run writes nothing.
func writable(dir string, overwrite bool, names ...string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if overwrite {
		return nil
	}
	for _, n := range names {
		p := filepath.Join(dir, n)
		if _, err := os.Lstat(p); err == nil {
			return fmt.Errorf("%s: %w", p, ErrExists)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

func writePair(dir, certName, keyName string, der []byte, key *ecdsa.PrivateKey) error {
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	// The key first: a certificate without its key is useless, a key
	// without its certificate is merely rewritten next time.
	if err := writeFile(filepath.Join(dir, keyName), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		return err
	}
	return writeFile(filepath.Join(dir, certName), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
}

// writeFile replaces path with data at mode. os.WriteFile keeps an existing
// file's mode, which would leave an overwritten key as readable as before.
func writeFile(path string, data []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return n
}
