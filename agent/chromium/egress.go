package chromium

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"
)

// Environment variables that add to the egress policy of every Driver of
// the process (comma-separated CIDRs, e.g. "10.0.0.0/8,127.0.0.0/8"). They
// exist so an operator can tighten a worker without a flag: `paprika
// worker` builds its Config itself.
const (
	EnvEgressDeny  = "PAPRIKA_BROWSER_EGRESS_DENY"
	EnvEgressAllow = "PAPRIKA_BROWSER_EGRESS_ALLOW"
)

// DefaultEgressLookupTimeout bounds the DNS lookup of one host checked
// against the egress policy.
const DefaultEgressLookupTimeout = 5 * time.Second

// egressRule is one prefix of the policy and what it decides.
type egressRule struct {
	prefix netip.Prefix
	allow  bool
	why    string // named in the error: "link-local", "cloud metadata", "EgressDeny"
}

// defaultEgressDeny is what a job's browser may never reach unless an
// allow rule names it: the link-local ranges, where the cloud metadata
// services answer (instance credentials for whoever asks), and those
// services' own addresses, listed apart so that allowing link-local
// still keeps them out. Loopback and private ranges are allowed by
// default, since a worker often browses an intranet or a test site on
// localhost; EgressDeny or $PAPRIKA_BROWSER_EGRESS_DENY closes them.
var defaultEgressDeny = []egressRule{
	{prefix: netip.MustParsePrefix("169.254.0.0/16"), why: "link-local"},
	{prefix: netip.MustParsePrefix("fe80::/10"), why: "link-local"},
	{prefix: netip.MustParsePrefix("169.254.169.254/32"), why: "cloud metadata"},
	{prefix: netip.MustParsePrefix("fd00:ec2::254/128"), why: "cloud metadata"},
	{prefix: netip.MustParsePrefix("100.100.100.200/32"), why: "cloud metadata"},
}

// deniedNames are host names refused before any lookup: metadata
// services' names, which may resolve differently for Chromium than for
// the worker (search domains, /etc/hosts of a container).
var deniedNames = map[string]bool{"metadata.google.internal": true, "metadata.goog": true}

// lookupFunc resolves a host name to its addresses.
type lookupFunc func(ctx context.Context, host string) ([]netip.Addr, error)

// egressPolicy decides which hosts a job's browser may connect to, by
// their resolved addresses. Safe for concurrent use; fixed after
// newEgressPolicy.
type egressPolicy struct {
	rules   []egressRule
	lookup  lookupFunc
	timeout time.Duration
}

// EgressError is the error of a URL the egress policy refuses.
type EgressError struct {
	URL  string
	Host string
	Addr netip.Addr // the denied address; invalid when the name itself, or its lookup, was refused
	Rule string     // the prefix and why, or the cause
}

func (e *EgressError) Error() string {
	switch {
	case !e.Addr.IsValid():
		return fmt.Sprintf("egress policy denies %s (%s)", e.Host, e.Rule)
	case e.Addr.String() == e.Host:
		return fmt.Sprintf("egress policy denies %s (%s)", e.Host, e.Rule)
	}
	return fmt.Sprintf("egress policy denies %s: it resolves to %s (%s)", e.Host, e.Addr, e.Rule)
}

// newEgressPolicy builds the policy: the defaults, then deny and allow
// (each "CIDR" or a bare address), then the environment's lists.
func newEgressPolicy(deny, allow []netip.Prefix, getenv func(string) string, lookup lookupFunc) (*egressPolicy, error) {
	p := &egressPolicy{rules: append([]egressRule(nil), defaultEgressDeny...), lookup: lookup, timeout: DefaultEgressLookupTimeout}
	if p.lookup == nil {
		p.lookup = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
	}
	add := func(prefixes []netip.Prefix, isAllow bool, why string) error {
		for _, pr := range prefixes {
			if !pr.IsValid() {
				return fmt.Errorf("%s: invalid prefix %v", why, pr)
			}
			p.rules = append(p.rules, egressRule{prefix: pr.Masked(), allow: isAllow, why: why})
		}
		return nil
	}
	var errs []error
	errs = append(errs, add(deny, false, "EgressDeny"), add(allow, true, "EgressAllow"))
	for _, env := range []struct {
		name  string
		allow bool
	}{{EnvEgressDeny, false}, {EnvEgressAllow, true}} {
		prefixes, err := parsePrefixes(getenv(env.name))
		if err == nil {
			err = add(prefixes, env.allow, "$"+env.name)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("$%s: %w", env.name, err))
		}
	}
	return p, errors.Join(errs...)
}

// parsePrefixes parses a comma-separated list of CIDRs or bare addresses.
func parsePrefixes(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for f := range strings.SplitSeq(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if !strings.Contains(f, "/") {
			a, err := netip.ParseAddr(f)
			if err != nil {
				return nil, fmt.Errorf("%q is not a CIDR or an address", f)
			}
			out = append(out, netip.PrefixFrom(a, a.BitLen()))
			continue
		}
		pr, err := netip.ParsePrefix(f)
		if err != nil {
			return nil, fmt.Errorf("%q is not a CIDR or an address", f)
		}
		out = append(out, pr)
	}
	return out, nil
}

// decide reports whether a may be reached and, when not, the rule. The
// longest matching prefix decides, so "deny 10.0.0.0/8, allow 10.1.0.0/16"
// means what it says; on a tie allow wins, so an operator can reopen a
// default exactly (allow 169.254.169.254/32 where the metadata service is
// wanted). No match: allowed.
func (p *egressPolicy) decide(a netip.Addr) (bool, string) {
	a = a.Unmap().WithZone("")
	if a.IsUnspecified() {
		// Connecting to 0.0.0.0 or :: reaches this host: judge it as loopback.
		if a.Is4() {
			a = netip.AddrFrom4([4]byte{127, 0, 0, 1})
		} else {
			a = netip.IPv6Loopback()
		}
	}
	best, allowed, why := -1, true, ""
	for _, r := range p.rules {
		if !r.prefix.Contains(a) {
			continue
		}
		if b := r.prefix.Bits(); b > best || (b == best && r.allow) {
			best, allowed, why = b, r.allow, r.prefix.String()+" "+r.why
		}
	}
	return allowed, why
}

// check returns an *EgressError when raw may not be fetched. URLs with no
// host (data:, about:blank, blob:) do not reach the network and pass. A
// host that does not resolve is refused: the policy cannot vouch for it,
// and Chromium would fail it anyway.
func (p *egressPolicy) check(ctx context.Context, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return nil
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	deny := func(a netip.Addr, rule string) error { return &EgressError{URL: raw, Host: host, Addr: a, Rule: rule} }
	if deniedNames[host] {
		return deny(netip.Addr{}, "a cloud metadata name")
	}
	addrs, err := p.resolve(ctx, host)
	if err != nil {
		return deny(netip.Addr{}, "lookup failed: "+err.Error())
	}
	for _, a := range addrs {
		if ok, why := p.decide(a); !ok {
			return deny(a, why)
		}
	}
	return nil
}

// resolve returns host's addresses: an IP literal itself, else every
// address the resolver gives (each is checked: Chromium may use any).
func (p *egressPolicy) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{a}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	addrs, err := p.lookup(ctx, host)
	if err == nil && len(addrs) == 0 {
		err = errors.New("no addresses")
	}
	return addrs, err
}

// egressCache remembers a tab's or a guard's decisions by host, so that a
// page's hundred subresources from one host cost one lookup. A tab lives
// for one job or session; a guard's cache, for a session of hours, so
// decisions are forgotten after egressCacheTTL (a name's addresses
// change) and the whole cache once it holds egressCacheHosts hosts.
type egressCache struct {
	mu  sync.Mutex
	m   map[string]egressDecision
	now func() time.Time // time.Now unless a test sets it
}

// egressDecision is one host's decision: nil or an *EgressError.
type egressDecision struct {
	err error
	at  time.Time
}

const (
	egressCacheTTL   = time.Minute
	egressCacheHosts = 4096
)

func (c *egressCache) clock() time.Time {
	if c.now != nil {
		return c.now()
	}
	return time.Now()
}

// check is p.check, remembered per host for decisions that did not come
// from a failed or cut-short lookup.
func (c *egressCache) check(ctx context.Context, p *egressPolicy, raw string) error {
	if known, err := c.known(raw); known {
		return err
	}
	u, _ := url.Parse(raw) // known parsed it
	key := strings.ToLower(u.Hostname())
	err := p.check(ctx, raw)
	var ee *EgressError
	if err == nil || (errors.As(err, &ee) && ee.Addr.IsValid()) {
		c.mu.Lock()
		if c.m == nil || len(c.m) >= egressCacheHosts {
			c.m = map[string]egressDecision{}
		}
		c.m[key] = egressDecision{err: err, at: c.clock()}
		c.mu.Unlock()
	}
	return err
}

// known is the decision for raw when it needs no lookup: a URL without a
// host (it never reaches the network), or a host decided lately. A guard
// answers those at once and leaves only lookups to its workers.
func (c *egressCache) known(raw string) (bool, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return true, nil
	}
	c.mu.Lock()
	d, ok := c.m[strings.ToLower(u.Hostname())]
	c.mu.Unlock()
	switch {
	case !ok || c.clock().Sub(d.at) >= egressCacheTTL:
		return false, nil
	case d.err == nil:
		return true, nil
	}
	e := *d.err.(*EgressError)
	e.URL = raw
	return true, &e
}

// envOr is os.Getenv unless the test gave its own.
func envOr(getenv func(string) string) func(string) string {
	if getenv == nil {
		return os.Getenv
	}
	return getenv
}
