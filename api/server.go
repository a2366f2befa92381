package api

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"log/slog"
	"net/http"
	"time"

	"github.com/paprika-hub/paprika/internal/credential"
	"github.com/paprika-hub/paprika/internal/seal"
	"github.com/paprika-hub/paprika/messages"
	"github.com/paprika-hub/paprika/persistence"
)

// Backend is what the API needs from the hub.
type Backend interface {
	Submit(ctx context.Context, j persistence.Job) (job persistence.Job, created bool, err error)
	Job(ctx context.Context, id string) (persistence.Job, error)
	Jobs(ctx context.Context, q persistence.ListQuery) ([]persistence.Job, string, error)
	Cancel(ctx context.Context, id string) (persistence.Job, error)
	// Retry runs a failed job again under a new attempt (POST
	// /jobs/{id}/retry); a job that is not failed is a 409 not_failed.
	Retry(ctx context.Context, id string) (persistence.Job, error)
	Logs() persistence.LogStore
	Assets() persistence.AssetStore
	Workers(ctx context.Context) ([]persistence.WorkerInfo, error)
	SetWorkerStatus(ctx context.Context, id, status string) (persistence.WorkerInfo, error)
	// PatchWorker applies PATCH /workers/{id}: the status, the slot cap, or both.
	PatchWorker(ctx context.Context, id string, p WorkerPatch) (persistence.WorkerInfo, error)
	Hubs(ctx context.Context) ([]persistence.HubInfo, error)
	// Sessions: each returns the session object (or a command's result) as
	// JSON, whichever hub holds the session.
	// OpenSession's opts (browser options, checked) travel to the worker
	// in the session's open command; they are not stored.
	OpenSession(ctx context.Context, labels map[string]string, idleTimeoutS int, opts messages.BrowserOptions) (json.RawMessage, error)
	Session(ctx context.Context, id string) (json.RawMessage, error)
	SessionCommand(ctx context.Context, id string, command json.RawMessage) (json.RawMessage, error)
	CloseSession(ctx context.Context, id string) (json.RawMessage, error)
	// ListSessions is one page of the open sessions (GET /sessions), each
	// a session object, and the next page's cursor ("" on the last).
	ListSessions(ctx context.Context, q persistence.SessionListQuery) ([]json.RawMessage, string, error)
	// OpenCDP asks the session's grain for a CDP tunnel (the gateway; any
	// hub, whichever holds the worker); refusals come before any upgrade.
	OpenCDP(ctx context.Context, o CDPOpen) (CDPTunnel, error)
	// AttachCDP claims tunnelID for worker workerID's tunnel socket.
	AttachCDP(ctx context.Context, workerID, tunnelID string) (CDPTunnel, error)
	// OpenLive joins a viewer to the lane's screencast (live.go); the
	// answer upgrades the viewer's socket like a CDP tunnel.
	OpenLive(ctx context.Context, o LiveOpen) (CDPTunnel, error)
	// AttachLive claims screencast liveID for worker workerID's socket.
	AttachLive(ctx context.Context, workerID, liveID string) (CDPTunnel, error)
	// SessionTargets is the lane's target list (Chromium's /json/list).
	SessionTargets(ctx context.Context, id string) (json.RawMessage, error)
	// SessionProtocol is the lane browser's protocol description
	// (Chromium's /json/protocol); 410 for a session no longer open.
	SessionProtocol(ctx context.Context, id string) (json.RawMessage, error)
	// URL is this hub's base URL (hub.advertise_url, else the listener's).
	URL() string
	// InjectPanic makes one actor panic (fault injection, only routed when
	// Options.FaultInjection is set).
	InjectPanic(ctx context.Context, kind, id string) error
	// Link takes over an authenticated worker-link request (WebSocket).
	Link(w http.ResponseWriter, r *http.Request, workerID string)
	// Ready reports each store's reachability (nil = reachable).
	Ready(ctx context.Context) map[string]error
	// WaitingFor names what a job of mode needs that no alive worker has
	// ("a worker with a chromium lane"), or "" when some alive worker could
	// run it (busy or not). It reads the fleet-wide view, cached briefly.
	WaitingFor(ctx context.Context, mode string) (string, error)
	// Load is the fleet's load (limits.max_queued, tenant quotas, GET
	// /pressure). It may cross hubs: the API calls it at most once a
	// second (queueGate).
	Load(ctx context.Context) (Load, error)
	// ProfilesBackend: which job holds each profile (profiles.go).
	ProfilesBackend
	// ModesBackend: the fleet's modes (GET /modes, custom params checks).
	ModesBackend
	// MetricsHandler serves /metrics: the metrics library negotiates the
	// exposition format and sets the content type, so the API adds only
	// its token check.
	MetricsHandler() http.Handler
}

// Options configure the API.
type Options struct {
	APIToken    string // bearer token for the API; "" = open
	WorkerToken string // bearer token for worker links; "" = open
	// WorkerSecret, when set, admits a worker only with its own credential
	// (auth.worker_secret); WorkerToken is then refused.
	WorkerSecret string
	// AdvertiseURL is hub.advertise_url: its host is, besides loopback
	// names and IP addresses, the Host an open hub answers (guardHost).
	AdvertiseURL   string
	DefaultTimeout time.Duration
	MaxAttempts    int
	Logger         *slog.Logger
	// FaultInjection routes POST /debug/panic (config debug.fault_injection).
	FaultInjection bool
	// Limits are config's limits section; zero fields take its defaults.
	Limits Limits
	// BodyReadTimeout bounds reading a JSON request body; 0 = 30s.
	BodyReadTimeout time.Duration
	// FollowWriteTimeout bounds writing one event of a log follow; a
	// follower that does not take it in time is dropped. 0 = 10s.
	FollowWriteTimeout time.Duration
	// Tenants are the tenant options of POST /jobs (api/tenants.go).
	Tenants TenantOptions
	// ParamsKey seals a job's proxy password before it is stored (the
	// job grains open it with the same key). nil: the key seal.ForCluster
	// derives from the tokens above.
	ParamsKey *seal.Key
	// History serves GET /stats/history (the console's charts); nil
	// answers 404.
	History HistorySource
}

// Server routes the HTTP API to a Backend.
type Server struct {
	b       Backend
	opts    Options
	mux     *http.ServeMux
	handler http.Handler // mux behind guardHost
	log     *slog.Logger
	limits  Limits // opts.Limits with the defaults filled in
	queue   queueGate
	rates   *rateLimiter // nil: limits.api_rate is off
	schemas schemaCache  // declared params schemas, compiled once each
}

// maxBodyBytes bounds a request body (a job's params included).
const maxBodyBytes = 1 << 20

// New builds the handler.
func New(b Backend, o Options) *Server {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.ParamsKey == nil {
		k, err := seal.ForCluster("", o.WorkerSecret, o.WorkerToken, o.APIToken)
		if err != nil {
			panic(err) // HKDF of a fixed size and AES-256 cannot fail
		}
		o.ParamsKey = k
	}
	s := &Server{b: b, opts: o, mux: http.NewServeMux(), log: o.Logger, limits: o.Limits.withDefaults()}
	if s.limits.APIRate > 0 {
		s.rates = newRateLimiter(s.limits.APIRate, s.limits.APIBurst)
	}
	api := func(pattern string, h http.HandlerFunc) {
		var next http.Handler = h
		if stateChanging(pattern) {
			next = requireJSON(s.boundBodyRead(next))
		}
		// Rate before auth: guessing tokens costs requests too.
		s.mux.Handle(pattern, s.limitRate(s.auth(o.APIToken, next)))
	}
	api("POST /jobs", s.submit)
	api("GET /pressure", s.getPressure)
	api("POST /jobs:batch", s.submitBatch) // jobs_batch.go
	api("GET /jobs", s.list)
	api("GET /jobs/{id}", s.get)
	api("POST /jobs/{id}/cancel", s.cancel)
	api("POST /jobs/{id}/retry", s.retry)
	// ?token= too: the console follows a log with an EventSource.
	s.mux.Handle("GET /jobs/{id}/logs", s.queryTokenAuth(s.logs))
	// {name...}: an asset name may sit in the downloads folder.
	api("GET /jobs/{id}/assets/{name...}", s.asset)
	api("GET /workers", s.workers)
	api("PATCH /workers/{id}", s.patchWorker)
	api("GET /hubs", s.hubs)
	api("GET /stats/history", s.statsHistory)
	api("GET /modes", s.modes)
	api("POST /sessions", s.openSession)
	api("GET /sessions", s.listSessions)
	api("GET /sessions/{id}", s.getSession)
	api("DELETE /sessions/{id}", s.closeSession)
	api("POST /sessions/{id}/commands", s.sessionCommand)
	api("GET /sessions/{id}/downloads", s.sessionDownloads)
	api("GET /sessions/{id}/downloads/{name}", s.sessionDownload)
	api("GET /metrics", b.MetricsHandler().ServeHTTP)
	s.cdpRoutes()
	s.liveRoutes()
	s.profileRoutes(api) // profiles.go
	if o.FaultInjection {
		api("POST /debug/panic", s.injectPanic)
	}
	s.mux.Handle("GET /workers/{id}/link", s.workerAuth(s.link))
	// Workers upload the files a job produced (screenshots, HTML) here, with
	// their credential (or the worker token), before they report the job
	// done. The body's own content type is the asset's, so requireJSON does
	// not apply; an open worker link is refused off loopback by config
	// (auth.insecure).
	s.mux.Handle("PUT /jobs/{id}/assets/{name...}", s.workerAuth(s.putAsset))
	// The same for the files a session's pages download, from the worker
	// holding the session only (downloads.go).
	s.mux.Handle("PUT /sessions/{id}/downloads/{name}", s.workerAuth(s.putSessionDownload))
	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	s.mux.HandleFunc("GET /readyz", s.ready)
	s.mux.HandleFunc("GET /ui/", s.ui)
	s.mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/ui/", http.StatusFound)
	})
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, Errorf(http.StatusNotFound, "no_route", "no route for %s %s", r.Method, r.URL.Path))
	})
	s.handler = s.guardHost(s.mux)
	return s
}

// ServeHTTP serves the API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// auth checks a bearer token in constant time; an empty token means open
// (the embedded default on 127.0.0.1; the README says so).
func (s *Server) auth(token string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if token != "" && !hasToken(r, token) {
			writeError(w, Errorf(http.StatusUnauthorized, "unauthorized", "a valid bearer token is required"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// hasToken reports whether r carries the bearer token (compared in
// constant time); token must not be empty.
func hasToken(r *http.Request, token string) bool {
	got, ok := bearerToken(r.Header.Get("Authorization"))
	return ok && subtle.ConstantTimeCompare([]byte(got), []byte(token)) == 1
}

func (s *Server) link(w http.ResponseWriter, r *http.Request, workerID string) {
	id := r.PathValue("id")
	if !validID(id) {
		writeError(w, Errorf(http.StatusBadRequest, "bad_id", "worker id %q: use 1-64 of A-Z a-z 0-9 _ -", id))
		return
	}
	if workerID != "" && workerID != id {
		writeError(w, Errorf(http.StatusUnauthorized, "unauthorized", "this credential is not worker %s's", id))
		return
	}
	s.b.Link(w, r, id)
}

// ready answers /readyz, open to probes. A store's error text may hold
// addresses, user names or driver internals, so an unauthenticated caller
// learns only which store is down; the error itself goes to the log, and
// to a caller presenting the API token.
func (s *Server) ready(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	res := s.b.Ready(ctx)
	details := s.opts.APIToken != "" && hasToken(r, s.opts.APIToken)
	body := map[string]any{}
	status, overall := http.StatusOK, "ready"
	for name, err := range res {
		if err != nil {
			s.log.Warn("readiness: store unreachable", "store", name, "err", err)
			body[name] = "unavailable"
			if details {
				body[name] = err.Error()
			}
			status, overall = http.StatusServiceUnavailable, "not_ready"
		} else {
			body[name] = "ok"
		}
	}
	if status != http.StatusOK {
		w.Header().Set("Retry-After", retryAfterSeconds)
	}
	writeJSON(w, status, map[string]any{"status": overall, "checks": body})
}

func (s *Server) injectPanic(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if err := s.b.InjectPanic(r.Context(), q.Get("kind"), q.Get("id")); err != nil {
		writeError(w, Errorf(http.StatusBadRequest, "bad_fault", "%v", err))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// validID accepts the ids the hub hands out and worker ids: short, URL-safe.
func validID(id string) bool { return credential.ValidID(id) }
