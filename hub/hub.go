package hub

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"

	"github.com/paprika-hub/paprika/actors/dispatch"
	"github.com/paprika-hub/paprika/actors/grains"
	"github.com/paprika-hub/paprika/actors/link"
	"github.com/paprika-hub/paprika/actors/live"
	"github.com/paprika-hub/paprika/actors/logpipe"
	"github.com/paprika-hub/paprika/actors/supervise"
	"github.com/paprika-hub/paprika/actors/tunnel"
	"github.com/paprika-hub/paprika/api"
	"github.com/paprika-hub/paprika/config"
	"github.com/paprika-hub/paprika/internal/certs"
	"github.com/paprika-hub/paprika/internal/seal"
	"github.com/paprika-hub/paprika/membership"
	"github.com/paprika-hub/paprika/messages"
	"github.com/paprika-hub/paprika/metrics"
	"github.com/paprika-hub/paprika/persistence"
)

// Hub is one hub process. The API's requests that concern a job, a
// worker or a session go to the grains through the embedded Front.
type Hub struct {
	*grains.Front

	// fixed after New
	cfg    *config.Config
	log    *slog.Logger
	id     string
	stores *Stores
	deps   *grains.Deps

	// set by Start, read-only afterwards
	member     *membership.Member
	dispatch   *dispatch.Pool // the actors' goroutines; closed after the member stops
	logs       *logpipe.Router
	links      *link.Links
	tunnels    *tunnel.Ends
	live       *live.Actors
	sup        *actor.PID // parent of the local actors below
	reconciler *actor.PID
	beat       *actor.PID
	server     *http.Server
	listener   net.Listener
	// metricsServer serves /metrics alone on metrics.listen; nil without it.
	metricsServer   *http.Server
	metricsListener net.Listener
	metricsDone     chan struct{}
	pprof           *pprofServer // debug.pprof; nil when off
	started         time.Time
	serveDone       chan struct{}

	protocols protocolCache // /json/protocol per browser version (cdp.go)
	history   *history      // the console's charts (history.go); nil before Start

	lostCh   chan struct{}
	lostOnce sync.Once
	stopOnce sync.Once
	stopErr  error
}

// New opens the stores and prepares a hub; Start runs it.
func New(cfg *config.Config, log *slog.Logger) (*Hub, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	id := cfg.Hub.ID
	if id == "" {
		id = "hub-" + grains.RandomHex(3)
	}
	log = log.With(slog.String("hub_id", id))
	stores, err := OpenStores(context.Background(), cfg, log)
	if err != nil {
		return nil, err
	}
	h := &Hub{cfg: cfg, log: log, id: id, stores: stores, lostCh: make(chan struct{})}
	paramsKey, err := seal.ForCluster(cfg.Auth.ParamsKey, cfg.Auth.WorkerSecret, cfg.Auth.WorkerToken, cfg.Auth.APIToken)
	if err != nil {
		_ = stores.Close()
		return nil, err
	}
	if paramsKey.Builtin() {
		log.Info("proxy passwords in job params are sealed under the built-in key; set auth.params_key (or a token) to seal them under a secret")
	}
	h.deps = &grains.Deps{
		HubID:     id,
		Timing:    TimingFrom(cfg),
		Jobs:      stores.Jobs,
		Logs:      stores.Logs,
		Workers:   stores.Workers,
		Hubs:      stores.Hubs,
		Sessions:  stores.Sessions,
		Assets:    stores.Assets,
		Log:       log,
		Metrics:   metrics.NewMetrics(),
		ParamsKey: paramsKey,
	}
	if c, ok := stores.Jobs.(interface{ Commits() int64 }); ok {
		h.deps.Metrics.CountStoreCommits(c.Commits)
	}
	h.deps.Approvals = stores.Approvals // nil (approval off) unless auth.worker_approval
	h.deps.Tenants = tenantConfig(cfg)
	h.deps.Cluster = func() *cluster.Cluster { return h.member.Cluster }
	h.deps.LogRoute = func() grains.LogCloser { return h.logs }
	h.Front = grains.NewFront(h.deps)
	return h, nil
}

// dispatchThroughput is the messages a mailbox processes per turn
// (protoactor's default); dispatchIdle bounds the goroutines the hub keeps
// waiting for turns, about as many as mailboxes are busy at once under load.
const (
	dispatchThroughput = 300
	dispatchIdle       = 128
)

// moveSpread is how long a stopping hub takes to send its workers away when
// peers can take them: a reconnect storm on one survivor is worse than a
// few seconds of drain.
const moveSpread = 3 * time.Second

// TimingFrom maps the config onto the actors' timings.
func TimingFrom(cfg *config.Config) grains.Timing {
	return grains.Timing{
		HeartbeatInterval: cfg.Worker.HeartbeatInterval,
		AliveWindow:       cfg.Worker.AliveWindow,
		AssignGrace:       cfg.Scheduler.AssignGrace,
		DiskExcludePct:    float64(cfg.Scheduler.DiskExcludePct),
		Health: grains.HealthRule{MaxLaneRSSMB: int64(cfg.Scheduler.MaxLaneRSSMB), MaxLaneCrashes10m: cfg.Scheduler.MaxLaneCrashes10m,
			MaxLaneRestarts10m: cfg.Scheduler.MaxLaneRestarts10m, MinShmFreeMB: int64(cfg.Scheduler.MinShmFreeMB)},
		PriorityAging:     cfg.Scheduler.PriorityAging,
		AffinityWait:      cfg.Scheduler.AffinityWait,
		RetryBackoffMax:   cfg.Jobs.RetryBackoffMax,
		RedriveInterval:   cfg.Redrive.Interval,
		RedriveMinAge:     cfg.Redrive.MinAge,
		RedriveDisable:    cfg.Redrive.Disable,
		ReconcileInterval: cfg.Reconciler.Interval,
		OrphanGrace:       cfg.Reconciler.OrphanGrace,
		QueuedTimeout:     cfg.Reconciler.QueuedTimeout,
		FleetReadTimeout:  cfg.Reconciler.FleetReadTimeout,
		FleetCache:        cfg.Reconciler.FleetCache,
		LogBatchLines:     cfg.Logs.BatchLines,
		LogBatchWait:      cfg.Logs.BatchWait,
		LogBudgetLines:    200_000,
		GrainTimeout:      10 * time.Second,
		IdlePassivate:     30 * time.Second,
		FinalPassivate:    3 * time.Second,
		ForwardTimeout:    cfg.Cluster.ForwardTimeout,
		MemberTimeout:     cfg.Cluster.MemberTimeout,
		HubTTL:            cfg.Cluster.HubTTL,
		WorkerMaxLanes:    cfg.Limits.WorkerMaxLanes,
		CDPTunnels:        cfg.Limits.CDPTunnelsPerSession,

		SessionProfileWait: cfg.Scheduler.SessionProfileWait,
	}
}

// logDeps is what the log pipe takes of the grains' deps.
func logDeps(d *grains.Deps, l config.LimitsConfig) *logpipe.Deps {
	t := d.Timing
	holder := func(ctx context.Context, jobID string) (string, int, error) {
		j, err := d.Jobs.Get(ctx, jobID)
		return j.WorkerID, j.Attempts, err
	}
	return &logpipe.Deps{Logs: d.Logs, Log: d.Log, Metrics: d.Metrics, Now: d.Now, Holder: holder, Dispatcher: d.Dispatcher,
		Timing: logpipe.Timing{LogBatchLines: t.LogBatchLines, LogBatchWait: t.LogBatchWait,
			LogBudgetLines: t.LogBudgetLines, GrainTimeout: t.GrainTimeout, IdlePassivate: t.IdlePassivate,
			DonePassivate: t.FinalPassivate,
			MaxLines:      int64(l.MaxLogLines), MaxBytes: int64(l.MaxLogBytes), HolderTTL: t.OrphanGrace}}
}

// Lost is closed when this hub lost its cluster membership (it was frozen
// or cut off past the TTL and its peers dropped it): the process must exit
// and be restarted, since protoactor never lets a dropped member back in.
func (h *Hub) Lost() <-chan struct{} { return h.lostCh }

func (h *Hub) lost(err error) {
	h.deps.Metrics.ClusterMembershipLost.Inc()
	h.log.Error("cluster membership lost; this hub must restart", slog.Any("err", err))
	h.lostOnce.Do(func() { close(h.lostCh) })
}

// ID is the hub's cluster id.
func (h *Hub) ID() string { return h.id }

// Metrics exposes the hub's counters (tests, views).
func (h *Hub) Metrics() *metrics.Metrics { return h.deps.Metrics }

// URL is the base URL of the API once Start returned.
func (h *Hub) URL() string {
	if h.cfg.Hub.AdvertiseURL != "" {
		return h.cfg.Hub.AdvertiseURL
	}
	scheme := "http://"
	if h.cfg.Hub.TLSEnabled() {
		scheme = "https://"
	}
	return scheme + h.listener.Addr().String()
}

// loadHTTPTLS is the server side of hub.tls_cert/hub.tls_key, or nil when
// the hub serves plain HTTP. TLS 1.2 stays allowed: the port also serves
// browsers, curl and proxies, unlike the cluster port (1.3 only).
func (h *Hub) loadHTTPTLS() (*tls.Config, error) {
	if !h.cfg.Hub.TLSEnabled() {
		return nil, nil
	}
	// Validate loaded the pair already; it may have changed since.
	pair, err := tls.LoadX509KeyPair(h.cfg.Hub.TLSCert, h.cfg.Hub.TLSKey)
	if err != nil {
		return nil, fmt.Errorf("hub TLS (hub.tls_cert %s, hub.tls_key %s): %w", h.cfg.Hub.TLSCert, h.cfg.Hub.TLSKey, err)
	}
	return &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}, nil
}

// Start joins the cluster, starts the actors, re-arms stored jobs and
// serves HTTP. On error everything started is stopped again.
func (h *Hub) Start(ctx context.Context) (err error) {
	h.started = time.Now()
	httpTLS, err := h.loadHTTPTLS()
	if err != nil {
		_ = h.stores.Close()
		return err
	}
	ln, err := net.Listen("tcp", h.cfg.Hub.Listen)
	if err != nil {
		_ = h.stores.Close()
		return fmt.Errorf("listen on hub.listen %s: %w", h.cfg.Hub.Listen, err)
	}
	h.listener = ln
	if l := h.cfg.Metrics.Listen; l != "" {
		if h.metricsListener, err = net.Listen("tcp", l); err != nil {
			_ = ln.Close()
			_ = h.stores.Close()
			return fmt.Errorf("listen on metrics.listen %s: %w", l, err)
		}
	}
	if h.pprof, err = startPprof(h.cfg.Debug.Pprof, h.log); err != nil {
		_ = ln.Close()
		if h.metricsListener != nil {
			_ = h.metricsListener.Close()
		}
		_ = h.stores.Close()
		return err
	}
	closeListeners := func() {
		_ = ln.Close()
		if h.metricsListener != nil {
			_ = h.metricsListener.Close()
		}
		h.pprof.stop()
	}
	// Counted before net/http sees a connection: a client opening sockets
	// without end is refused at accept, not after a goroutine each.
	ln = api.LimitConnsPerIP(ln, h.cfg.Limits.MaxConnsPerIP)
	provider := h.cfg.Cluster.Provider
	if provider == membership.ProviderRedis && h.stores.Redis == nil {
		provider = membership.ProviderLocal // embedded: a one-member cluster
	}
	d := h.deps
	var clusterTLS certs.Cluster
	if h.cfg.Cluster.TLSEnabled() {
		// Validate loaded these already; they may have changed since.
		c, terr := certs.Load(h.cfg.Cluster.TLSCA, h.cfg.Cluster.TLSCert, h.cfg.Cluster.TLSKey)
		if terr != nil {
			closeListeners()
			_ = h.stores.Close()
			return fmt.Errorf("cluster TLS (cluster.tls_ca, cluster.tls_cert, cluster.tls_key): %w", terr)
		}
		clusterTLS = *c
	} else if h.cfg.Cluster.Insecure {
		h.log.Warn("cluster TLS is off (cluster.insecure): whoever reaches the cluster port can send this hub's actors any message",
			slog.String("cluster.host", h.cfg.Cluster.Host))
	}
	h.dispatch = dispatch.New(dispatchThroughput, dispatchIdle)
	d.Dispatcher = h.dispatch
	h.member, err = membership.Start(membership.Options{
		Dispatcher: h.dispatch,
		Name:       "paprika-" + strings.TrimSuffix(h.cfg.Redis.Prefix, ":"),
		Provider:   provider, Host: h.cfg.Cluster.Host, Port: h.cfg.Cluster.Port, Logger: h.log,
		Kinds: []*cluster.Kind{grains.NewWorkerKind(d), grains.NewJobKind(d), grains.NewSchedulerKind(d),
			grains.NewSessionKind(d), grains.NewLiveKind(d)},
		HandOverKinds:  []string{grains.KindScheduler},
		RequestTimeout: d.Timing.GrainTimeout,
		Redis:          h.stores.Redis, RedisPrefix: h.cfg.Redis.Prefix, HubTTL: h.cfg.Cluster.HubTTL,
		MemberTimeout:   h.cfg.Cluster.MemberTimeout,
		OnLost:          h.lost,
		ConsulAddress:   strings.TrimSpace(h.cfg.Cluster.ConsulAddress),
		EtcdEndpoints:   h.cfg.Cluster.EtcdEndpointList(),
		JoinTimeout:     h.cfg.Cluster.JoinTimeout,
		Peers:           h.cfg.Cluster.AutomanagedHostList(),
		AutomanagedPort: h.cfg.Cluster.AutomanagedPort,
		ServerTLS:       clusterTLS.Server,
		ClientTLS:       clusterTLS.Client,
	})
	if err != nil {
		h.dispatch.Close()
		closeListeners()
		_ = h.stores.Close()
		return fmt.Errorf("start cluster member: %w", err)
	}
	system := h.member.System
	supervise.CountRestarts(system, d.Metrics)
	grains.RegisterMetrics(system, d.Metrics)
	h.sup, _ = system.Root.SpawnNamed(newSupervisorProps(), "hub")
	spawn := spawner(system, h.sup)
	var errs []error
	var serr error
	if h.logs, serr = logpipe.Start(system, logDeps(d, h.cfg.Limits), spawn); serr == nil {
		h.links, serr = link.Start(system, d, h.logs, spawn)
	}
	errs = append(errs, serr)
	h.tunnels, serr = tunnel.Start(system, h.log, d.Metrics, spawn)
	errs = append(errs, serr)
	h.live, serr = live.Start(system, h.log, d.Metrics, spawn)
	errs = append(errs, serr)
	h.reconciler, serr = spawn(grains.NewReconcilerProps(d), "reconciler")
	errs = append(errs, serr)
	h.beat, serr = spawn(grains.NewHubBeatProps(d, h.URL, h.started), "hub-beat")
	errs = append(errs, serr)
	if err := errors.Join(errs...); err != nil {
		h.member.Stop(false)
		h.dispatch.Close()
		closeListeners()
		_ = h.stores.Close()
		return fmt.Errorf("start hub actors: %w", err)
	}
	d.Metrics.MarkStarted(h.started)
	d.Metrics.Fleet.SetSource(h.fleet, fleetScrapeTimeout)
	h.recover(ctx)
	h.history = newHistory(h)
	h.history.start()

	h.server = &http.Server{
		Handler: api.New(h, api.Options{
			APIToken: h.cfg.Auth.APIToken, WorkerToken: h.cfg.Auth.WorkerToken, WorkerSecret: h.cfg.Auth.WorkerSecret,
			AdvertiseURL:   h.cfg.Hub.AdvertiseURL,
			DefaultTimeout: h.cfg.Jobs.DefaultTimeout, MaxAttempts: h.cfg.Jobs.MaxAttempts, Logger: h.log,
			FaultInjection: h.cfg.Debug.FaultInjection,
			ParamsKey:      h.deps.ParamsKey,
			Tenants:        apiTenants(h.cfg, h.deps.Tenants),
			History:        h.history,
			Limits: api.Limits{
				MaxParamsBytes: h.cfg.Limits.MaxParamsBytes, MaxLabels: h.cfg.Limits.MaxLabels,
				MaxLabelKeyBytes: h.cfg.Limits.MaxLabelKeyBytes, MaxLabelValueBytes: h.cfg.Limits.MaxLabelValueBytes,
				MaxQueued: h.cfg.Limits.MaxQueued, APIRate: h.cfg.Limits.APIRate, APIBurst: h.cfg.Limits.APIBurst,
				MaxAssetBytes: int64(h.cfg.Limits.MaxAssetBytes), MaxSessionDownloads: h.cfg.Limits.MaxSessionDownloads,
				MaxListBytes: h.cfg.Limits.MaxListBytes,
			},
		}),
		ReadHeaderTimeout: 10 * time.Second,
		// No ReadTimeout or WriteTimeout: they would cut worker links, big
		// asset uploads and log follows; the API bounds JSON bodies and
		// each follow event itself (api/conns.go).
		IdleTimeout: api.IdleTimeout,
		ErrorLog:    slog.NewLogLogger(h.log.Handler(), slog.LevelWarn),
		TLSConfig:   httpTLS,
	}
	h.serveDone = make(chan struct{})
	go func() {
		defer close(h.serveDone)
		serve := h.server.Serve
		if httpTLS != nil {
			// ServeTLS rather than a tls.Listener: it also offers HTTP/2 to
			// clients that ask for it. Worker links stay HTTP/1.1 (the
			// WebSocket dialer does not offer h2), so their upgrade works.
			serve = func(ln net.Listener) error { return h.server.ServeTLS(ln, "", "") }
		}
		if err := serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			h.log.Error("http server stopped", slog.Any("err", err))
		}
	}()
	h.serveMetrics()
	h.log.Info("hub started", slog.String("url", h.URL()), slog.String("cluster_address", h.member.Address()),
		slog.Any("stores", h.stores.Kinds))
	return nil
}

// recover re-arms what the store holds: every queued job is enqueued and
// every running job gets its deadline back. Running jobs are not failed
// here: their workers keep them running and report after reconnecting; the
// reconciler fails those whose worker stays away past the grace — which
// also keeps a new hub from failing jobs its live peers own.
func (h *Hub) recover(ctx context.Context) {
	cl := h.member.Cluster
	// Activate the scheduler now so it rebuilds its view before the first job.
	if pid := cl.Get(grains.SchedulerID, grains.KindScheduler); pid != nil {
		cl.ActorSystem.Root.Send(pid, &messages.SchedGetStats{})
	}
	n := 0
	// Bounded by ctx alone, as Start is: recovery reads every running job.
	q := persistence.ListQuery{Status: persistence.StatusRunning, Limit: 500, OldestFirst: true}
	for j, err := range persistence.AllJobs(ctx, h.stores.Jobs, q) {
		if err != nil {
			h.log.Warn("recovery read failed; the reconciler will catch up", slog.Any("err", err))
			break
		}
		if pid := cl.Get(j.ID, grains.KindJob); pid != nil {
			cl.ActorSystem.Root.Send(pid, grains.EnsureMessage())
			n++
		}
	}
	if n > 0 {
		h.log.Info("re-armed running jobs from the store", slog.Int("jobs", n))
	}
}

// Stop shuts the hub down in order; safe to call twice and before Start.
// Order (asynq's server.go explains why order matters): stop taking
// requests and links → ask the workers to move, spread over a few seconds
// when peers can take them (their jobs keep running and report there) →
// flush the log streams → stop the timers → leave the cluster, handing
// grains over → close the stores last.
func (h *Hub) Stop(ctx context.Context) error {
	h.stopOnce.Do(func() {
		if h.links != nil {
			h.links.Refuse()
		}
		if h.member == nil {
			h.stopErr = h.stores.Close()
			return
		}
		root := h.member.System.Root
		// CDP clients first, with 1001 and a reason: they reconnect to
		// their cdp_url through another hub while this one drains.
		h.tunnels.Stop(tunnelStopWait)
		h.live.Stop(tunnelStopWait)
		if h.server != nil {
			sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			_ = h.server.Shutdown(sctx) // hijacked links are not waited for
			cancel()
			<-h.serveDone
		}
		if h.metricsServer != nil {
			sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			_ = h.metricsServer.Shutdown(sctx)
			cancel()
			<-h.metricsDone
		}
		h.pprof.stop()
		spread := time.Duration(0)
		if h.member.Cluster.MemberList.Length() > 1 {
			spread = moveSpread
		}
		owned := h.ownedWorkers(ctx)
		h.links.Stop(spread)
		if h.history != nil {
			h.history.stop()
		}
		h.settleWorkerGrains(ctx, owned)
		if err := h.logs.Drain(15 * time.Second); err != nil {
			h.log.Warn("log drain incomplete", slog.Any("err", err))
		}
		_ = root.PoisonFuture(h.reconciler).Wait()
		_ = root.PoisonFuture(h.beat).Wait()
		_ = root.PoisonFuture(h.sup).Wait()
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_ = h.stores.Hubs.Remove(rctx, h.id)
		cancel()
		// Handing grains over only matters when another member can take
		// them; alone, a graceful leave just sleeps.
		h.member.Stop(h.member.Cluster.MemberList.Length() > 1)
		h.dispatch.Close()
		h.stopErr = h.stores.Close()
		h.log.Info("hub stopped")
	})
	return h.stopErr
}

// Link implements api.Backend: the worker link's upgrade.
func (h *Hub) Link(w http.ResponseWriter, r *http.Request, workerID string) {
	h.links.Accept(w, r, workerID)
}

// MetricsHandler implements api.Backend.
func (h *Hub) MetricsHandler() http.Handler { return h.deps.Metrics.Handler() }
