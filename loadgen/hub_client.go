package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/paprika-hub/paprika/messages"
	"github.com/paprika-hub/paprika/persistence"
)

// Metric names read from the hub's /metrics.
const (
	metricLinesStored = "paprika_log_lines_stored_total"
	metricLogWrites   = "paprika_log_writes_total"
)

// requestTimeout bounds one plain API call (not an SSE stream).
const requestTimeout = 30 * time.Second

// hubClient is the bench's HTTP client for one hub: submit, read and cancel
// jobs, scrape metrics, follow logs. It has its own transport so the bench's
// connections are closed when it ends.
type hubClient struct {
	base  string
	token string
	tr    *http.Transport
	hc    *http.Client
}

func newHubClient(base, token string) *hubClient {
	tr := &http.Transport{
		Proxy:               nil, // the hub is reached directly, never through a proxy
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     30 * time.Second,
	}
	return &hubClient{base: strings.TrimRight(base, "/"), token: token, tr: tr, hc: &http.Client{Transport: tr}}
}

// close drops idle keep-alive connections.
func (c *hubClient) close() { c.tr.CloseIdleConnections() }

// apiError is a non-2xx answer of the hub.
type apiError struct {
	Method, Path string
	Status       int
	Body         string
}

func (e *apiError) Error() string {
	return fmt.Sprintf("%s %s: HTTP %d: %s", e.Method, e.Path, e.Status, strings.TrimSpace(e.Body))
}

func (c *hubClient) newRequest(ctx context.Context, method, path string, body []byte) (*http.Request, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, r)
	if err != nil {
		return nil, fmt.Errorf("build request %s %s: %w", method, path, err)
	}
	if body != nil || method != http.MethodGet {
		// The hub refuses a state-changing request without it (415), even
		// a body-less one such as a cancel.
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	return req, nil
}

// call sends a request and returns the body of a 2xx answer.
func (c *hubClient) call(ctx context.Context, method, path string, body []byte) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	req, err := c.newRequest(ctx, method, path, body)
	if err != nil {
		return nil, err
	}
	res, err := c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, 16<<20))
	if err != nil {
		return nil, fmt.Errorf("%s %s: read answer: %w", method, path, err)
	}
	if res.StatusCode/100 != 2 {
		return nil, &apiError{Method: method, Path: path, Status: res.StatusCode, Body: string(b)}
	}
	return b, nil
}

// jobView is the part of the job object the bench reads.
type jobView struct {
	ID       string             `json:"id"`
	Status   persistence.Status `json:"status"`
	Reason   string             `json:"reason"`
	WorkerID string             `json:"worker_id"`
}

// submitNoop creates a noop job of lines lines.
func (c *hubClient) submitNoop(ctx context.Context, lines, intervalMS, timeoutS int, key string) (jobView, error) {
	body, err := json.Marshal(map[string]any{
		"mode":         messages.ModeNoop,
		"params":       map[string]int{"lines": lines, "interval_ms": intervalMS},
		"timeout_s":    timeoutS,
		"max_attempts": 1,
		"labels":       map[string]string{"bench": "1"},
	})
	if err != nil {
		return jobView{}, fmt.Errorf("encode job: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	req, err := c.newRequest(ctx, http.MethodPost, "/jobs", body)
	if err != nil {
		return jobView{}, err
	}
	req.Header.Set("Idempotency-Key", key)
	res, err := c.hc.Do(req)
	if err != nil {
		return jobView{}, fmt.Errorf("POST /jobs: %w", err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err != nil {
		return jobView{}, fmt.Errorf("POST /jobs: read answer: %w", err)
	}
	if res.StatusCode/100 != 2 {
		return jobView{}, &apiError{Method: http.MethodPost, Path: "/jobs", Status: res.StatusCode, Body: string(b)}
	}
	var j jobView
	if err := json.Unmarshal(b, &j); err != nil {
		return jobView{}, fmt.Errorf("POST /jobs: decode job: %w", err)
	}
	return j, nil
}

// job reads one job.
func (c *hubClient) job(ctx context.Context, id string) (jobView, error) {
	b, err := c.call(ctx, http.MethodGet, "/jobs/"+url.PathEscape(id), nil)
	if err != nil {
		return jobView{}, err
	}
	var j jobView
	if err := json.Unmarshal(b, &j); err != nil {
		return jobView{}, fmt.Errorf("GET /jobs/%s: decode job: %w", id, err)
	}
	return j, nil
}

// cancel cancels one job; a job that already ended (409) is not an error.
func (c *hubClient) cancel(ctx context.Context, id string) error {
	_, err := c.call(ctx, http.MethodPost, "/jobs/"+url.PathEscape(id)+"/cancel", nil)
	var ae *apiError
	if errors.As(err, &ae) && ae.Status == http.StatusConflict {
		return nil
	}
	return err
}

// healthy checks GET /healthz.
func (c *hubClient) healthy(ctx context.Context) error {
	_, err := c.call(ctx, http.MethodGet, "/healthz", nil)
	return err
}

// metrics scrapes /metrics into family → value, summing label sets. A body
// that does not parse is a failed scrape, like one that timed out: a value
// guessed from half a body would skew the bench's deltas.
func (c *hubClient) metrics(ctx context.Context) (map[string]float64, error) {
	b, err := c.call(ctx, http.MethodGet, "/metrics", nil)
	if err != nil {
		return nil, err
	}
	m, err := parseMetrics(b)
	if err != nil {
		return nil, fmt.Errorf("GET /metrics: %w", err)
	}
	return m, nil
}

// parseMetrics reads the Prometheus text format with the library's own
// parser (escaping and quoting rules are its business) and sums every
// family's samples across label sets, since the bench only wants totals; a
// counter the hub has not exposed is simply absent (0). A summary or
// histogram yields its _sum and _count, which is what the totals of its
// text lines meant. On a malformed body it returns the families read
// before the fault along with the error.
func parseMetrics(b []byte) (map[string]float64, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(b))
	out := make(map[string]float64, len(fams))
	for name, f := range fams {
		for _, s := range f.GetMetric() {
			switch {
			case s.Counter != nil:
				out[name] += s.GetCounter().GetValue()
			case s.Gauge != nil:
				out[name] += s.GetGauge().GetValue()
			case s.Untyped != nil:
				out[name] += s.GetUntyped().GetValue()
			case s.Summary != nil:
				out[name+"_sum"] += s.GetSummary().GetSampleSum()
				out[name+"_count"] += float64(s.GetSummary().GetSampleCount())
			case s.Histogram != nil:
				out[name+"_sum"] += s.GetHistogram().GetSampleSum()
				out[name+"_count"] += float64(s.GetHistogram().GetSampleCount())
			}
		}
	}
	if err != nil {
		return out, fmt.Errorf("parse metrics: %w", err)
	}
	return out, nil
}
