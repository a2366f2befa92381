package metrics

import (
	"cmp"
	"maps"
	"slices"

	"github.com/prometheus/client_golang/prometheus"
)

// MaxTenantSeries bounds the tenant label of paprika_tenant_queued,
// paprika_tenant_running and paprika_tenant_wait_seconds: the tenants the
// config names (scheduler.tenant_weights, scheduler.tenant_quotas) always
// have their own series; besides them, the gauges show the MaxTenantSeries
// tenants with the most jobs at each scrape and the histogram the first
// MaxTenantSeries tenants the scheduler placed; every other tenant is
// counted under OtherTenant.
const MaxTenantSeries = 20

// OtherTenant is the tenant label of the tenants past MaxTenantSeries.
const OtherTenant = "other"

// TenantLoad is one tenant series of a scrape.
type TenantLoad struct {
	Queued, Running int
}

func newTenantWait(histVec func(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec) *prometheus.HistogramVec {
	return histVec("paprika_tenant_wait_seconds",
		"Seconds a job waited from its submission to the scheduler placing it, by tenant (tenants the config names, the first 20 others, the rest as \"other\"; \"\" is the default tenant).",
		waitBuckets, "tenant")
}

// TenantLabels maps tenants to bounded label values for one observer (the
// scheduler grain; not safe for concurrent use).
type TenantLabels struct {
	known map[string]bool
	extra int
}

// NewTenantLabels labels the named tenants as themselves, then the first
// MaxTenantSeries others.
func NewTenantLabels(named []string) *TenantLabels {
	l := &TenantLabels{known: map[string]bool{}}
	for _, t := range named {
		l.known[t] = true
	}
	return l
}

// Label is tenant's label value.
func (l *TenantLabels) Label(tenant string) string {
	if l.known[tenant] {
		return tenant
	}
	if l.extra < MaxTenantSeries {
		l.extra++
		l.known[tenant] = true
		return tenant
	}
	return OtherTenant
}

// TopTenants yields the n tenants of counts with the most jobs (ties by
// name), largest first.
func TopTenants(counts map[string]int, n int) func(yield func(string, int) bool) {
	return func(yield func(string, int) bool) {
		if len(counts) <= n {
			for t, c := range counts {
				if !yield(t, c) {
					return
				}
			}
			return
		}
		keys := slices.SortedFunc(maps.Keys(counts), func(a, b string) int {
			return cmp.Or(cmp.Compare(counts[b], counts[a]), cmp.Compare(a, b))
		})
		for _, t := range keys[:n] {
			if !yield(t, counts[t]) {
				return
			}
		}
	}
}

// BoundTenants folds per-tenant queued and running counts into at most
// len(named) + MaxTenantSeries + 1 series: the named tenants, the
// MaxTenantSeries others with the most jobs, and OtherTenant.
func BoundTenants(named []string, queued, running map[string]int) map[string]TenantLoad {
	total := map[string]int{}
	for t, n := range queued {
		total[t] += n
	}
	for t, n := range running {
		total[t] += n
	}
	keep := map[string]bool{}
	for _, t := range named {
		keep[t] = true
		delete(total, t)
	}
	for t := range TopTenants(total, MaxTenantSeries) {
		keep[t] = true
	}
	out := map[string]TenantLoad{}
	for _, t := range named {
		out[t] = TenantLoad{}
	}
	add := func(t string, q, r int) {
		if !keep[t] {
			t = OtherTenant
		}
		l := out[t]
		l.Queued, l.Running = l.Queued+q, l.Running+r
		out[t] = l
	}
	for t, n := range queued {
		add(t, n, 0)
	}
	for t, n := range running {
		add(t, 0, n)
	}
	return out
}

// tenantDescs are the per-tenant gauges of the fleet collector.
type tenantDescs struct{ queued, running *prometheus.Desc }

func newTenantDescs() tenantDescs {
	return tenantDescs{
		queued: prometheus.NewDesc("paprika_tenant_queued",
			"Queued jobs per tenant in the scheduler (cluster-wide; the tenant label is bounded, see paprika_tenant_wait_seconds).", []string{"tenant"}, nil),
		running: prometheus.NewDesc("paprika_tenant_running",
			"Jobs being placed or running per tenant, as the scheduler counts them for max_running (cluster-wide; bounded tenant label).", []string{"tenant"}, nil),
	}
}

func (d tenantDescs) describe(ch chan<- *prometheus.Desc) {
	ch <- d.queued
	ch <- d.running
}

func (d tenantDescs) collect(ch chan<- prometheus.Metric, tenants map[string]TenantLoad) {
	for t, l := range tenants {
		ch <- prometheus.MustNewConstMetric(d.queued, prometheus.GaugeValue, float64(l.Queued), t)
		ch <- prometheus.MustNewConstMetric(d.running, prometheus.GaugeValue, float64(l.Running), t)
	}
}
