package actors

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
)

// Metrics is a set of named counters and gauges exported as Prometheus text.
// Counters are atomics, not actor state: they are written by many actors and
// read by /metrics, and a lost increment under a race would be a lie.
type Metrics struct {
	mu     sync.Mutex
	values map[string]*atomic.Int64
	help   map[string]string
	gauges map[string]func() int64
}

// NewMetrics returns an empty set.
func NewMetrics() *Metrics {
	return &Metrics{
		values: map[string]*atomic.Int64{},
		help:   map[string]string{},
		gauges: map[string]func() int64{},
	}
}

// Add increments counter name (with optional label pairs "k=v") by n.
func (m *Metrics) Add(name string, n int64, labels ...string) {
	if m == nil {
		return
	}
	m.counter(key(name, labels)).Add(n)
}

// Inc increments counter name by one.
func (m *Metrics) Inc(name string, labels ...string) { m.Add(name, 1, labels...) }

// Get reads a counter (tests and views).
func (m *Metrics) Get(name string, labels ...string) int64 {
	if m == nil {
		return 0
	}
	return m.counter(key(name, labels)).Load()
}

// Gauge registers a function read at export time.
func (m *Metrics) Gauge(name, help string, f func() int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gauges[name] = f
	m.help[name] = help
}

// Help documents a metric family.
func (m *Metrics) Help(name, help string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.help[name] = help
}

func (m *Metrics) counter(k string) *atomic.Int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.values[k]
	if !ok {
		c = new(atomic.Int64)
		m.values[k] = c
	}
	return c
}

func key(name string, labels []string) string {
	if len(labels) == 0 {
		return name
	}
	parts := make([]string, 0, len(labels))
	for _, l := range labels {
		k, v, _ := strings.Cut(l, "=")
		parts = append(parts, fmt.Sprintf("%s=%q", k, v))
	}
	return name + "{" + strings.Join(parts, ",") + "}"
}

// WritePrometheus writes every metric in the text exposition format.
func (m *Metrics) WritePrometheus(w io.Writer) error {
	m.mu.Lock()
	keys := make([]string, 0, len(m.values))
	for k := range m.values {
		keys = append(keys, k)
	}
	gauges := make(map[string]func() int64, len(m.gauges))
	for k, f := range m.gauges {
		gauges[k] = f
	}
	help := make(map[string]string, len(m.help))
	for k, v := range m.help {
		help[k] = v
	}
	m.mu.Unlock()
	sort.Strings(keys)
	seen := map[string]bool{}
	for _, k := range keys {
		family, _, _ := strings.Cut(k, "{")
		if !seen[family] {
			seen[family] = true
			if h := help[family]; h != "" {
				fmt.Fprintf(w, "# HELP %s %s\n", family, h)
			}
			fmt.Fprintf(w, "# TYPE %s counter\n", family)
		}
		if _, err := fmt.Fprintf(w, "%s %d\n", k, m.Get(k)); err != nil {
			return fmt.Errorf("write metrics: %w", err)
		}
	}
	names := make([]string, 0, len(gauges))
	for k := range gauges {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, n := range names {
		if h := help[n]; h != "" {
			fmt.Fprintf(w, "# HELP %s %s\n", n, h)
		}
		if _, err := fmt.Fprintf(w, "# TYPE %s gauge\n%s %d\n", n, n, gauges[n]()); err != nil {
			return fmt.Errorf("write metrics: %w", err)
		}
	}
	return nil
}
