package config

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/paprika-hub/paprika/internal/certs"
	"github.com/paprika-hub/paprika/internal/credential"
	"github.com/paprika-hub/paprika/internal/seal"
)

// Validate checks every key and the rules between keys and returns all
// problems at once (errors.Join of *KeyError, in config.yaml order), or nil.
// Each problem names the YAML key and what is allowed. Run it after the last
// Set, since flags may repair or break what the file and env gave.
func (c *Config) Validate() error {
	var errs []error
	add := func(key, msg string) {
		origin := c.Origin(key)
		if origin == "default" {
			origin = ""
		}
		errs = append(errs, &KeyError{Key: key, Msg: msg, Origin: origin})
	}
	for _, f := range fields {
		if check := fieldChecks[f.key]; check != nil {
			if msg := check(c); msg != "" {
				add(f.key, msg)
			}
		}
	}
	for _, rule := range crossChecks {
		if key, msg := rule(c); msg != "" {
			add(key, msg)
		}
	}
	return errors.Join(errs...)
}

// fieldChecks holds the checks that look at one key only. Set runs the
// key's check at once; Validate runs them all.
var fieldChecks = map[string]func(c *Config) string{
	"hub.listen":        func(c *Config) string { return checkListen(c.Hub.Listen) },
	"hub.id":            func(c *Config) string { return checkID(c.Hub.ID) },
	"hub.advertise_url": func(c *Config) string { return checkHTTPURL(c.Hub.AdvertiseURL) },
	"metrics.listen": func(c *Config) string {
		if c.Metrics.Listen == "" {
			return ""
		}
		return checkListen(c.Metrics.Listen)
	},

	"debug.pprof": func(c *Config) string { return checkPprof(c.Debug.Pprof) },

	"auth.worker_secret": func(c *Config) string { return checkWorkerSecret(c) },
	"auth.params_key":    func(c *Config) string { return checkParamsKey(c) },

	"worker.heartbeat_interval": func(c *Config) string { return positive(c.Worker.HeartbeatInterval) },
	"worker.alive_window":       func(c *Config) string { return positive(c.Worker.AliveWindow) },

	"scheduler.assign_grace":     func(c *Config) string { return positive(c.Scheduler.AssignGrace) },
	"scheduler.disk_exclude_pct": func(c *Config) string { return inRange(c.Scheduler.DiskExcludePct, 1, 100) },
	"scheduler.priority_aging":   func(c *Config) string { return positive(c.Scheduler.PriorityAging) },
	"scheduler.tenant_label":     func(c *Config) string { return checkTenantLabel(c.Scheduler.TenantLabel) },
	"scheduler.tenant_weights":   func(c *Config) string { return errString(c.Scheduler.ParseTenantWeights()) },
	"scheduler.tenant_quotas":    func(c *Config) string { return errString(c.Scheduler.ParseTenantQuotas()) },
	"scheduler.affinity_wait":    func(c *Config) string { return nonNegative(c.Scheduler.AffinityWait) },
	// Below the session call's own bound on a hub (it adds this wait).
	"scheduler.session_profile_wait": func(c *Config) string {
		if d := c.Scheduler.SessionProfileWait; d < 0 || d > 10*time.Minute {
			return fmt.Sprintf("%s is out of range 0..10m", d)
		}
		return ""
	},

	// Health thresholds: 0 = off; the bounds are what a worker may report
	// (messages.MaxLaneRSSMB, MaxHealthCount, MaxShmFreeMB).
	"scheduler.max_lane_rss_mb":       func(c *Config) string { return inRange(c.Scheduler.MaxLaneRSSMB, 0, 1<<24) },
	"scheduler.max_lane_crashes_10m":  func(c *Config) string { return inRange(c.Scheduler.MaxLaneCrashes10m, 0, 1<<20) },
	"scheduler.max_lane_restarts_10m": func(c *Config) string { return inRange(c.Scheduler.MaxLaneRestarts10m, 0, 1<<20) },
	"scheduler.min_shm_free_mb":       func(c *Config) string { return inRange(c.Scheduler.MinShmFreeMB, 0, 1<<30) },

	"redrive.interval": func(c *Config) string { return positive(c.Redrive.Interval) },
	"redrive.min_age":  func(c *Config) string { return nonNegative(c.Redrive.MinAge) },

	"reconciler.interval":           func(c *Config) string { return positive(c.Reconciler.Interval) },
	"reconciler.orphan_grace":       func(c *Config) string { return nonNegative(c.Reconciler.OrphanGrace) },
	"reconciler.queued_timeout":     func(c *Config) string { return positive(c.Reconciler.QueuedTimeout) },
	"reconciler.fleet_read_timeout": func(c *Config) string { return positive(c.Reconciler.FleetReadTimeout) },
	"reconciler.fleet_cache":        func(c *Config) string { return nonNegative(c.Reconciler.FleetCache) },

	"jobs.default_timeout": func(c *Config) string { return atLeast(c.Jobs.DefaultTimeout, time.Second) },
	"jobs.max_attempts":    func(c *Config) string { return inRange(c.Jobs.MaxAttempts, 1, 100) },
	"jobs.retry_backoff_max": func(c *Config) string {
		if d := c.Jobs.RetryBackoffMax; d < time.Second || d > 720*time.Hour {
			return fmt.Sprintf("%s is out of range 1s..720h", d)
		}
		return ""
	},

	"jobs.group_commit_wait": func(c *Config) string {
		if d := c.Jobs.GroupCommitWait; d < 0 || d > 50*time.Millisecond {
			return fmt.Sprintf("%s is out of range 0..50ms", d)
		}
		return ""
	},

	"jobs.finish_commit_wait": func(c *Config) string {
		if d := c.Jobs.FinishCommitWait; d < 0 || d > 100*time.Millisecond {
			return fmt.Sprintf("%s is out of range 0..100ms", d)
		}
		return ""
	},

	"jobs.create_commit_wait": func(c *Config) string {
		if d := c.Jobs.CreateCommitWait; d < 0 || d > 100*time.Millisecond {
			return fmt.Sprintf("%s is out of range 0..100ms", d)
		}
		return ""
	},

	"logs.batch_lines": func(c *Config) string { return inRange(c.Logs.BatchLines, 1, 10000) },
	"logs.batch_wait":  func(c *Config) string { return positive(c.Logs.BatchWait) },
	"logs.retention":   func(c *Config) string { return positive(c.Logs.Retention) },

	"cluster.provider":          func(c *Config) string { return oneOf(c.Cluster.Provider, Providers) },
	"cluster.hub_ttl":           func(c *Config) string { return positive(c.Cluster.HubTTL) },
	"cluster.forward_timeout":   func(c *Config) string { return positive(c.Cluster.ForwardTimeout) },
	"cluster.member_timeout":    func(c *Config) string { return positive(c.Cluster.MemberTimeout) },
	"cluster.host":              func(c *Config) string { return checkHost(c.Cluster.Host) },
	"cluster.port":              func(c *Config) string { return inRange(c.Cluster.Port, 0, 65535) },
	"cluster.join_timeout":      func(c *Config) string { return positive(c.Cluster.JoinTimeout) },
	"cluster.consul_address":    func(c *Config) string { return checkConsulAddress(c.Cluster.ConsulAddress) },
	"cluster.etcd_endpoints":    func(c *Config) string { return checkEtcdEndpoints(c.Cluster.EtcdEndpoints) },
	"cluster.automanaged_port":  func(c *Config) string { return inRange(c.Cluster.AutomanagedPort, 1, 65535) },
	"cluster.automanaged_hosts": func(c *Config) string { return checkHostList(c.Cluster.AutomanagedHosts) },

	"redis.url":      func(c *Config) string { return checkRedisURL(c.Redis.URL) },
	"mysql.dsn":      func(c *Config) string { return checkDSN(c.MySQL.DSN) },
	"minio.endpoint": func(c *Config) string { return checkEndpoint(c.MinIO.Endpoint) },
	"minio.bucket":   func(c *Config) string { return checkBucket(c.MinIO.Bucket) },

	// The params bound stays under the API's 1 MiB body bound, which would
	// otherwise answer first with a message naming no key.
	"limits.max_params_bytes":        func(c *Config) string { return inRange(c.Limits.MaxParamsBytes, 1, 1<<20-1024) },
	"limits.max_labels":              func(c *Config) string { return inRange(c.Limits.MaxLabels, 1, 10000) },
	"limits.max_label_key_bytes":     func(c *Config) string { return inRange(c.Limits.MaxLabelKeyBytes, 1, 64<<10) },
	"limits.max_label_value_bytes":   func(c *Config) string { return inRange(c.Limits.MaxLabelValueBytes, 1, 64<<10) },
	"limits.max_queued":              func(c *Config) string { return inRange(c.Limits.MaxQueued, 0, 1<<30) },
	"limits.max_conns_per_ip":        func(c *Config) string { return inRange(c.Limits.MaxConnsPerIP, 0, 1<<20) },
	"limits.api_rate":                func(c *Config) string { return inRange(c.Limits.APIRate, 0, 1<<20) },
	"limits.api_burst":               func(c *Config) string { return inRange(c.Limits.APIBurst, 1, 1<<20) },
	"limits.max_log_lines":           func(c *Config) string { return inRange(c.Limits.MaxLogLines, 0, 1<<40) },
	"limits.max_log_bytes":           func(c *Config) string { return inRange(c.Limits.MaxLogBytes, 0, 1<<40) },
	"limits.max_asset_bytes":         func(c *Config) string { return inRange(c.Limits.MaxAssetBytes, 1, 1<<50) },
	"limits.max_session_downloads":   func(c *Config) string { return inRange(c.Limits.MaxSessionDownloads, 1, 1<<20) },
	"limits.max_list_bytes":          func(c *Config) string { return inRange(c.Limits.MaxListBytes, 64<<10, 1<<30) },
	"limits.worker_max_lanes":        func(c *Config) string { return inRange(c.Limits.WorkerMaxLanes, 0, 10000) },
	"limits.cdp_tunnels_per_session": func(c *Config) string { return inRange(c.Limits.CDPTunnelsPerSession, 1, 1000) },
	"limits.cdp_max_message_bytes":   func(c *Config) string { return inRange(c.Limits.CDPMaxMessageBytes, 1<<20, 1<<30) },
}

// crossChecks are the rules between keys; each returns the key to blame
// and a message, or "" when the rule holds.
var crossChecks = []func(c *Config) (string, string){
	checkOpenListen,
	func(c *Config) (string, string) {
		// One address cannot be bound twice; port 0 picks two free ones.
		if l := c.Metrics.Listen; l != "" && l == c.Hub.Listen && !strings.HasSuffix(l, ":0") {
			return "metrics.listen", fmt.Sprintf("%q is hub.listen as well: give another port (or \"\" to serve /metrics on hub.listen only)", l)
		}
		return "", ""
	},
	func(c *Config) (string, string) {
		// A window no longer than the heartbeat period makes healthy
		// workers flap between alive and dead.
		w := c.Worker
		if w.HeartbeatInterval > 0 && w.AliveWindow > 0 && w.AliveWindow <= w.HeartbeatInterval {
			return "worker.alive_window", fmt.Sprintf("%s must be longer than worker.heartbeat_interval (%s)",
				FormatDuration(w.AliveWindow), FormatDuration(w.HeartbeatInterval))
		}
		return "", ""
	},
	func(c *Config) (string, string) {
		cl := c.Cluster
		if cl.MemberTimeout > 0 && cl.HubTTL > 0 && cl.MemberTimeout > cl.HubTTL {
			return "cluster.member_timeout", fmt.Sprintf("%s must not exceed cluster.hub_ttl (%s)",
				FormatDuration(cl.MemberTimeout), FormatDuration(cl.HubTTL))
		}
		return "", ""
	},
	func(c *Config) (string, string) {
		if c.Cluster.Provider == ProviderConsul && strings.TrimSpace(c.Cluster.ConsulAddress) == "" {
			return "cluster.consul_address", "required when cluster.provider is consul (the Consul agent, e.g. 127.0.0.1:8500; env " +
				EnvName("cluster.consul_address") + ")"
		}
		return "", ""
	},
	func(c *Config) (string, string) {
		if c.Cluster.Provider == ProviderEtcd && len(c.Cluster.EtcdEndpointList()) == 0 {
			return "cluster.etcd_endpoints", "required when cluster.provider is etcd (comma-separated host:port, e.g. 10.0.0.5:2379,10.0.0.6:2379; env " +
				EnvName("cluster.etcd_endpoints") + ")"
		}
		return "", ""
	},
	func(c *Config) (string, string) {
		if c.Cluster.Provider == ProviderAutomanaged && len(c.Cluster.AutomanagedHostList()) == 0 {
			return "cluster.automanaged_hosts", "required when cluster.provider is automanaged (every hub's host:automanaged_port, " +
				"this one included, e.g. hub1:6330,hub2:6330; env " + EnvName("cluster.automanaged_hosts") + ")"
		}
		return "", ""
	},
	func(c *Config) (string, string) {
		// The k8s provider lists members at their pod IPs, while the hub
		// names itself by cluster.host in every PID it sends: a loopback
		// host makes replies and grain placement miss this hub.
		if c.Cluster.Provider == ProviderK8s && isLoopback(c.Cluster.Host) {
			return "cluster.host", fmt.Sprintf("%q is a loopback address; with cluster.provider k8s give the pod IP "+
				"(e.g. %s from the downward API's status.podIP)", c.Cluster.Host, EnvName("cluster.host"))
		}
		return "", ""
	},
	checkClusterTLS,
	checkHubTLS,
	func(c *Config) (string, string) {
		// Remoting without TLS lets anyone who reaches the port drive any
		// actor (make a worker run a job that exists nowhere, cut its
		// link); on loopback only this machine can.
		cl := c.Cluster
		if !isLoopback(cl.Host) && !cl.TLSEnabled() && !cl.Insecure && checkHost(cl.Host) == "" {
			return "cluster.host", fmt.Sprintf("%q is not a loopback address and cluster TLS is off: set cluster.tls_ca, cluster.tls_cert and cluster.tls_key "+
				"(paprika certs), or cluster.insecure: true to run the cluster port without TLS", cl.Host)
		}
		return "", ""
	},
	func(c *Config) (string, string) {
		if c.MinIO.Endpoint != "" && c.MinIO.AccessKey == "" {
			return "minio.access_key", "required when minio.endpoint is set (env " + EnvName("minio.access_key") + ")"
		}
		return "", ""
	},
	func(c *Config) (string, string) {
		if c.MinIO.Endpoint != "" && c.MinIO.SecretKey == "" {
			return "minio.secret_key", "required when minio.endpoint is set (env " + EnvName("minio.secret_key") + ")"
		}
		return "", ""
	},
	func(c *Config) (string, string) {
		if c.MinIO.Endpoint == "" && strings.TrimSpace(c.Assets.Dir) == "" {
			return "assets.dir", "required when minio.endpoint is empty (assets are stored on local disk)"
		}
		return "", ""
	},
}

// checkOpenListen refuses an empty token on a non-loopback hub.listen
// unless auth.insecure says so: the open default is safe on 127.0.0.1 only,
// and a hub moved onto the network by a flag must not stay open by accident.
// Both tokens count: an open worker link lets anyone take jobs (and their
// params) or upload assets, an open API lets anyone submit or cancel.
func checkOpenListen(c *Config) (string, string) {
	// Per-worker credentials close the worker link as well as the token.
	workersClosed := c.Auth.WorkerToken != "" || c.Auth.WorkerSecret != ""
	if c.Auth.Insecure || (c.Auth.APIToken != "" && workersClosed) {
		return "", ""
	}
	host, _, err := net.SplitHostPort(c.Hub.Listen)
	if err != nil || isLoopback(host) {
		return "", "" // a malformed listen is hub.listen's own check
	}
	var empty []string
	if c.Auth.APIToken == "" {
		empty = append(empty, "auth.api_token")
	}
	if !workersClosed {
		empty = append(empty, "auth.worker_token")
	}
	verb := " is"
	if len(empty) > 1 {
		verb = " are"
	}
	return "hub.listen", fmt.Sprintf("%q is not a loopback address and %s empty: set auth.api_token and auth.worker_token "+
		"(env %s, %s), or auth.insecure: true (env %s) to serve the hub open to the network",
		c.Hub.Listen, strings.Join(empty, " and ")+verb,
		EnvName("auth.api_token"), EnvName("auth.worker_token"), EnvName("auth.insecure"))
}

func positive(d time.Duration) string {
	if d <= 0 {
		return fmt.Sprintf("%s must be greater than 0", FormatDuration(d))
	}
	return ""
}

func nonNegative(d time.Duration) string {
	if d < 0 {
		return fmt.Sprintf("%s must not be negative", FormatDuration(d))
	}
	return ""
}

func atLeast(d, lowest time.Duration) string {
	if d < lowest {
		return fmt.Sprintf("%s must be at least %s", FormatDuration(d), FormatDuration(lowest))
	}
	return ""
}

func inRange(n, lo, hi int) string {
	if n < lo || n > hi {
		return fmt.Sprintf("%d is out of range %d..%d", n, lo, hi)
	}
	return ""
}

func oneOf(s string, allowed []string) string {
	if !slices.Contains(allowed, s) {
		return fmt.Sprintf("%q is not one of %s", s, strings.Join(allowed, ", "))
	}
	return ""
}

// checkListen accepts host:port with a numeric port 0..65535; the host may
// be empty (all interfaces).
func checkListen(s string) string {
	host, port, err := net.SplitHostPort(s)
	if err != nil || strings.ContainsAny(host, " /") {
		return fmt.Sprintf("%q is not host:port (e.g. 127.0.0.1:8080, :8080)", s)
	}
	if msg := checkPort(port); msg != "" {
		return fmt.Sprintf("%q: %s", s, msg)
	}
	return ""
}

func checkPort(port string) string {
	n, err := strconv.Atoi(port)
	if err != nil || n < 0 || n > 65535 {
		return fmt.Sprintf("port %q is not a number in 0..65535", port)
	}
	return ""
}

var idPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// checkID accepts "" (derived at start) or up to 64 letters, digits, '.',
// '_' and '-': the id goes into Redis keys and actor names.
func checkID(s string) string {
	if s != "" && !idPattern.MatchString(s) {
		return fmt.Sprintf("%q may hold only letters, digits, '.', '_' and '-' (at most 64, starting with a letter or digit)", s)
	}
	return ""
}

func checkHTTPURL(s string) string {
	if s == "" {
		return ""
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Sprintf("%q is not an http:// or https:// URL with a host", s)
	}
	return ""
}

func checkHost(s string) string {
	if strings.TrimSpace(s) == "" || (strings.ContainsAny(s, " /:") && net.ParseIP(s) == nil) {
		return fmt.Sprintf("%q is not a host name or IP address", s)
	}
	return ""
}

// checkRedisURL accepts "" (embedded), redis://[user:pass@]host[:port][/db],
// rediss://... and unix:///path, the forms go-redis's ParseURL takes.
func checkRedisURL(s string) string {
	if s == "" {
		return ""
	}
	bad := fmt.Sprintf("%q is not a redis URL (redis://[:password@]host:port[/db], rediss://..., unix:///path)", maskURL(s))
	u, err := url.Parse(s)
	if err != nil {
		return bad
	}
	switch u.Scheme {
	case "redis", "rediss":
		if u.Hostname() == "" {
			return bad
		}
		if p := u.Port(); p != "" && checkPort(p) != "" {
			return bad
		}
		if db := strings.Trim(u.Path, "/"); db != "" {
			if n, err := strconv.Atoi(db); err != nil || n < 0 {
				return fmt.Sprintf("%q: database %q is not a number", maskURL(s), db)
			}
		}
	case "unix":
		if u.Path == "" {
			return bad
		}
	default:
		return bad
	}
	return ""
}

// checkDSN parses s with the MySQL driver; the message never repeats the
// DSN, which holds a password.
func checkDSN(s string) string {
	if s == "" {
		return ""
	}
	if _, err := mysql.ParseDSN(s); err != nil {
		return fmt.Sprintf("is not a MySQL DSN (user:pass@tcp(host:3306)/paprika?parseTime=true): %v", err)
	}
	return ""
}

// checkEndpoint accepts "" or host[:port] without a scheme or path, the
// form minio-go takes.
func checkEndpoint(s string) string {
	if s == "" {
		return ""
	}
	if strings.Contains(s, "://") {
		return fmt.Sprintf("%q: give host:port without a scheme (set minio.secure for https)", s)
	}
	if strings.ContainsAny(s, "/ ") {
		return fmt.Sprintf("%q is not host[:port]", s)
	}
	if host, port, err := net.SplitHostPort(s); err == nil {
		if host == "" || checkPort(port) != "" {
			return fmt.Sprintf("%q is not host[:port]", s)
		}
	} else if strings.Contains(s, ":") && net.ParseIP(s) == nil {
		return fmt.Sprintf("%q is not host[:port]", s)
	}
	return ""
}

// checkConsulAddress accepts "" (left to the provider rule) or the forms
// the Consul API client takes: host:port, http(s)://host:port and
// unix:///path.
func checkConsulAddress(s string) string {
	if strings.TrimSpace(s) == "" {
		return ""
	}
	bad := fmt.Sprintf("%q is not host:port, http(s)://host:port or unix:///path", s)
	scheme, rest, hasScheme := strings.Cut(s, "://")
	switch {
	case !hasScheme:
		rest = s
	case scheme == "unix":
		if !strings.HasPrefix(rest, "/") || len(rest) < 2 {
			return bad
		}
		return ""
	case scheme != "http" && scheme != "https":
		return bad
	}
	if !isHostPort(rest) {
		return bad
	}
	return ""
}

// checkEtcdEndpoints accepts "" (left to the provider rule) or a comma
// separated list of host:port or http(s)://host:port, the forms the etcd
// client dials.
func checkEtcdEndpoints(s string) string {
	if strings.TrimSpace(s) == "" {
		return ""
	}
	for _, e := range strings.Split(s, ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			return fmt.Sprintf("%q has an empty endpoint (give host:port[,host:port...])", s)
		}
		hp := e
		if scheme, rest, ok := strings.Cut(e, "://"); ok {
			if scheme != "http" && scheme != "https" {
				return fmt.Sprintf("endpoint %q: scheme must be http or https", e)
			}
			hp = strings.TrimSuffix(rest, "/")
		}
		if !isHostPort(hp) {
			return fmt.Sprintf("endpoint %q is not host:port or http(s)://host:port", e)
		}
	}
	return ""
}

// checkHostList accepts "" (left to the provider rule) or a comma
// separated list of host:port.
func checkHostList(s string) string {
	if strings.TrimSpace(s) == "" {
		return ""
	}
	for _, e := range strings.Split(s, ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			return fmt.Sprintf("%q has an empty item (give host:port[,host:port...])", s)
		}
		if !isHostPort(e) {
			return fmt.Sprintf("%q is not host:port", e)
		}
	}
	return ""
}

// isHostPort reports whether s is host:port with a non-empty host and a
// port in 1..65535.
func isHostPort(s string) bool {
	host, port, err := net.SplitHostPort(s)
	if err != nil || host == "" || strings.ContainsAny(host, " /") {
		return false
	}
	n, err := strconv.Atoi(port)
	return err == nil && n > 0 && n <= 65535
}

// isLoopback reports whether host names this machine only: localhost or a
// loopback IP.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// checkClusterTLS: the three TLS files come together, and they load into
// the configuration the hub will use, so a bad file stops start-up here
// with its key named rather than in the middle of joining.
func checkClusterTLS(c *Config) (string, string) {
	cl := c.Cluster
	files := []struct{ key, path string }{
		{"cluster.tls_ca", cl.TLSCA}, {"cluster.tls_cert", cl.TLSCert}, {"cluster.tls_key", cl.TLSKey}}
	set := 0
	for _, f := range files {
		if f.path != "" {
			set++
		}
	}
	if set == 0 {
		return "", ""
	}
	for _, f := range files {
		if f.path == "" {
			return f.key, "required when any of cluster.tls_ca, cluster.tls_cert, cluster.tls_key is set (give all three; env " + EnvName(f.key) + ")"
		}
	}
	for _, f := range files {
		if _, err := os.ReadFile(f.path); err != nil {
			return f.key, fmt.Sprintf("cannot read %s: %v", f.path, errors.Unwrap(err))
		}
	}
	if _, err := certs.LoadPool(cl.TLSCA); err != nil {
		return "cluster.tls_ca", err.Error()
	}
	if _, err := certs.Load(cl.TLSCA, cl.TLSCert, cl.TLSKey); err != nil {
		return "cluster.tls_cert", fmt.Sprintf("%s with cluster.tls_key %s: %v", cl.TLSCert, cl.TLSKey, err)
	}
	return "", ""
}

// checkHubTLS: the hub's certificate and key come together and load as a
// pair, so a bad file stops start-up with its key named instead of every
// TLS handshake failing later.
func checkHubTLS(c *Config) (string, string) {
	h := c.Hub
	if h.TLSCert == "" && h.TLSKey == "" {
		return "", ""
	}
	files := []struct{ key, path string }{{"hub.tls_cert", h.TLSCert}, {"hub.tls_key", h.TLSKey}}
	for _, f := range files {
		if f.path == "" {
			return f.key, "required when either of hub.tls_cert, hub.tls_key is set (give both; env " + EnvName(f.key) + ")"
		}
	}
	for _, f := range files {
		if _, err := os.ReadFile(f.path); err != nil {
			return f.key, fmt.Sprintf("cannot read %s: %v", f.path, errors.Unwrap(err))
		}
	}
	if _, err := tls.LoadX509KeyPair(h.TLSCert, h.TLSKey); err != nil {
		return "hub.tls_cert", fmt.Sprintf("%s with hub.tls_key %s: %v", h.TLSCert, h.TLSKey, err)
	}
	return "", ""
}

// splitList splits a comma-separated value, trimming blanks and dropping
// empty items.
func splitList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

var bucketPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`)

// checkBucket applies the S3 bucket naming rules.
func checkBucket(s string) string {
	if !bucketPattern.MatchString(s) || strings.Contains(s, "..") {
		return fmt.Sprintf("%q is not a bucket name (3..63 of a-z, 0-9, '.', '-', starting and ending with a letter or digit)", s)
	}
	return ""
}

// checkWorkerSecret: the secret that mints every worker's credential stays
// out of files (a committed config.yaml would hand it out) and is long
// enough not to be guessed.
func checkWorkerSecret(c *Config) string {
	secret := c.Auth.WorkerSecret
	switch {
	case secret == "":
		return ""
	case strings.HasPrefix(c.Origin("auth.worker_secret"), "file "):
		return "is read from the environment only (PAPRIKA_AUTH_WORKER_SECRET), never from a file"
	case len(secret) < credential.MinSecretBytes:
		return fmt.Sprintf("must be at least %d bytes", credential.MinSecretBytes)
	}
	return ""
}

// checkParamsKey: the key that seals stored proxy passwords stays out of
// files, like worker_secret, and is long enough not to be guessed.
func checkParamsKey(c *Config) string {
	key := c.Auth.ParamsKey
	switch {
	case key == "":
		return ""
	case strings.HasPrefix(c.Origin("auth.params_key"), "file "):
		return "is read from the environment only (PAPRIKA_AUTH_PARAMS_KEY), never from a file"
	case len(key) < seal.MinKeyBytes:
		return fmt.Sprintf("must be at least %d bytes", seal.MinKeyBytes)
	}
	return ""
}

// checkPprof allows "" (off) or a loopback host:port: profiles and
// goroutine dumps carry heap contents (params, tokens in flight), so they
// are never served to the network.
func checkPprof(addr string) string {
	if addr == "" {
		return ""
	}
	if msg := checkListen(addr); msg != "" {
		return msg
	}
	host, _, _ := net.SplitHostPort(addr)
	if host == "localhost" {
		return ""
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return ""
	}
	return fmt.Sprintf("%q is not a loopback address: the profiler is served on 127.0.0.1, [::1] or localhost only (e.g. 127.0.0.1:6060)", addr)
}
