package metrics

import (
	"context"
	"errors"
	"fmt"
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
	m.JobDuration.WithLabelValues("noop").Observe(1)
	m.GrainRequest.WithLabelValues("job").Observe(0.01)
	m.GrainMessages.WithLabelValues("job", "send", "local").Inc()
	m.TenantWait.WithLabelValues("").Observe(1)
	m.SchedHealthSkips.WithLabelValues("shm_low").Inc()
	m.Fleet.SetSource(func(context.Context) (Fleet, error) {
		return Fleet{QueueDepth: map[string]int{"noop": 1}, InFlight: map[string]int{"w1": 1}, HubMembers: 1,
			Tenants: map[string]TenantLoad{"": {Queued: 1}}}, nil
	}, 0)

	live := liveFields(m)
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
	// The fleet collector is one field of eight families.
	require.Equal(t, collectorFields(m)-1+len(fleetFamilies)+live, n, "every declared family is exposed")
	for _, name := range fleetFamilies {
		require.Contains(t, fams, name)
	}
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

var fleetFamilies = []string{"paprika_queue_depth", "paprika_workers_alive", "paprika_lanes", "paprika_worker_in_flight",
	"paprika_worker_series_dropped", "paprika_sessions_open", "paprika_hub_members", "paprika_fleet_scrape_errors_total",
	"paprika_tenant_queued", "paprika_tenant_running"}

func TestMetricsFleetCapsWorkerSeries(t *testing.T) {
	m := NewMetrics()
	in := map[string]int{}
	for i := range MaxWorkerSeries + 5 {
		in[fmt.Sprintf("w%d", i)] = 1
	}
	m.Fleet.SetSource(func(context.Context) (Fleet, error) {
		return Fleet{InFlight: in, Dropped: 2, WorkersAlive: len(in), LanesBusy: 3, LanesFree: 4}, nil
	}, 0)
	_, fams := scrape(t, m)
	require.Len(t, fams["paprika_worker_in_flight"].GetMetric(), MaxWorkerSeries)
	require.EqualValues(t, 7, m.Get("paprika_worker_series_dropped"), "over the cap plus what the source dropped")
	require.EqualValues(t, 3, m.Get("paprika_lanes", "state=busy"))
	require.EqualValues(t, 4, m.Get("paprika_lanes", "state=free"))

	// A worker gone from the source is gone from the next scrape.
	in = map[string]int{"w1": 2}
	_, fams = scrape(t, m)
	require.Len(t, fams["paprika_worker_in_flight"].GetMetric(), 1)
	require.EqualValues(t, 2, m.Get("paprika_worker_in_flight", "worker=w1"))
}

func TestMetricsFleetReadFailureLeavesGaugesOut(t *testing.T) {
	m := NewMetrics()
	m.Fleet.SetSource(func(ctx context.Context) (Fleet, error) {
		<-ctx.Done() // a scheduler that never answers
		return Fleet{HubMembers: 2, SessionsOpen: -1}, errors.New("scheduler stats: timeout")
	}, 50*time.Millisecond)
	_, fams := scrape(t, m)
	require.NotContains(t, fams, "paprika_queue_depth")
	require.NotContains(t, fams, "paprika_sessions_open")
	require.EqualValues(t, 2, m.Get("paprika_hub_members"), "local numbers still reported")
	require.EqualValues(t, 3, m.Get("paprika_fleet_scrape_errors_total"), "one per gather: the scrape and both Gets, this one included")
}
