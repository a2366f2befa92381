package chromium

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/agent"
	"github.com/paprika-hub/paprika/persistence/storetest"
)

// fakeLookup resolves the names of the tests; the rest fail like NXDOMAIN.
func fakeLookup(calls *atomic.Int32) lookupFunc {
	names := map[string][]string{
		"metadata.test": {"169.254.169.254"},
		"dual.test":     {"93.184.216.34", "fe80::1"},
		"ok.test":       {"93.184.216.34", "2606:2800:220:1::1"},
	}
	return func(ctx context.Context, host string) ([]netip.Addr, error) {
		if calls != nil {
			calls.Add(1)
		}
		var out []netip.Addr
		for _, a := range names[host] {
			out = append(out, netip.MustParseAddr(a))
		}
		if out == nil {
			return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
		}
		return out, nil
	}
}

func noEnv(string) string { return "" }

func TestSecurityEgressPolicyDefaults(t *testing.T) {
	t.Parallel()
	p, err := newEgressPolicy(nil, nil, noEnv, nil)
	require.NoError(t, err)
	for addr, allowed := range map[string]bool{
		"169.254.169.254":        false,
		"169.254.1.1":            false,
		"fe80::1":                false,
		"fe80::1%eth0":           false,
		"fd00:ec2::254":          false,
		"100.100.100.200":        false,
		"::ffff:169.254.169.254": false, // IPv4-mapped is the same address
		"127.0.0.1":              true,
		"::1":                    true,
		"0.0.0.0":                true, // judged as loopback
		"10.1.2.3":               true,
		"192.168.0.1":            true,
		"fd12::1":                true,
		"93.184.216.34":          true,
	} {
		ok, why := p.decide(netip.MustParseAddr(addr))
		assert.Equal(t, allowed, ok, "%s (%s)", addr, why)
	}
	_, why := p.decide(netip.MustParseAddr("169.254.169.254"))
	assert.Equal(t, "169.254.169.254/32 cloud metadata", why)
}

func TestSecurityEgressPolicyConfig(t *testing.T) {
	t.Parallel()
	env := map[string]string{
		EnvEgressDeny:  "10.0.0.0/8, 127.0.0.0/8,::1",
		EnvEgressAllow: "169.254.169.254",
	}
	p, err := newEgressPolicy(nil, []netip.Prefix{netip.MustParsePrefix("10.1.0.0/16")}, func(k string) string { return env[k] }, nil)
	require.NoError(t, err)
	for addr, allowed := range map[string]bool{
		"10.2.0.1":        false,
		"10.1.2.3":        true, // the longer allow prefix wins
		"127.0.0.1":       false,
		"0.0.0.0":         false, // loopback, denied now
		"::1":             false,
		"::":              false,
		"169.254.169.254": true, // an exact allow reopens a default
		"169.254.1.1":     false,
		"192.168.0.1":     true,
	} {
		ok, why := p.decide(netip.MustParseAddr(addr))
		assert.Equal(t, allowed, ok, "%s (%s)", addr, why)
	}

	_, err = newEgressPolicy(nil, nil, func(k string) string {
		if k == EnvEgressDeny {
			return "10.0.0.0/8,nope"
		}
		return ""
	}, nil)
	require.ErrorContains(t, err, `$PAPRIKA_BROWSER_EGRESS_DENY: "nope" is not a CIDR or an address`)
	_, err = New(Config{getenv: func(k string) string { return map[string]string{EnvEgressAllow: "1.2.3.4/99"}[k] }})
	require.ErrorContains(t, err, "chromium config: egress: $PAPRIKA_BROWSER_EGRESS_ALLOW")
}

func TestSecurityEgressResolution(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	p, err := newEgressPolicy(nil, nil, noEnv, fakeLookup(&calls))
	require.NoError(t, err)
	ctx := context.Background()
	for u, want := range map[string]string{
		"http://metadata.test/latest/meta-data/": "egress policy denies metadata.test: it resolves to 169.254.169.254 (169.254.169.254/32 cloud metadata)",
		"https://DUAL.test./x":                   "egress policy denies dual.test: it resolves to fe80::1 (fe80::/10 link-local)",
		"http://169.254.169.254/":                "egress policy denies 169.254.169.254 (169.254.169.254/32 cloud metadata)",
		"http://[fd00:ec2::254]/":                "egress policy denies fd00:ec2::254 (fd00:ec2::254/128 cloud metadata)",
		"http://metadata.google.internal/":       "egress policy denies metadata.google.internal (a cloud metadata name)",
		"http://nxdomain.test/":                  "egress policy denies nxdomain.test (lookup failed: lookup nxdomain.test: no such host)",
		"http://ok.test:8080/":                   "",
		"http://127.0.0.1:1/":                    "",
		"data:text/html,<p>hi</p>":               "",
		"about:blank":                            "",
		"ws://169.254.169.254/socket":            "egress policy denies 169.254.169.254 (169.254.169.254/32 cloud metadata)",
		"http://user:pw@169.254.169.254:80/?a=b": "egress policy denies 169.254.169.254 (169.254.169.254/32 cloud metadata)",
	} {
		err := p.check(ctx, u)
		if want == "" {
			assert.NoError(t, err, u)
			continue
		}
		var ee *EgressError
		require.True(t, errors.As(err, &ee), "%s: %v", u, err)
		assert.Equal(t, want, err.Error(), u)
	}

	// A tab remembers resolved decisions, by host.
	var c egressCache
	calls.Store(0)
	for i := range 5 {
		require.NoError(t, c.check(ctx, p, fmt.Sprintf("http://ok.test/%d.png", i)))
		err := c.check(ctx, p, fmt.Sprintf("http://metadata.test/%d", i))
		var ee *EgressError
		require.True(t, errors.As(err, &ee))
		require.Equal(t, fmt.Sprintf("http://metadata.test/%d", i), ee.URL)
	}
	require.EqualValues(t, 2, calls.Load())
	// For a while: a session's guard looks a host up again after the TTL,
	// and holds at most egressCacheHosts hosts.
	now := time.Now()
	c.now = func() time.Time { return now }
	now = now.Add(egressCacheTTL - time.Second)
	require.NoError(t, c.check(ctx, p, "http://ok.test/again"))
	require.EqualValues(t, 2, calls.Load(), "still fresh")
	now = now.Add(time.Second)
	require.NoError(t, c.check(ctx, p, "http://ok.test/again"))
	require.EqualValues(t, 3, calls.Load(), "looked up again after the TTL")
	for i := 0; len(c.m) < egressCacheHosts; i++ {
		c.m[fmt.Sprintf("h%d.test", i)] = egressDecision{at: now}
	}
	require.Error(t, c.check(ctx, p, "http://dual.test/x"))
	require.Len(t, c.m, 1, "a full cache starts over")

	// The real resolver: localhost is loopback, allowed by default.
	real, err := newEgressPolicy(nil, nil, noEnv, nil)
	require.NoError(t, err)
	require.NoError(t, real.check(ctx, "http://localhost:1/"))
}

// TestSecurityEgressFetchDenied: a job whose URL (or its redirect) is denied
// fails at once with job_error naming the policy, instead of waiting for
// the step timeout on an address that does not answer.
func TestSecurityEgressFetchDenied(t *testing.T) {
	t.Parallel()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /redirect", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://metadata.test/latest/meta-data/", http.StatusFound)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	d, _ := newDriver(t, 1, func(c *Config) { c.lookup = fakeLookup(nil); c.getenv = noEnv })

	for _, tc := range []struct{ mode, url, want string }{
		{"fetch", "http://169.254.169.254/", "egress policy denies 169.254.169.254 (169.254.169.254/32 cloud metadata)"},
		{"fetch", "http://metadata.test/latest/meta-data/", "it resolves to 169.254.169.254"},
		{"macro", "http://[fd00:ec2::254]/", "egress policy denies fd00:ec2::254"},
		{"fetch", srv.URL + "/redirect", "egress policy denies metadata.test"},
	} {
		params := any(map[string]any{"url": tc.url, "screenshot": false})
		if tc.mode == "macro" {
			params = map[string]any{"steps": []map[string]any{{"op": "navigate", "url": tc.url}}}
		}
		r := runJob(t, d, 0, "egress-"+tc.mode, tc.mode, params, 0)
		require.Error(t, r.err, tc.url)
		require.Equal(t, agent.ReasonJobError, r.reason(), "%s: %v", tc.url, r.err)
		require.ErrorContains(t, r.err, tc.want, tc.url)
		require.Less(t, r.took, 10*time.Second, tc.url)
	}
}

// TestSecurityEgressSubresourceBlocked: a page on an allowed address loads,
// while its script's request to a denied address never leaves the browser.
func TestSecurityEgressSubresourceBlocked(t *testing.T) {
	t.Parallel()
	var probed atomic.Int32
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		storetest.Unavailable(t, "127.0.0.2 on this host", err)
	}
	probe := &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		probed.Add(1)
		fmt.Fprint(w, "secret")
	})}}
	probe.Start()
	t.Cleanup(probe.Close)

	page := `<!DOCTYPE html><html><head><title>Egress</title></head><body><p id="out"></p><script>
const out = document.getElementById("out");
fetch(%q, {mode: "no-cors"}).then(() => { out.textContent = "reached"; out.id = "done" },
  e => { out.textContent = "blocked: " + e; out.id = "done" });
</script><img src=%q></body></html>`
	mux := http.NewServeMux()
	mux.HandleFunc("GET /page", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, page, probe.URL+"/fetch", probe.URL+"/img.png")
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	d, up := newDriver(t, 1, func(c *Config) {
		c.getenv = noEnv
		c.EgressDeny = []netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")}
	})
	r := runJob(t, d, 0, "egress-sub", "fetch", map[string]any{"url": srv.URL + "/page", "wait_for": "#done", "screenshot": false}, 0)
	res := resultMap(t, r)
	require.EqualValues(t, 200, res["status"])
	html := string(up.asset(t, "egress-sub", assetHTML).data)
	require.Contains(t, html, `<p id="done">blocked: TypeError`)
	require.Zero(t, probed.Load(), "the denied address was reached")

	// Without the deny rule the same page reaches it: the test tests the policy.
	d2, up2 := newDriver(t, 1, func(c *Config) { c.getenv = noEnv })
	r = runJob(t, d2, 0, "egress-open", "fetch", map[string]any{"url": srv.URL + "/page", "wait_for": "#done", "screenshot": false}, 0)
	resultMap(t, r)
	require.Contains(t, string(up2.asset(t, "egress-open", assetHTML).data), `<p id="done">reached</p>`)
	require.Positive(t, probed.Load())
}
