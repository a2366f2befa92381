package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/paprika-hub/paprika/actors/grains"
	"github.com/paprika-hub/paprika/api"
	"github.com/paprika-hub/paprika/messages"
	"github.com/paprika-hub/paprika/metrics"
	"github.com/paprika-hub/paprika/persistence"
)

// fleetScrapeTimeout bounds one scrape's read of the fleet: well inside
// Prometheus's default 10 s scrape timeout, so a slow scheduler costs the
// fleet gauges of one scrape, never the whole scrape.
const fleetScrapeTimeout = 2 * time.Second

// maxSessionPages bounds the session count a scrape makes (each page is
// persistence.MaxSessionListLimit records); sessions hold lanes, so a
// fleet rarely has more than a page.
const maxSessionPages = 20

// serveMetrics serves /metrics alone on metrics.listen, without the API
// token: Prometheus scrapes there. It carries no API, so an address open
// to the network exposes numbers and worker ids only.
func (h *Hub) serveMetrics() {
	if h.metricsListener == nil {
		return
	}
	if host, _, err := net.SplitHostPort(h.cfg.Metrics.Listen); err == nil && !isLoopbackHost(host) {
		h.log.Warn("metrics.listen is not a loopback address: /metrics is served there without a token (metrics only, no API)",
			slog.String("metrics.listen", h.cfg.Metrics.Listen))
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", h.deps.Metrics.Handler())
	h.metricsServer = &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       api.IdleTimeout,
		ErrorLog:          slog.NewLogLogger(h.log.Handler(), slog.LevelWarn),
	}
	h.metricsDone = make(chan struct{})
	go func() {
		defer close(h.metricsDone)
		if err := h.metricsServer.Serve(h.metricsListener); err != nil && !errors.Is(err, http.ErrServerClosed) {
			h.log.Error("metrics server stopped", slog.Any("err", err))
		}
	}()
	h.log.Info("metrics served", slog.String("url", h.MetricsURL()))
}

// MetricsURL is the URL of /metrics on metrics.listen once Start
// returned, or "" when metrics.listen is not set.
func (h *Hub) MetricsURL() string {
	if h.metricsListener == nil {
		return ""
	}
	return "http://" + h.metricsListener.Addr().String() + "/metrics"
}

func isLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// fleet reads the fleet gauges for a scrape: the scheduler grain's view
// (one grain request), the session store's count and the member list.
func (h *Hub) fleet(ctx context.Context) (metrics.Fleet, error) {
	f := metrics.Fleet{HubMembers: h.member.Cluster.MemberList.Length(), SessionsOpen: -1}
	if n, err := h.countSessions(ctx); err == nil {
		f.SessionsOpen = n
	}
	r, err := grains.CallContext(ctx, h.member.Cluster, grains.SchedulerID, grains.KindScheduler,
		&messages.SchedGetStats{}, fleetScrapeTimeout)
	if err != nil {
		return f, fmt.Errorf("scheduler stats: %w", err)
	}
	if !r.Ok {
		return f, fmt.Errorf("scheduler stats: %s: %s", r.Code, r.Message)
	}
	var st grains.SchedStats
	if err := json.Unmarshal(r.Json, &st); err != nil {
		return f, fmt.Errorf("scheduler stats: %w", err)
	}
	f.QueueDepth, f.InFlight, f.Dropped = st.QueuedByMode, st.InFlight, st.Dropped
	f.WorkersAlive, f.LanesBusy, f.LanesFree = st.WorkersAlive, st.LanesBusy, st.LanesFree
	f.Tenants = metrics.BoundTenants(st.TenantNames, st.QueuedByTenant, st.RunningByTenant)
	return f, nil
}

func (h *Hub) countSessions(ctx context.Context) (int, error) {
	n := 0
	q := persistence.SessionListQuery{Limit: persistence.MaxSessionListLimit}
	for range maxSessionPages {
		recs, next, err := h.stores.Sessions.List(ctx, q)
		if err != nil {
			return 0, err
		}
		n += len(recs)
		if next == "" {
			return n, nil
		}
		q.Cursor = next
	}
	return 0, fmt.Errorf("more than %d sessions: not counted", maxSessionPages*persistence.MaxSessionListLimit)
}
