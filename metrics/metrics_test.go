package metrics

import (
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
)

// scrape reads m's handler the way a Prometheus server would and parses the
// answer back with the library's parser.
func scrape(t *testing.T, m *Metrics) (string, map[string]*dto.MetricFamily) {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	require.Equal(t, http.StatusOK, rec.Code)
	require.True(t, strings.HasPrefix(rec.Header().Get("Content-Type"), "text/plain; version=0.0.4"), rec.Header().Get("Content-Type"))
	body, err := io.ReadAll(rec.Body)
	require.NoError(t, err)
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
	require.NoError(t, err)
	return string(body), fams
}

// collectorFields counts the families Metrics declares, so a family added
// without a use below (a labelled family shows only once used) fails here
// instead of going unchecked.
func collectorFields(m *Metrics) int {
	n := 0
	v := reflect.ValueOf(m).Elem()
	for i := range v.NumField() {
		if v.Type().Field(i).IsExported() {
			if _, ok := v.Field(i).Interface().(prometheus.Collector); ok {
				n++
			}
		}
	}
	return n
}

func TestMetricsEveryFamilyHasHelp(t *testing.T) {
	m := NewMetrics()
	m.MarkStarted(time.Now().Add(-90 * time.Second))
	m.JobsSubmitted.WithLabelValues("pool").Inc()
	m.JobsFinished.WithLabelValues("succeeded", "").Inc()
	m.FencedReports.WithLabelValues("log").Inc()
	m.LogLinesRefused.WithLabelValues("lines").Inc()
	m.ActorPanics.WithLabelValues("job").Inc()
	m.ActorSupervision.WithLabelValues("RestartDirective").Inc()

	text, fams := scrape(t, m)
	n := 0
	for name, f := range fams {
		if !strings.HasPrefix(name, "paprika_") {
			continue
		}
		n++
		require.NotEmpty(t, f.GetHelp(), name)
		require.Contains(t, text, "# HELP "+name+" "+f.GetHelp()+"\n", name)
	}
	require.Equal(t, collectorFields(m), n, "every declared family is exposed")
	require.Contains(t, fams, "go_goroutines", "Go collector registered")
	require.Contains(t, fams, "process_start_time_seconds", "process collector registered")
	up := m.Get("paprika_hub_uptime_seconds")
	require.True(t, up >= 90 && up < 120, "uptime counts from MarkStarted: %d", up)
	require.EqualValues(t, 1, m.Get("paprika_jobs_submitted_total", "mode=pool"))
}

func TestMetricsLabelValuesEscaped(t *testing.T) {
	m := NewMetrics()
	reason := "a \"quoted\" back\\slash\nand a newline"
	m.JobsFinished.WithLabelValues("failed", reason).Add(2)

	text, fams := scrape(t, m)
	require.Contains(t, text, `reason="a \"quoted\" back\\slash\nand a newline"`, "escaped in the text, one line per sample")
	f := fams["paprika_jobs_finished_total"]
	require.NotNil(t, f)
	require.Len(t, f.GetMetric(), 1)
	got := map[string]string{}
	for _, l := range f.GetMetric()[0].GetLabel() {
		got[l.GetName()] = l.GetValue()
	}
	require.Equal(t, map[string]string{"status": "failed", "reason": reason}, got, "parses back to the value counted")
	require.EqualValues(t, 2, f.GetMetric()[0].GetCounter().GetValue())

	require.EqualValues(t, 2, m.Get("paprika_jobs_finished_total", "status=failed", "reason="+reason))
	require.Zero(t, m.Get("paprika_jobs_finished_total", "status=failed"), "a series is named by all its labels")
	require.Zero(t, (*Metrics)(nil).Get("paprika_jobs_finished_total"))
}
