package main

import (
	"fmt"
	"path/filepath"

	"github.com/paprika-hub/paprika/internal/certs"
)

const certsSynopsis = `paprika certs ca --dir D [--overwrite]
       paprika certs hub --dir D --host H [--host H2 | --host H,H2 ...] [--overwrite]`

const certsHelp = `Makes the certificates of cluster TLS (cluster.tls_ca, cluster.tls_cert,
cluster.tls_key): hubs accept on their cluster port, and dial, only peers
holding a certificate from the cluster CA.

  ca    writes D/ca.crt and D/ca.key: the cluster CA (ECDSA P-256, 10 years).
        Keep ca.key off the hubs.
  hub   writes D/hub.crt and D/hub.key, signed by D/ca.crt and D/ca.key, for
        the hosts given (IPs become IP SANs, names DNS SANs; include the
        hub's cluster.host, which its peers dial and check). Server and
        client use, 2 years. Run it once per hub.

Keys are written 0600; existing files are kept unless --overwrite.
`

// certs is `paprika certs ca|hub`: it writes files, talks to no hub.
func (c *cli) certs(args []string) int {
	if len(args) == 0 {
		return c.usageError("paprika certs", "missing subcommand (ca, hub)")
	}
	sub, rest, code := c.subcommand(args, certsSynopsis, certsHelp)
	if code >= 0 {
		return code
	}
	fs := newFlagSet("certs " + sub)
	dir := fs.String("dir", "", "certificate `directory` (required)")
	overwrite := fs.Bool("overwrite", false, "replace existing files")
	var hosts listFlag
	switch sub {
	case "ca":
	case "hub":
		fs.Var(&hosts, "host", "`host` the certificate names (the hub's cluster.host); an IP or a DNS name, repeated or comma-separated")
	default:
		return c.usageError("paprika certs", fmt.Sprintf("unknown subcommand %q (ca, hub)", sub))
	}
	pos, code := c.parseOrExit(fs, certsSynopsis, rest)
	if code >= 0 {
		return code
	}
	switch {
	case len(pos) > 0:
		return c.usageError(fs.Name(), fmt.Sprintf("unexpected argument %q", pos[0]))
	case *dir == "":
		return c.usageError(fs.Name(), "flag -dir is required")
	case sub == "hub" && len(hosts) == 0:
		return c.usageError(fs.Name(), "flag -host is required (the hub's cluster.host)")
	}
	var err error
	var wrote []string
	if sub == "ca" {
		err = certs.MakeCA(*dir, *overwrite, c.now())
		wrote = []string{certs.CACert, certs.CAKey}
	} else {
		err = certs.MakeHub(*dir, hosts, *overwrite, c.now())
		wrote = []string{certs.HubCert, certs.HubKey}
	}
	if err != nil {
		fmt.Fprintf(c.stderr, "%s: %v\n", fs.Name(), err)
		return exitFail
	}
	for _, n := range wrote {
		fmt.Fprintln(c.stdout, filepath.Join(*dir, n))
	}
	return exitOK
}
