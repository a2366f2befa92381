package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/paprika-hub/paprika/internal/backoff"
)

// Defaults of the retry and polling policy; each has an Option.
const (
	// DefaultMaxAttempts bounds the tries of one request (across all base
	// URLs) on 503 and connection errors.
	DefaultMaxAttempts = 5
	// DefaultBackoffMin is the first backoff delay; it doubles per retry.
	DefaultBackoffMin = 100 * time.Millisecond
	// DefaultBackoffMax caps the backoff delay.
	DefaultBackoffMax = 3 * time.Second
	// DefaultMaxRetryAfter caps how long a 503's Retry-After is honoured.
	DefaultMaxRetryAfter = 30 * time.Second
	// DefaultPollMin is Wait's first polling delay; it grows by half per poll.
	DefaultPollMin = 100 * time.Millisecond
	// DefaultPollMax caps Wait's polling delay.
	DefaultPollMax = 2 * time.Second
)

// userAgent is sent with every request.
const userAgent = "paprika-go-client/1"

// Client talks to one or more hubs of a cluster. Any hub answers for any
// job, so the base URLs are interchangeable: the client sticks to the one
// that last worked and moves to the next on connection errors and 503s.
// A Client is safe for concurrent use.
type Client struct {
	bases         []string // without trailing slash
	hc            *http.Client
	token         string
	maxAttempts   int
	retry         backoff.Policy // pauses between the tries of one request
	maxRetryAfter time.Duration
	poll          backoff.Policy // Wait's pauses between polls
	tlsConf       *tls.Config    // WithTLSConfig/WithRootCAs, applied to hc's transport by New

	cur atomic.Uint32 // index into bases of the hub in use
}

// Option configures a Client.
type Option func(*Client)

// WithToken sends "Authorization: Bearer token" (the hub's auth.api_token).
func WithToken(token string) Option { return func(c *Client) { c.token = token } }

// WithHTTPClient uses hc for every request. Leave its Timeout zero: Follow
// holds a stream open for as long as the job runs; bound calls with their
// context instead. A nil hc keeps http.DefaultClient.
func WithHTTPClient(hc *http.Client) Option {
	return func(c *Client) {
		if hc != nil {
			c.hc = hc
		}
	}
}

// WithTLSConfig uses tc for HTTPS to the hubs: RootCAs for a hub whose
// certificate a private CA signed (hub.tls_cert), or a client certificate.
// New applies it after every other option to a clone of the HTTP client's
// transport, so a client given with WithHTTPClient is left untouched; that
// client's Transport must then be nil or an *http.Transport. A nil tc
// changes nothing.
func WithTLSConfig(tc *tls.Config) Option {
	return func(c *Client) {
		if tc != nil {
			c.tlsConf = tc.Clone()
		}
	}
}

// WithRootCAs trusts the CAs in pool (and only those) for the hubs'
// certificates: WithTLSConfig with RootCAs set, TLS 1.2 or later.
func WithRootCAs(pool *x509.CertPool) Option {
	return WithTLSConfig(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12})
}

// WithMaxAttempts bounds the tries of one request; n < 1 means 1.
func WithMaxAttempts(n int) Option { return func(c *Client) { c.maxAttempts = max(n, 1) } }

// WithBackoff sets the first and the largest retry delay.
func WithBackoff(lowest, highest time.Duration) Option {
	return func(c *Client) { c.retry = retryPolicy(lowest, highest) }
}

// WithMaxRetryAfter caps how long a 503's Retry-After is honoured.
func WithMaxRetryAfter(d time.Duration) Option { return func(c *Client) { c.maxRetryAfter = d } }

// WithPollInterval sets Wait's first and largest polling delay.
func WithPollInterval(lowest, highest time.Duration) Option {
	lowest = max(lowest, time.Millisecond)
	return func(c *Client) { c.poll = pollPolicy(lowest, highest) }
}

// New returns a client for the hubs at baseURLs. Each entry may itself be a
// comma-separated list; an entry without a scheme gets "http://"
// ("127.0.0.1:8080" → "http://127.0.0.1:8080"). A base URL may carry a path
// prefix (a hub behind a reverse proxy).
func New(baseURLs []string, opts ...Option) (*Client, error) {
	c := &Client{
		hc:            http.DefaultClient,
		maxAttempts:   DefaultMaxAttempts,
		retry:         retryPolicy(DefaultBackoffMin, DefaultBackoffMax),
		maxRetryAfter: DefaultMaxRetryAfter,
		poll:          pollPolicy(DefaultPollMin, DefaultPollMax),
	}
	for _, entry := range baseURLs {
		for raw := range strings.SplitSeq(entry, ",") {
			raw = strings.TrimSpace(raw)
			if raw == "" {
				continue
			}
			if !strings.Contains(raw, "://") {
				raw = "http://" + raw
			}
			u, err := url.Parse(raw)
			if err != nil {
				return nil, fmt.Errorf("client: hub URL %q: %w", raw, err)
			}
			if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return nil, fmt.Errorf("client: hub URL %q: want http://host:port or https://host:port", raw)
			}
			u.RawQuery, u.Fragment = "", ""
			c.bases = append(c.bases, strings.TrimRight(u.String(), "/"))
		}
	}
	if len(c.bases) == 0 {
		return nil, errors.New("client: no hub URL given")
	}
	for _, o := range opts {
		o(c)
	}
	if c.tlsConf != nil {
		if err := c.applyTLS(); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// applyTLS gives c a copy of its HTTP client whose transport is a clone
// with c.tlsConf: the caller's client and http.DefaultTransport stay as
// they were.
func (c *Client) applyTLS() error {
	var tr *http.Transport
	switch t := c.hc.Transport.(type) {
	case nil:
		tr = http.DefaultTransport.(*http.Transport).Clone()
	case *http.Transport:
		tr = t.Clone()
	default:
		return fmt.Errorf("client: WithTLSConfig needs the HTTP client's Transport to be an *http.Transport, not %T", t)
	}
	tr.TLSClientConfig = c.tlsConf
	hc := *c.hc
	hc.Transport = tr
	c.hc = &hc
	return nil
}

// CloseIdleConnections closes the idle keep-alive connections of the
// client's HTTP transport, e.g. before a program or a test ends.
func (c *Client) CloseIdleConnections() { c.hc.CloseIdleConnections() }

// BaseURLs returns the hub URLs in use, normalised.
func (c *Client) BaseURLs() []string { return append([]string(nil), c.bases...) }

// request is one API call, replayable across attempts.
type request struct {
	method string
	path   string // already escaped, starting with "/"
	query  url.Values
	body   []byte // JSON; nil for none
	header http.Header
	accept string
	// idempotent marks a request that may be sent again after it may have
	// reached a hub: GET, PATCH of a status, POST with an Idempotency-Key.
	// Others are retried only when the connection was never made.
	idempotent bool

	attempts int // how many were sent; set by do
}

// do sends req, retrying as the policy allows, and returns a 2xx response
// whose body the caller must close. Non-2xx answers become *APIError.
func (c *Client) do(ctx context.Context, req *request) (*http.Response, error) {
	what := req.method + " " + req.path
	var lastErr error
	var delay time.Duration
	connFails := 0 // consecutive connection failures since the last pause
	// Hubs whose certificate did not verify: trying them again cannot
	// help, so once every hub is in here the request fails at once.
	var badCert map[int]bool
	for attempt := 0; attempt < c.maxAttempts; attempt++ {
		if attempt > 0 {
			if err := backoff.Sleep(ctx, delay); err != nil {
				return nil, fmt.Errorf("%s: %w (last error: %w)", what, err, lastErr)
			}
		}
		idx := int(c.cur.Load()) % len(c.bases)
		req.attempts++
		resp, err := c.send(ctx, c.bases[idx], req)
		if err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("%s: %w", what, ctx.Err())
			}
			lastErr = err
			if certErr := new(tls.CertificateVerificationError); errors.As(err, &certErr) {
				if badCert == nil {
					badCert = map[int]bool{}
				}
				if badCert[idx] = true; len(badCert) == len(c.bases) {
					return nil, fmt.Errorf("%s: %w", what, err)
				}
			}
			if !req.idempotent && !neverSent(err) {
				return nil, fmt.Errorf("%s: %w (not retried: the hub may have acted on it)", what, err)
			}
			c.advance(idx)
			// Try every other hub at once; pause only once a round failed.
			connFails++
			delay = 0
			if connFails >= len(c.bases) {
				delay, connFails = c.retry.Delay(attempt), 0
			}
			continue
		}
		if resp.StatusCode >= 200 && resp.StatusCode < 300 {
			return resp, nil
		}
		apiErr := decodeAPIError(resp)
		drainClose(resp.Body)
		if resp.StatusCode != http.StatusServiceUnavailable || !req.idempotent {
			return nil, fmt.Errorf("%s: %w", what, apiErr)
		}
		lastErr = apiErr
		connFails = 0
		delay = c.retry.Delay(attempt)
		if ra, ok := retryAfter(resp.Header.Get("Retry-After")); ok {
			delay = min(ra, c.maxRetryAfter)
		}
		c.advance(idx)
	}
	return nil, fmt.Errorf("%s: gave up after %d attempts: %w", what, c.maxAttempts, lastErr)
}

// send makes one attempt against base.
func (c *Client) send(ctx context.Context, base string, req *request) (*http.Response, error) {
	u := base + req.path
	if len(req.query) > 0 {
		u += "?" + req.query.Encode()
	}
	var body io.Reader
	if req.body != nil {
		body = bytes.NewReader(req.body)
	}
	hr, err := http.NewRequestWithContext(ctx, req.method, u, body)
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	for k, v := range req.header {
		hr.Header[k] = v
	}
	hr.Header.Set("User-Agent", userAgent)
	if req.accept != "" {
		hr.Header.Set("Accept", req.accept)
	} else {
		hr.Header.Set("Accept", "application/json")
	}
	if req.body != nil || stateChanging(req.method) {
		// The hub refuses a state-changing request without it (415), even
		// a body-less cancel: that is what stops cross-site form posts.
		hr.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		hr.Header.Set("Authorization", "Bearer "+c.token)
	}
	return c.hc.Do(hr)
}

// advance moves off the hub at idx unless another goroutine already did.
func (c *Client) advance(idx int) {
	if len(c.bases) > 1 {
		c.cur.CompareAndSwap(uint32(idx), uint32((idx+1)%len(c.bases)))
	}
}

// retryPolicy gives the delays between the tries of a request: doubling
// from lowest up to highest, with jitter in [d/2, d] so clients that failed
// together do not retry together.
func retryPolicy(lowest, highest time.Duration) backoff.Policy {
	return backoff.Policy{Base: lowest, Max: max(lowest, highest), Jitter: 0.5}
}

// pollPolicy gives Wait's delays: growing by half per poll from lowest to
// highest, unjittered (a poll is one cheap GET, and its timing is the
// caller's choice).
func pollPolicy(lowest, highest time.Duration) backoff.Policy {
	return backoff.Policy{Base: lowest, Max: max(lowest, highest), Factor: 1.5}
}

// neverSent reports whether err happened before any byte reached a hub
// (dial failure, DNS failure, refused connection), which makes a retry safe
// for any request.
func neverSent(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// retryAfter parses a Retry-After header: delay-seconds or an HTTP date.
func retryAfter(v string) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if n, err := strconv.Atoi(v); err == nil && n >= 0 {
		return time.Duration(n) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0), true
	}
	return 0, false
}

// drainClose reads a little of body so the connection can be reused, then
// closes it.
func drainClose(body io.ReadCloser) {
	_, _ = io.CopyN(io.Discard, body, 4<<10)
	_ = body.Close()
}

// doJSON sends req and decodes a 2xx JSON answer into out.
func (c *Client) doJSON(ctx context.Context, req *request, out any) error {
	resp, err := c.do(ctx, req)
	if err != nil {
		return err
	}
	defer drainClose(resp.Body)
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("%s %s: decode answer: %w", req.method, req.path, err)
	}
	return nil
}

// marshal encodes a request body.
func marshal(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode request: %w", err)
	}
	return b, nil
}

// esc escapes one path segment (a job id, worker id or asset name).
func esc(s string) string { return url.PathEscape(s) }

// stateChanging reports whether method changes state on the hub, so it must
// carry Content-Type: application/json.
func stateChanging(method string) bool {
	switch method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}
