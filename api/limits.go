package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"
)

// Limits are the bounds of config's limits section the API enforces. A zero
// field takes the built-in default below (config's), so an Options built
// without them (tests, embedders) is still bounded.
type Limits struct {
	MaxParamsBytes     int // limits.max_params_bytes
	MaxLabels          int // limits.max_labels
	MaxLabelKeyBytes   int // limits.max_label_key_bytes
	MaxLabelValueBytes int // limits.max_label_value_bytes
	// MaxQueued is limits.max_queued. Unlike the others, 0 means no cap
	// (config's own meaning), not the default.
	MaxQueued int
	// APIRate (limits.api_rate, requests per second per client address;
	// 0 = no cap, like MaxQueued) and APIBurst (limits.api_burst).
	APIRate  int
	APIBurst int
	// MaxAssetBytes is limits.max_asset_bytes, the total of one job's
	// assets.
	MaxAssetBytes int64
	// MaxSessionDownloads is limits.max_session_downloads, the files one
	// session may keep on the hub (their bytes: MaxAssetBytes).
	MaxSessionDownloads int
	// MaxListBytes is limits.max_list_bytes: one GET /jobs page's jobs
	// by encoded size.
	MaxListBytes int
}

// Built-in defaults of Limits, the same as config's.
const (
	defaultMaxParamsBytes     = 64 << 10
	defaultMaxLabels          = 32
	defaultMaxLabelKeyBytes   = 128
	defaultMaxLabelValueBytes = 1024
	defaultMaxAssetBytes      = 1 << 30
	defaultMaxSessionDownload = 100
	defaultMaxListBytes       = 4 << 20
)

// withDefaults fills the zero fields.
func (l Limits) withDefaults() Limits {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&l.MaxParamsBytes, defaultMaxParamsBytes)
	def(&l.MaxLabels, defaultMaxLabels)
	def(&l.MaxLabelKeyBytes, defaultMaxLabelKeyBytes)
	def(&l.MaxLabelValueBytes, defaultMaxLabelValueBytes)
	def(&l.MaxSessionDownloads, defaultMaxSessionDownload)
	def(&l.MaxListBytes, defaultMaxListBytes)
	if l.MaxAssetBytes <= 0 {
		l.MaxAssetBytes = defaultMaxAssetBytes
	}
	return l
}

// limitError is the answer to a request over one of the limits: the usual
// error shape plus "limit" (the config key to raise) and "max" (its value),
// so a client can tell which bound it hit without parsing the message.
func limitError(status int, code, key string, max int, format string, args ...any) *Error {
	e := Errorf(status, code, "%s (%s is %d)", fmt.Sprintf(format, args...), key, max)
	e.Extra = map[string]any{"limit": key, "max": max}
	return e
}

// fitList is how many of the encoded jobs, from the first, an answer
// holds within MaxListBytes (at least one: a page always moves on).
func (l Limits) fitList(jobs []json.RawMessage) int {
	total := 0
	for i, b := range jobs {
		if total += len(b) + 1; total > l.MaxListBytes && i > 0 {
			return i
		}
	}
	return len(jobs)
}

// checkParams refuses params over limits.max_params_bytes with a 413.
func (l Limits) checkParams(params []byte) error {
	if len(params) > l.MaxParamsBytes {
		return limitError(http.StatusRequestEntityTooLarge, "params_too_large", "limits.max_params_bytes", l.MaxParamsBytes,
			"params are %d bytes, over the limit", len(params))
	}
	return nil
}

// checkLabels refuses too many labels, or a label key or value too long,
// with a 413 naming the limit and (for a length) the label's key. Keys are
// visited in order so the same request always names the same label.
func (l Limits) checkLabels(labels map[string]string) error {
	if len(labels) > l.MaxLabels {
		return limitError(http.StatusRequestEntityTooLarge, "labels_too_large", "limits.max_labels", l.MaxLabels,
			"%d labels, over the limit", len(labels))
	}
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if len(k) > l.MaxLabelKeyBytes {
			e := limitError(http.StatusRequestEntityTooLarge, "labels_too_large", "limits.max_label_key_bytes", l.MaxLabelKeyBytes,
				"label key %.40q… is %d bytes, over the limit", k, len(k))
			e.Extra["label"] = k[:min(len(k), 64)]
			return e
		}
		if v := labels[k]; len(v) > l.MaxLabelValueBytes {
			e := limitError(http.StatusRequestEntityTooLarge, "labels_too_large", "limits.max_label_value_bytes", l.MaxLabelValueBytes,
				"label %q has a value of %d bytes, over the limit", k, len(v))
			e.Extra["label"] = k
			return e
		}
	}
	return nil
}

// queueGate caches the fleet's queue depth for limits.max_queued. The depth
// lives in the scheduler grain, which may be on another hub, and the job
// store has no count, so asking on every POST /jobs would put a cluster
// round trip (or a table scan) on the submit path. Instead one request a
// second refreshes it and the others use the cached value plus this hub's
// own submits since, which keeps a burst on one hub exact.
type queueGate struct {
	mu          sync.Mutex
	last        Load           // the scheduler's last answer
	known       bool           // last holds an answer
	since       int            // jobs this hub created after that answer
	sinceTenant map[string]int // the same, per tenant
	at          time.Time      // when the load was last asked for (zero: never)
	readAt      time.Time      // when last was asked for
	refreshing  bool
}

// queueRefresh is how old the cached depth may get.
const queueRefresh = time.Second

// queueRetryAfter is the Retry-After of a 429 queue_full, in seconds: a
// full queue drains at the fleet's pace, not in an instant.
const queueRetryAfter = 5

// added counts a job of tenant this hub created since the last refresh.
func (g *queueGate) added(tenant string) {
	g.mu.Lock()
	g.since++
	if g.sinceTenant == nil {
		g.sinceTenant = map[string]int{}
	}
	g.sinceTenant[tenant]++
	g.mu.Unlock()
}

// checkQueue refuses a submission with 429 while the fleet already holds
// limits.max_queued queued jobs. When the depth cannot be read it lets the
// job through: the store, not this gate, is what must stay reachable, and
// the next refresh is at most a second away. ahead counts the jobs of the
// same request before this one (a batch's), not created yet.
func (s *Server) checkQueue(ctx context.Context, ahead int) error {
	limit := s.limits.MaxQueued
	if limit <= 0 {
		return nil
	}
	l, since, _, _ := s.queue.load(ctx, s) // never read: this hub's submits only
	depth := l.Queued + l.Scheduled + since + ahead
	if depth < limit {
		return nil
	}
	e := limitError(http.StatusTooManyRequests, "queue_full", "limits.max_queued", limit,
		"%d jobs are queued in the fleet; retry after %ds", depth, queueRetryAfter)
	e.Extra["queued"] = depth
	e.RetryAfter = strconv.Itoa(queueRetryAfter)
	return e
}
