package loadgen

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

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
	if body != nil {
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

// metrics scrapes /metrics into family → value, summing label sets.
func (c *hubClient) metrics(ctx context.Context) (map[string]float64, error) {
	b, err := c.call(ctx, http.MethodGet, "/metrics", nil)
	if err != nil {
		return nil, err
	}
	return parseMetrics(b), nil
}

// parseMetrics reads Prometheus text: every sample's value, summed per
// family (the name before any '{'). Comments and malformed lines are
// skipped; a counter the hub has not touched yet is simply absent (0).
func parseMetrics(b []byte) map[string]float64 {
	out := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		name, rest := line, ""
		if i := strings.IndexByte(line, '{'); i >= 0 {
			j := strings.LastIndexByte(line, '}')
			if j < i {
				continue
			}
			name, rest = line[:i], line[j+1:]
		} else if i := strings.IndexAny(line, " \t"); i >= 0 {
			name, rest = line[:i], line[i:]
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			continue
		}
		out[name] += v
	}
	return out
}
