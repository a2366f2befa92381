package hub

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/paprika-hub/paprika/persistence"
)

// scrapeURL reads a /metrics answer the way Prometheus does and parses it
// back with the library's parser.
func scrapeURL(t *testing.T, url string, hdr ...string) map[string]*dto.MetricFamily {
	t.Helper()
	res, b := get(t, url, hdr...)
	require.Equal(t, http.StatusOK, res.StatusCode, string(b))
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(string(b)))
	require.NoError(t, err)
	return fams
}

// metricName is a Prometheus metric name inside a PromQL expression; the
// families the deploy files may name are ours and the runtime's.
var metricName = regexp.MustCompile(`\b(?:paprika|go|process)_[a-z0-9_]+\b`)

// deployMetricNames lists the metric names the Grafana dashboard's and the
// alert rules' expressions use, each with where it was found.
func deployMetricNames(t *testing.T) map[string]string {
	t.Helper()
	names := map[string]string{}
	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	b, err := os.ReadFile("../deploy/grafana/paprika.json")
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &dash))
	require.NotEmpty(t, dash.Panels)
	for _, p := range dash.Panels {
		require.NotEmpty(t, p.Targets, "panel %q has no query", p.Title)
		for _, tg := range p.Targets {
			for _, n := range metricName.FindAllString(tg.Expr, -1) {
				names[n] = "dashboard panel " + p.Title
			}
		}
	}
	var rules struct {
		Groups []struct {
			Rules []struct{ Alert, Expr string }
		}
	}
	b, err = os.ReadFile("../deploy/prometheus/alerts.yml")
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(b, &rules))
	require.NotEmpty(t, rules.Groups)
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			require.NotEmpty(t, r.Expr, "alert %s", r.Alert)
			for _, n := range metricName.FindAllString(r.Expr, -1) {
				names[n] = "alert " + r.Alert
			}
		}
	}
	for _, must := range []string{"paprika_workers_alive", "paprika_queue_depth", "paprika_worker_lost_jobs_total"} {
		require.Contains(t, names, must, "the alert rules cover no alive workers, a growing queue and lost workers")
	}
	return names
}

// exposed maps a name as PromQL uses it to the family of the scrape: a
// histogram's _bucket, _sum and _count series belong to its family.
func exposed(fams map[string]*dto.MetricFamily, name string) bool {
	if _, ok := fams[name]; ok {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok {
			if f, ok := fams[base]; ok && f.GetType() == dto.MetricType_HISTOGRAM {
				return true
			}
		}
	}
	return false
}

var (
	snakeCase = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	// Prometheus names carry base units only.
	nonBaseUnit = regexp.MustCompile(`_(ms|msec|millis|milliseconds|us|microseconds|ns|nanoseconds|minutes|hours|days|kb|mb|gb|kilobytes|megabytes|gigabytes|percent)(_|$)`)
)

// lintFamily applies the Prometheus naming conventions to one of our
// families and returns what it breaks.
func lintFamily(f *dto.MetricFamily) []string {
	var bad []string
	name := f.GetName()
	if !snakeCase.MatchString(name) {
		bad = append(bad, "not snake_case")
	}
	if strings.TrimSpace(f.GetHelp()) == "" {
		bad = append(bad, "no HELP")
	}
	isCounter := f.GetType() == dto.MetricType_COUNTER
	if isCounter != strings.HasSuffix(name, "_total") {
		bad = append(bad, fmt.Sprintf("type %s: counters, and only they, end in _total", f.GetType()))
	}
	if nonBaseUnit.MatchString(name) {
		bad = append(bad, "a unit other than the base unit (seconds, bytes)")
	}
	if f.GetType() == dto.MetricType_HISTOGRAM && !strings.HasSuffix(name, "_seconds") && !strings.HasSuffix(name, "_bytes") {
		bad = append(bad, "a histogram without its unit suffix (_seconds, _bytes)")
	}
	// A family whose HELP measures in seconds or bytes carries the unit.
	help := strings.ToLower(f.GetHelp())
	if strings.HasPrefix(help, "seconds") && !strings.Contains(name, "_seconds") {
		bad = append(bad, "HELP counts seconds, name lacks _seconds")
	}
	if strings.HasPrefix(help, "bytes") && !strings.Contains(name, "_bytes") {
		bad = append(bad, "HELP counts bytes, name lacks _bytes")
	}
	for _, m := range f.GetMetric() {
		for _, l := range m.GetLabel() {
			if !snakeCase.MatchString(l.GetName()) {
				bad = append(bad, "label "+l.GetName()+" not snake_case")
			}
		}
	}
	return bad
}

// One hub runs a few jobs; then its scrape is linted, its histograms must
// have observed each job, and every name the deploy files use must be in
// it.
func TestMetricsScrapeAfterJobs(t *testing.T) {
	cfg := testConfig(t)
	require.NoError(t, cfg.Set("metrics.listen", "127.0.0.1:0"))
	h := startTestHub(t, cfg)
	startAgent(t, h.URL(), "wm", 3)
	m := h.Metrics()

	const jobs = 6
	var ids []string
	for i := range jobs {
		ids = append(ids, submit(t, h.URL(), fmt.Sprintf(`{"mode":"noop","params":{"lines":%d}}`, 1+i%3)).ID)
	}
	for _, id := range ids {
		j := waitFinal(t, h.URL(), id, 20*time.Second)
		require.Equal(t, persistence.StatusSucceeded, j.Status, "job %s: %s %s", id, j.Reason, j.Error)
	}

	t.Run("histograms observe", func(t *testing.T) {
		require.EqualValues(t, jobs, m.Get("paprika_queue_wait_seconds"), "one queue wait per job run")
		require.EqualValues(t, jobs, m.Get("paprika_job_duration_seconds", "mode=noop"), "one duration per noop job")
		require.GreaterOrEqual(t, m.Get("paprika_sched_placement_latency_seconds"), int64(jobs), "one per placement")
		require.Positive(t, m.Get("paprika_log_flush_duration_seconds"), "the jobs' log lines were flushed")
		require.Positive(t, m.Get("paprika_grain_request_duration_seconds", "kind=job"), "the API called the job grains")
		require.EqualValues(t, jobs, m.Get("paprika_job_store_write_seconds", "op=create"), "one create per submission")
		require.EqualValues(t, jobs, m.Get("paprika_job_store_write_seconds", "op=claim"), "one claim per placement")
		require.EqualValues(t, jobs, m.Get("paprika_job_store_write_seconds", "op=finish"), "one finish per job")
		more := submit(t, h.URL(), `{"mode":"noop"}`)
		waitFinal(t, h.URL(), more.ID, 20*time.Second)
		require.EqualValues(t, jobs+1, m.Get("paprika_queue_wait_seconds"), "the count grows with the jobs run")
	})

	t.Run("store commits", func(t *testing.T) {
		// Seven jobs' creates, claims and finishes: at least one commit,
		// and never more commits than writes.
		n := m.Get("paprika_job_store_commits_total")
		require.Positive(t, n, "the embedded store counts its commits")
		require.LessOrEqual(t, n, int64(4*(jobs+1)))
	})

	t.Run("fleet gauges", func(t *testing.T) {
		require.Eventually(t, func() bool {
			return m.Get("paprika_workers_alive") == 1 && m.Get("paprika_lanes", "state=free") == 3
		}, 10*time.Second, 50*time.Millisecond, "the idle worker's three lanes are free")
		require.Zero(t, m.Get("paprika_lanes", "state=busy"))
		require.EqualValues(t, 1, m.Get("paprika_hub_members"))
		require.Zero(t, m.Get("paprika_queue_depth", "mode=noop"))
		fams := scrapeURL(t, h.MetricsURL())
		require.Len(t, fams["paprika_queue_depth"].GetMetric(), 3, "a series per mode, zero included")
		require.Len(t, fams["paprika_worker_in_flight"].GetMetric(), 1)
		require.Contains(t, fams, "paprika_sessions_open")
		require.Zero(t, m.Get("paprika_fleet_scrape_errors_total"))
	})

	t.Run("lint", func(t *testing.T) {
		fams := scrapeURL(t, h.MetricsURL())
		var problems []string
		for name, f := range fams {
			if !strings.HasPrefix(name, "paprika_") {
				continue
			}
			for _, p := range lintFamily(f) {
				problems = append(problems, name+": "+p)
			}
		}
		sort.Strings(problems)
		require.Empty(t, problems)
		require.Contains(t, fams, "go_goroutines", "Go collector registered")
		require.Contains(t, fams, "process_cpu_seconds_total", "process collector registered")

		var missing []string
		for n, where := range deployMetricNames(t) {
			if !exposed(fams, n) {
				missing = append(missing, n+" ("+where+")")
			}
		}
		sort.Strings(missing)
		require.Empty(t, missing, "named in deploy/ but not on /metrics")
	})
}

// The lint catches what it is meant to: a counter without _total, a
// gauge with it, a histogram without a unit, milliseconds.
func TestMetricsLintRejects(t *testing.T) {
	fam := func(name, help string, typ dto.MetricType) *dto.MetricFamily {
		return &dto.MetricFamily{Name: &name, Help: &help, Type: &typ}
	}
	require.Empty(t, lintFamily(fam("paprika_x_total", "X.", dto.MetricType_COUNTER)))
	require.Empty(t, lintFamily(fam("paprika_wait_seconds", "Seconds waited.", dto.MetricType_HISTOGRAM)))
	require.NotEmpty(t, lintFamily(fam("paprika_x", "X.", dto.MetricType_COUNTER)))
	require.NotEmpty(t, lintFamily(fam("paprika_x_total", "X.", dto.MetricType_GAUGE)))
	require.NotEmpty(t, lintFamily(fam("paprika_wait", "Waits.", dto.MetricType_HISTOGRAM)))
	require.NotEmpty(t, lintFamily(fam("paprika_wait_ms", "Waits.", dto.MetricType_GAUGE)))
	require.NotEmpty(t, lintFamily(fam("paprika_age", "Seconds since.", dto.MetricType_GAUGE)))
	require.NotEmpty(t, lintFamily(fam("paprika_x_total", "", dto.MetricType_COUNTER)))
	require.NotEmpty(t, lintFamily(fam("Paprika-X_total", "X.", dto.MetricType_COUNTER)))
	require.True(t, exposed(map[string]*dto.MetricFamily{
		"paprika_wait_seconds": fam("paprika_wait_seconds", "S.", dto.MetricType_HISTOGRAM)}, "paprika_wait_seconds_bucket"))
	require.False(t, exposed(map[string]*dto.MetricFamily{
		"paprika_x": fam("paprika_x", "S.", dto.MetricType_GAUGE)}, "paprika_x_bucket"))
}

// metrics.listen serves /metrics without the API token, and only
// /metrics; the API listener still wants the token for its /metrics.
func TestMetricsListenWithoutToken(t *testing.T) {
	cfg := testConfig(t)
	require.NoError(t, cfg.Set("auth.api_token", "at"))
	require.NoError(t, cfg.Set("metrics.listen", "127.0.0.1:0"))
	h := startTestHub(t, cfg)
	require.NotEmpty(t, h.MetricsURL())

	fams := scrapeURL(t, h.MetricsURL())
	require.Contains(t, fams, "paprika_hub_uptime_seconds")

	res, _ := get(t, h.URL()+"/metrics")
	require.Equal(t, http.StatusUnauthorized, res.StatusCode, "the API listener's /metrics still needs the token")
	res, _ = get(t, h.URL()+"/metrics", "Authorization", "Bearer wrong")
	require.Equal(t, http.StatusUnauthorized, res.StatusCode)
	require.Contains(t, scrapeURL(t, h.URL()+"/metrics", "Authorization", "Bearer at"), "paprika_hub_uptime_seconds")

	base := strings.TrimSuffix(h.MetricsURL(), "/metrics")
	for _, path := range []string{"/jobs", "/workers", "/", "/ui/"} {
		res, _ := get(t, base+path)
		require.Equal(t, http.StatusNotFound, res.StatusCode, "metrics.listen serves %s", path)
	}
	st, _ := do(t, http.MethodPost, base+"/jobs", `{"mode":"noop"}`)
	require.Equal(t, http.StatusNotFound, st, "no API behind metrics.listen")
	st, _ = do(t, http.MethodPost, h.MetricsURL(), "")
	require.Equal(t, http.StatusMethodNotAllowed, st)
}

// Without metrics.listen there is no second listener.
func TestMetricsListenOffByDefault(t *testing.T) {
	h := startTestHub(t, testConfig(t))
	require.Empty(t, h.MetricsURL())
	require.Contains(t, scrapeURL(t, h.URL()+"/metrics"), "paprika_hub_uptime_seconds")
}
