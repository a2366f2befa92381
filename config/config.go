package config

import (
	"time"

	"github.com/paprika-hub/paprika/membership"
)

// Built-in defaults, one per key. config.yaml at the repository root repeats
// every one of them; TestRepoConfigYAMLIsDefault keeps the two in step.
const (
	// DefaultHubListen is hub.listen.
	DefaultHubListen = "127.0.0.1:8080"
	// DefaultWorkerHeartbeatInterval is worker.heartbeat_interval.
	DefaultWorkerHeartbeatInterval = 15 * time.Second
	// DefaultWorkerAliveWindow is worker.alive_window.
	DefaultWorkerAliveWindow = 120 * time.Second
	// DefaultSchedulerAssignGrace is scheduler.assign_grace.
	DefaultSchedulerAssignGrace = 8 * time.Second
	// DefaultSchedulerPriorityAging is scheduler.priority_aging.
	DefaultSchedulerPriorityAging = 30 * time.Second
	// DefaultSchedulerAffinityWait is scheduler.affinity_wait.
	DefaultSchedulerAffinityWait = 5 * time.Second
	// DefaultSchedulerSessionProfileWait is scheduler.session_profile_wait.
	DefaultSchedulerSessionProfileWait = 30 * time.Second
	// DefaultSchedulerDiskExcludePct is scheduler.disk_exclude_pct.
	DefaultSchedulerDiskExcludePct = 90
	// DefaultSchedulerMaxLaneRSSMB is scheduler.max_lane_rss_mb.
	DefaultSchedulerMaxLaneRSSMB = 4096
	// DefaultSchedulerMaxLaneCrashes10m is scheduler.max_lane_crashes_10m.
	DefaultSchedulerMaxLaneCrashes10m = 3
	// DefaultSchedulerMaxLaneRestarts10m is scheduler.max_lane_restarts_10m.
	DefaultSchedulerMaxLaneRestarts10m = 6
	// DefaultSchedulerMinShmFreeMB is scheduler.min_shm_free_mb.
	DefaultSchedulerMinShmFreeMB = 16
	// DefaultRedriveInterval is redrive.interval.
	DefaultRedriveInterval = 3 * time.Second
	// DefaultRedriveMinAge is redrive.min_age.
	DefaultRedriveMinAge = 90 * time.Second
	// DefaultReconcilerInterval is reconciler.interval.
	DefaultReconcilerInterval = 90 * time.Second
	// DefaultReconcilerOrphanGrace is reconciler.orphan_grace.
	DefaultReconcilerOrphanGrace = 300 * time.Second
	// DefaultReconcilerQueuedTimeout is reconciler.queued_timeout.
	DefaultReconcilerQueuedTimeout = 180 * time.Second
	// DefaultReconcilerFleetReadTimeout is reconciler.fleet_read_timeout.
	DefaultReconcilerFleetReadTimeout = 1500 * time.Millisecond
	// DefaultReconcilerFleetCache is reconciler.fleet_cache.
	DefaultReconcilerFleetCache = 60 * time.Second
	// DefaultJobsDefaultTimeout is jobs.default_timeout.
	DefaultJobsDefaultTimeout = 180 * time.Second
	// DefaultJobsMaxAttempts is jobs.max_attempts.
	DefaultJobsMaxAttempts = 1
	// DefaultJobsRetryBackoffMax is jobs.retry_backoff_max.
	DefaultJobsRetryBackoffMax = time.Hour
	// DefaultJobsGroupCommitWait is jobs.group_commit_wait.
	DefaultJobsGroupCommitWait = time.Millisecond
	// DefaultJobsFinishCommitWait is jobs.finish_commit_wait.
	DefaultJobsFinishCommitWait = 5 * time.Millisecond
	// DefaultJobsCreateCommitWait is jobs.create_commit_wait.
	DefaultJobsCreateCommitWait = 2 * time.Millisecond
	// DefaultLogsBatchLines is logs.batch_lines.
	DefaultLogsBatchLines = 50
	// DefaultLogsBatchWait is logs.batch_wait.
	DefaultLogsBatchWait = 100 * time.Millisecond
	// DefaultLogsRetention is logs.retention.
	DefaultLogsRetention = 24 * time.Hour
	// DefaultClusterProvider is cluster.provider.
	DefaultClusterProvider = ProviderRedis
	// DefaultClusterHubTTL is cluster.hub_ttl.
	DefaultClusterHubTTL = 90 * time.Second
	// DefaultClusterMemberTimeout is cluster.member_timeout.
	DefaultClusterMemberTimeout = 6 * time.Second
	// DefaultClusterForwardTimeout is cluster.forward_timeout.
	DefaultClusterForwardTimeout = 60 * time.Second
	// DefaultClusterHost is cluster.host.
	DefaultClusterHost = "127.0.0.1"
	// DefaultClusterPort is cluster.port; 0 picks a free port.
	DefaultClusterPort = 0
	// DefaultClusterJoinTimeout is cluster.join_timeout.
	DefaultClusterJoinTimeout = 15 * time.Second
	// DefaultClusterConsulAddress is cluster.consul_address: the local
	// Consul agent, where services are registered.
	DefaultClusterConsulAddress = "127.0.0.1:8500"
	// DefaultClusterEtcdEndpoints is cluster.etcd_endpoints; empty, because
	// no etcd address is a safe guess (provider etcd requires it).
	DefaultClusterEtcdEndpoints = ""
	// DefaultClusterAutomanagedPort is cluster.automanaged_port,
	// protoactor's own default.
	DefaultClusterAutomanagedPort = 6330
	// DefaultClusterAutomanagedHosts is cluster.automanaged_hosts; empty
	// (provider automanaged requires it).
	DefaultClusterAutomanagedHosts = ""
	// DefaultRedisPrefix is redis.prefix.
	DefaultRedisPrefix = "paprika:"
	// DefaultMinIOBucket is minio.bucket.
	DefaultMinIOBucket = "paprika"
	// DefaultAssetsDir is assets.dir.
	DefaultAssetsDir = "./data/assets"
	// DefaultLimitsMaxParamsBytes is limits.max_params_bytes (64 KiB).
	DefaultLimitsMaxParamsBytes = 64 << 10
	// DefaultLimitsMaxLabels is limits.max_labels.
	DefaultLimitsMaxLabels = 32
	// DefaultLimitsMaxLabelKeyBytes is limits.max_label_key_bytes.
	DefaultLimitsMaxLabelKeyBytes = 128
	// DefaultLimitsMaxLabelValueBytes is limits.max_label_value_bytes.
	DefaultLimitsMaxLabelValueBytes = 1024
	// DefaultLimitsMaxQueued is limits.max_queued.
	DefaultLimitsMaxQueued = 100000
	// DefaultLimitsMaxConnsPerIP is limits.max_conns_per_ip.
	DefaultLimitsMaxConnsPerIP = 256
	// DefaultLimitsAPIRate is limits.api_rate, requests per second: far
	// above what one honest client of a job hub sends (a producer at
	// thousands of jobs a second is one), far below a flood.
	DefaultLimitsAPIRate = 5000
	// DefaultLimitsAPIBurst is limits.api_burst.
	DefaultLimitsAPIBurst = 10000
	// DefaultLimitsMaxLogLines is limits.max_log_lines.
	DefaultLimitsMaxLogLines = 100000
	// DefaultLimitsMaxLogBytes is limits.max_log_bytes (64 MiB).
	DefaultLimitsMaxLogBytes = 64 << 20
	// DefaultLimitsMaxListBytes is limits.max_list_bytes (4 MiB).
	DefaultLimitsMaxListBytes = 4 << 20
	// DefaultLimitsMaxAssetBytes is limits.max_asset_bytes (1 GiB).
	DefaultLimitsMaxAssetBytes = 1 << 30
	// DefaultLimitsMaxSessionDownloads is limits.max_session_downloads.
	DefaultLimitsMaxSessionDownloads = 100
	// DefaultLimitsWorkerMaxLanes is limits.worker_max_lanes.
	DefaultLimitsWorkerMaxLanes = 256
	// DefaultLimitsCDPTunnelsPerSession is limits.cdp_tunnels_per_session.
	DefaultLimitsCDPTunnelsPerSession = 8
	// DefaultLimitsCDPMaxMessageBytes is limits.cdp_max_message_bytes
	// (256 MiB, what Puppeteer and Playwright accept themselves).
	DefaultLimitsCDPMaxMessageBytes = 256 << 20
)

// Cluster providers accepted by cluster.provider: short names for package
// cluster's, which implements them and so owns their spelling.
const (
	// ProviderRedis is Paprika's own membership: a hub heartbeat key with a
	// TTL plus a ZSET index in Redis (embedded Redis when redis.url is empty).
	ProviderRedis = membership.ProviderRedis
	// ProviderAutomanaged is protoactor's automanaged provider.
	ProviderAutomanaged = membership.ProviderAutomanaged
	// ProviderTest is protoactor's in-process test provider (tests only).
	ProviderTest = membership.ProviderTest
	// ProviderConsul is protoactor's Consul provider.
	ProviderConsul = membership.ProviderConsul
	// ProviderEtcd is protoactor's etcd provider.
	ProviderEtcd = membership.ProviderEtcd
	// ProviderK8s is protoactor's Kubernetes provider.
	ProviderK8s = membership.ProviderK8s
)

// Providers lists every value cluster.provider accepts, in the order error
// messages name them (membership.Providers).
var Providers = membership.Providers

// Config is the whole configuration of a paprika process: one section per
// top-level key of config.yaml. Build it with Default or Load; change single
// keys with Set; check it with Validate.
type Config struct {
	// Hub is the hub's own address and identity.
	Hub HubConfig `yaml:"hub"`
	// Auth holds the shared secrets. Secrets: env only in production.
	Auth AuthConfig `yaml:"auth"`
	// Worker holds the worker liveness timings.
	Worker WorkerConfig `yaml:"worker"`
	// Scheduler tunes pick_worker and the submit-time assignment.
	Scheduler SchedulerConfig `yaml:"scheduler"`
	// Redrive tunes the periodic re-drive of queued jobs.
	Redrive RedriveConfig `yaml:"redrive"`
	// Reconciler tunes the periodic reconciliation of jobs against the fleet.
	Reconciler ReconcilerConfig `yaml:"reconciler"`
	// Jobs holds per-job defaults used when a submit leaves them out.
	Jobs JobsConfig `yaml:"jobs"`
	// Logs tunes live-log batching and retention.
	Logs LogsConfig `yaml:"logs"`
	// Cluster configures hub membership and inter-hub traffic.
	Cluster ClusterConfig `yaml:"cluster"`
	// Redis selects the coordination store.
	Redis RedisConfig `yaml:"redis"`
	// MySQL selects the job store.
	MySQL MySQLConfig `yaml:"mysql"`
	// MinIO selects the asset store.
	MinIO MinIOConfig `yaml:"minio"`
	// Assets configures the local asset store used without MinIO.
	Assets AssetsConfig `yaml:"assets"`
	// Limits bounds what one client, request or job may take of a hub.
	Limits LimitsConfig `yaml:"limits"`
	// Metrics configures where /metrics is served.
	Metrics MetricsConfig `yaml:"metrics"`
	// Debug holds switches for tests and drills; all off by default.
	Debug DebugConfig `yaml:"debug"`

	// origin records where each key's value came from ("file config.yaml:3",
	// "env PAPRIKA_HUB_LISTEN", "flag"); absent means the default. It only
	// feeds error messages and WriteYAML.
	origin map[string]string
}

// HubConfig is the "hub" section.
type HubConfig struct {
	// Listen is the host:port the HTTP API, the admin UI and the worker
	// links listen on. Default "127.0.0.1:8080".
	Listen string `yaml:"listen"`
	// ID names this hub in the cluster. Default "" (derived at start).
	ID string `yaml:"id"`
	// AdvertiseURL is the URL other hubs and workers use to reach this hub.
	// Default "" (derived from Listen).
	AdvertiseURL string `yaml:"advertise_url"`
	// TLSCert is the PEM file of the certificate the hub serves its HTTP
	// API, admin UI and worker links with (HTTPS and WSS); it may hold the
	// chain after the leaf. Give it with TLSKey or not at all. Default ""
	// (plain HTTP).
	TLSCert string `yaml:"tls_cert"`
	// TLSKey is the PEM file of TLSCert's private key. Default "".
	TLSKey string `yaml:"tls_key"`
}

// TLSEnabled reports whether the hub serves HTTPS (both files given).
func (c HubConfig) TLSEnabled() bool { return c.TLSCert != "" && c.TLSKey != "" }

// AuthConfig is the "auth" section. Both values are secrets: set them from
// the environment in production, never in a committed config.yaml.
type AuthConfig struct {
	// WorkerToken is the bearer token worker agents present on their link.
	// Default "" (no check).
	WorkerToken string `yaml:"worker_token"`
	// APIToken is the bearer token API clients present. Default "" (no check).
	APIToken string `yaml:"api_token"`
	// WorkerSecret, when set, replaces WorkerToken: each worker presents
	// its own credential, bound to its id (`paprika token worker --id`),
	// and a credential of one worker links, uploads and reports for that
	// worker only. Read from the environment only
	// (PAPRIKA_AUTH_WORKER_SECRET), at least 16 bytes. Default "" (the
	// shared WorkerToken, or no check).
	WorkerSecret string `yaml:"worker_secret"`
	// ParamsKey seals the proxy passwords of job params in the job store
	// (AES-256-GCM under a key derived from it; every hub of a cluster
	// must have the same). Read from the environment only
	// (PAPRIKA_AUTH_PARAMS_KEY), at least 16 bytes. Default "" (the key is
	// derived from worker_secret, else worker_token, else api_token, else
	// built in; see internal/seal).
	ParamsKey string `yaml:"params_key"`
	// Insecure lets a hub with an empty token listen on a non-loopback
	// address. Default false: an open API or worker link on the network lets
	// anyone who can reach it run jobs or pose as a worker, so that has to
	// be asked for by name rather than fallen into.
	Insecure bool `yaml:"insecure"`
	// WorkerApproval makes every new worker id wait as "pending" — linked
	// and listed in GET /workers, given no job and no session — until an
	// operator approves it (PATCH /workers/{id} {"status": "active"}).
	// Approvals are kept in the approval store (Redis, or
	// approvals.db beside the embedded job file), so they outlive
	// reconnects, hub restarts and the worker's registry record; PATCH
	// {"status": "pending"} revokes one. Default false (every credential
	// holder gets work at once).
	WorkerApproval bool `yaml:"worker_approval"`
}

// WorkerConfig is the "worker" section.
type WorkerConfig struct {
	// HeartbeatInterval is how often a worker sends a heartbeat.
	// Default 15s.
	HeartbeatInterval time.Duration `yaml:"heartbeat_interval"`
	// AliveWindow is how long after its last heartbeat a worker still counts
	// as alive. Default 120s. Must exceed HeartbeatInterval.
	AliveWindow time.Duration `yaml:"alive_window"`
}

// SchedulerConfig is the "scheduler" section.
type SchedulerConfig struct {
	// AssignGrace bounds one placement: how long a job's claim waits for
	// the chosen worker to take the assignment before it is rolled back
	// and the job placed again (POST /jobs itself answers at once; the job
	// waits queued in the scheduler). Default 8s.
	AssignGrace time.Duration `yaml:"assign_grace"`
	// DiskExcludePct excludes workers whose disk use is at or above this
	// percentage from pick_worker. Default 90. Range 1..100.
	DiskExcludePct int `yaml:"disk_exclude_pct"`
	// PriorityAging is how long a queued job waits for its effective
	// priority to rise one level (up to 9), so a low-priority job still runs
	// under a steady stream of high ones: a priority-p job is placed at
	// the latest once it has waited (9-p) × this and the jobs of effective
	// priority 9 older than it have gone. Default 30s.
	PriorityAging time.Duration `yaml:"priority_aging"`
	// TenantLabel names the label whose value is a job's tenant when the
	// submission has no "tenant" field; "" = only the field. Default "".
	TenantLabel string `yaml:"tenant_label"`
	// TenantWeights are the tenants' shares of scarce lanes, as
	// "tenant=weight,..." (weights > 0, at most 1e6); a tenant not named
	// weighs 1. Default "".
	TenantWeights string `yaml:"tenant_weights"`
	// TenantQuotas are the per-tenant quotas, as
	// "tenant=running:N/queued:M,..." where the tenant "*" is the default
	// of every tenant not named and 0 (or an absent part) means no cap:
	// max_running holds a tenant's further jobs queued, max_queued refuses
	// a submission with 429 tenant_quota. Default "".
	TenantQuotas string `yaml:"tenant_quotas"`
	// Health-aware placement (README): a lane past one of these takes no
	// work (its worker's free lanes shrink by it), a worker under
	// MinShmFreeMB takes none at all; 0 turns a threshold off.
	// MaxLaneRSSMB: a lane's browser RSS over this (MiB). Default 4096.
	MaxLaneRSSMB int `yaml:"max_lane_rss_mb"`
	// MaxLaneCrashes10m: a lane's renderer crashes in the last 10 minutes
	// at or over this. Default 3.
	MaxLaneCrashes10m int `yaml:"max_lane_crashes_10m"`
	// MaxLaneRestarts10m: a lane's browser restarts in the last 10 minutes
	// at or over this. Default 6.
	MaxLaneRestarts10m int `yaml:"max_lane_restarts_10m"`
	// MinShmFreeMB: a worker whose /dev/shm has less free (MiB). Default 16:
	// a container's /dev/shm is often 64 MiB in all, and the lanes' Chromium
	// runs with --disable-dev-shm-usage, so only a /dev/shm something else
	// filled should turn work away.
	MinShmFreeMB int `yaml:"min_shm_free_mb"`
	// AffinityWait is how long a job with a profile waits for the worker
	// that ran the profile's last job (it holds the profile warm) before
	// any worker may take it; 0 = no affinity. Default 5s.
	AffinityWait time.Duration `yaml:"affinity_wait"`
	// SessionProfileWait is how long POST /sessions with a profile that a
	// job or another session holds waits for it before it answers 409
	// profile_in_use; 0 = no wait. Default 30s.
	SessionProfileWait time.Duration `yaml:"session_profile_wait"`
}

// RedriveConfig is the "redrive" section. Env aliases from the source
// system: PAPRIKA_QUEUE_REDRIVE_INTERVAL_S (integer seconds → Interval) and
// PAPRIKA_QUEUE_REDRIVE_DISABLE (→ Disable).
type RedriveConfig struct {
	// Interval is the period of the re-drive sweep. Default 3s.
	Interval time.Duration `yaml:"interval"`
	// MinAge skips queued jobs younger than this (the submit path may still
	// own them). Default 90s. 0 disables the age gate.
	MinAge time.Duration `yaml:"min_age"`
	// Disable turns the re-drive sweep off (kill switch). Default false.
	Disable bool `yaml:"disable"`
}

// ReconcilerConfig is the "reconciler" section.
type ReconcilerConfig struct {
	// Interval is the period of the reconciliation pass. Default 90s.
	Interval time.Duration `yaml:"interval"`
	// OrphanGrace is how long a running job whose worker is not alive is
	// kept before it is failed (lets a worker self-update and return).
	// Default 300s.
	OrphanGrace time.Duration `yaml:"orphan_grace"`
	// QueuedTimeout fails a job still queued this long after creation.
	// Default 180s.
	QueuedTimeout time.Duration `yaml:"queued_timeout"`
	// FleetReadTimeout bounds the read of the fleet-wide alive view from
	// Redis. Default 1.5s.
	FleetReadTimeout time.Duration `yaml:"fleet_read_timeout"`
	// FleetCache is how long the last good fleet view is reused when a read
	// times out. Default 60s. 0 disables the reuse.
	FleetCache time.Duration `yaml:"fleet_cache"`
}

// JobsConfig is the "jobs" section.
type JobsConfig struct {
	// DefaultTimeout is the hard deadline of a job submitted without
	// timeout_s, counted from creation (from run_at for a delayed job or a
	// retry). Default 180s.
	DefaultTimeout time.Duration `yaml:"default_timeout"`
	// MaxAttempts is the attempts of a job submitted without max_attempts.
	// Default 1. Range 1..100.
	MaxAttempts int `yaml:"max_attempts"`
	// RetryBackoffMax caps the default retry wait (attempt⁴ seconds) of a
	// job submitted without retry_backoff. Default 1h. Range 1s..720h.
	RetryBackoffMax time.Duration `yaml:"retry_backoff_max"`
	// GroupCommitWait is how long a job store's commit may wait for more
	// transitions to share it (a bbolt transaction embedded, a batched
	// round trip on MariaDB), when they come faster than one per this
	// wait: fewer commits per job under a steady load, at up to this much
	// latency per transition. 0 never waits. Default 1ms. Range 0..50ms.
	GroupCommitWait time.Duration `yaml:"group_commit_wait"`
	// FinishCommitWait is how long a job store lets a job's final state
	// wait to ride a commit that another transition starts (a bbolt
	// transaction embedded, a batched transaction a claim leads on
	// MariaDB), instead of starting one: its worker's lane is freed before
	// the write and the worker acknowledged after it, so only the final
	// state's visibility waits. Fewer commits per job under a steady load.
	// 0 never waits. Default 5ms. Range 0..100ms.
	FinishCommitWait time.Duration `yaml:"finish_commit_wait"`
	// CreateCommitWait is how long the embedded store lets a new queued
	// job's create wait to share a commit with its own claim, which its
	// grain, woken as the write goes to the committer, makes at once when
	// a lane is free: one commit (one fsync on the way to the job's start)
	// instead of two. POST /jobs answers after the commit either way, so
	// with no lane free it answers up to this much later; the items of
	// POST /jobs:batch never wait. 0 never waits. The MariaDB store does
	// not wait. Default 2ms. Range 0..100ms.
	CreateCommitWait time.Duration `yaml:"create_commit_wait"`
}

// LogsConfig is the "logs" section.
type LogsConfig struct {
	// BatchLines flushes a job's pending log lines once this many are
	// buffered. Default 50. Range 1..10000.
	BatchLines int `yaml:"batch_lines"`
	// BatchWait flushes a job's pending log lines at the latest this long
	// after the first one arrived. Default 100ms.
	BatchWait time.Duration `yaml:"batch_wait"`
	// Retention is how long a finished job's log is kept. Default 24h.
	Retention time.Duration `yaml:"retention"`
}

// ClusterConfig is the "cluster" section.
type ClusterConfig struct {
	// Provider is the membership provider: redis, automanaged, test, consul,
	// etcd or k8s. Default "redis".
	Provider string `yaml:"provider"`
	// HubTTL is the TTL of a hub's heartbeat key; a silent hub drops out
	// after it. Default 90s.
	HubTTL time.Duration `yaml:"hub_ttl"`
	// ForwardTimeout bounds a request forwarded to another hub.
	// Default 60s.
	ForwardTimeout time.Duration `yaml:"forward_timeout"`
	// MemberTimeout is how long a hub may miss its membership beats (sent
	// every MemberTimeout/3) before its peers drop it from the cluster and
	// take over its grains and workers; hub_ttl keeps its record visible as
	// a dead hub afterwards. A hub that could not beat for this long leaves
	// and restarts. With consul and etcd it is the TTL of the hub's
	// registration (an etcd lease rounds it up to whole seconds), refreshed
	// by the provider. Default 6s.
	MemberTimeout time.Duration `yaml:"member_timeout"`
	// Host is the address the cluster (actor remoting) listens on and
	// advertises. Default "127.0.0.1".
	Host string `yaml:"host"`
	// Port is the cluster remoting port. Default 0 (pick a free port).
	Port int `yaml:"port"`
	// JoinTimeout bounds joining through consul, etcd or k8s at start
	// (reaching the service, registering this hub) and leaving it at stop;
	// past it the hub gives up with an error naming the provider and the
	// address. Default 15s.
	JoinTimeout time.Duration `yaml:"join_timeout"`
	// ConsulAddress is the Consul agent provider consul registers with:
	// host:port, http(s)://host:port or unix:///path. An ACL token comes
	// from CONSUL_HTTP_TOKEN, as for the consul CLI. Default
	// "127.0.0.1:8500".
	ConsulAddress string `yaml:"consul_address"`
	// EtcdEndpoints lists the etcd endpoints provider etcd uses, comma
	// separated (host:port or http(s)://host:port). Required with provider
	// etcd. Default "".
	EtcdEndpoints string `yaml:"etcd_endpoints"`
	// AutomanagedPort is the port provider automanaged serves this hub's
	// health on, on cluster.host (like the cluster port). Default 6330.
	AutomanagedPort int `yaml:"automanaged_port"`
	// AutomanagedHosts lists the health addresses of every hub of the
	// cluster, this one included, comma separated (host:automanaged_port):
	// provider automanaged polls them for the member list. Required with
	// provider automanaged. Default "".
	AutomanagedHosts string `yaml:"automanaged_hosts"`
	// TLSCA is the PEM file of the cluster CA (paprika certs ca): the
	// cluster port accepts only peers presenting a certificate it signed,
	// and this hub dials only peers whose certificate it signed. Set with
	// TLSCert and TLSKey, or none of them. Default "" (no cluster TLS).
	TLSCA string `yaml:"tls_ca"`
	// TLSCert is the PEM file of this hub's certificate (paprika certs hub),
	// signed by TLSCA, with this hub's Host among its names; it serves the
	// cluster port and authenticates this hub to its peers. Default "".
	TLSCert string `yaml:"tls_cert"`
	// TLSKey is the PEM file of TLSCert's private key. Default "".
	TLSKey string `yaml:"tls_key"`
	// Insecure lets a hub whose Host is not a loopback address run its
	// cluster port without TLS: anyone who reaches that port can then send
	// any hub actor any message. For a private network that is trusted as
	// a whole only. Default false (such a hub refuses to start).
	Insecure bool `yaml:"insecure"`
}

// TLSEnabled reports whether cluster TLS is configured (all three files).
func (c ClusterConfig) TLSEnabled() bool {
	return c.TLSCA != "" && c.TLSCert != "" && c.TLSKey != ""
}

// EtcdEndpointList is EtcdEndpoints split at commas, blanks dropped.
func (c ClusterConfig) EtcdEndpointList() []string {
	return splitList(c.EtcdEndpoints)
}

// AutomanagedHostList is AutomanagedHosts split at commas, blanks dropped.
func (c ClusterConfig) AutomanagedHostList() []string {
	return splitList(c.AutomanagedHosts)
}

// RedisConfig is the "redis" section.
type RedisConfig struct {
	// URL is the redis:// (or rediss://, unix://) URL of the coordination
	// store. Default "" (embedded, in memory). May hold a password: prefer
	// the env var in production.
	URL string `yaml:"url"`
	// Prefix namespaces every Redis key and channel of this deployment, so
	// several fleets (or test runs) can share one Redis. Default "paprika:".
	Prefix string `yaml:"prefix"`
}

// MySQLConfig is the "mysql" section.
type MySQLConfig struct {
	// DSN is the go-sql-driver DSN of the job store
	// (user:pass@tcp(host:3306)/paprika?parseTime=true). Default ""
	// (embedded database file under ./data). Holds a password: prefer the env
	// var in production.
	DSN string `yaml:"dsn"`
}

// MinIOConfig is the "minio" section.
type MinIOConfig struct {
	// Endpoint is the host:port of the S3/MinIO asset store, without a
	// scheme. Default "" (local disk under assets.dir).
	Endpoint string `yaml:"endpoint"`
	// AccessKey is the access key id. Default "". Secret: env only in
	// production.
	AccessKey string `yaml:"access_key"`
	// SecretKey is the secret key. Default "". Secret: env only in
	// production.
	SecretKey string `yaml:"secret_key"`
	// Bucket is the bucket assets go to. Default "paprika".
	Bucket string `yaml:"bucket"`
	// Secure selects https to the endpoint. Default false.
	Secure bool `yaml:"secure"`
}

// AssetsConfig is the "assets" section.
type AssetsConfig struct {
	// Dir is the directory of the local asset store, used when
	// minio.endpoint is empty. Default "./data/assets".
	Dir string `yaml:"dir"`
}

// LimitsConfig is the "limits" section: every bound a client can reach,
// each answered with a 4xx naming its key rather than by the hub running out
// of memory, disk or patience.
type LimitsConfig struct {
	// MaxParamsBytes bounds a job's params (POST /jobs) as sent, in bytes;
	// more is answered 413. Default 65536 (64 KiB).
	MaxParamsBytes int `yaml:"max_params_bytes"`
	// MaxLabels bounds the number of labels of a job or session; more is
	// answered 413. Default 32.
	MaxLabels int `yaml:"max_labels"`
	// MaxLabelKeyBytes bounds one label's key, in bytes; longer is
	// answered 413. Default 128.
	MaxLabelKeyBytes int `yaml:"max_label_key_bytes"`
	// MaxLabelValueBytes bounds one label's value, in bytes; longer is
	// answered 413. Default 1024.
	MaxLabelValueBytes int `yaml:"max_label_value_bytes"`
	// MaxQueued bounds the fleet's queued jobs: POST /jobs answers 429,
	// with Retry-After and the queue depth, while that many wait. Each hub
	// reads the depth from the scheduler at most once a second and adds its
	// own submits since, so a burst across several hubs may overshoot by
	// about a second of submits. Default 100000. 0 = no cap.
	MaxQueued int `yaml:"max_queued"`
	// MaxConnsPerIP bounds the open connections of one client address to
	// hub.listen (API, worker links and uploads together); one beyond it is
	// closed on accept. Loopback counts too: a local fleet of workers and
	// followers stays far below the default. Default 256. 0 = no cap.
	MaxConnsPerIP int `yaml:"max_conns_per_ip"`
	// APIRate bounds the API requests of one client address, per second
	// and per hub (a token bucket refilled at this rate); beyond it the
	// API answers 429 with Retry-After. It is per address and not per
	// token because a hub has a single API token, which names no client.
	// Worker links, uploads and the probes are not counted. Default 5000.
	// 0 = no cap.
	APIRate int `yaml:"api_rate"`
	// APIBurst is the bucket's size: how many requests a client may send
	// at once before APIRate paces it. Default 10000.
	APIBurst int `yaml:"api_burst"`
	// MaxLogLines bounds one job's stored log, over all its attempts: the
	// line past it is replaced by one "[log truncated: limit of N lines
	// reached]" line and later ones are refused (counted in
	// paprika_log_lines_refused_total); the job itself runs on. Default
	// 100000. 0 = no bound.
	MaxLogLines int `yaml:"max_log_lines"`
	// MaxLogBytes bounds the text of one job's stored log the same way, in
	// bytes. A log taken over by another hub is counted from there (the
	// store keeps no byte count). Default 67108864 (64 MiB). 0 = no bound.
	MaxLogBytes int `yaml:"max_log_bytes"`
	// MaxAssetBytes bounds the total size of one job's assets (the files
	// its worker uploads); an upload past it is answered 413, besides the
	// bound of 512 MiB on one asset. Default 1073741824 (1 GiB).
	MaxAssetBytes int `yaml:"max_asset_bytes"`
	// MaxSessionDownloads bounds the files one session's pages download
	// that the hub keeps (PUT /sessions/{id}/downloads/{name}); one more is
	// answered 413. Their bytes together are bounded by MaxAssetBytes, as
	// a job's assets. Default 100.
	MaxSessionDownloads int `yaml:"max_session_downloads"`

	// MaxListBytes bounds the jobs of one GET /jobs answer by their
	// encoded size as well as by limit: a page that would be larger ends
	// early, its next_cursor where it ended (one job always fits). Default
	// 4194304 (4 MiB).
	MaxListBytes int `yaml:"max_list_bytes"`
	// WorkerMaxLanes bounds the slots any one worker may claim: a worker
	// advertising more lanes gets this many placed on it (the operator's
	// PATCH cap may lower it further). Default 256. 0 = no bound.
	WorkerMaxLanes int `yaml:"worker_max_lanes"`
	// CDPTunnelsPerSession bounds the CDP clients attached to one session
	// at once (GET /sessions/{id}/cdp); one more is answered 429. Default 8.
	CDPTunnelsPerSession int `yaml:"cdp_tunnels_per_session"`
	// CDPMaxMessageBytes bounds one CDP WebSocket message a hub reads from
	// a client or a worker's tunnel; a longer one closes the tunnel with
	// 1009. Default 268435456 (256 MiB).
	CDPMaxMessageBytes int `yaml:"cdp_max_message_bytes"`
}

// MetricsConfig is the "metrics" section.
type MetricsConfig struct {
	// Listen is a second host:port that serves GET /metrics, and nothing
	// else, without the API token: the usual Prometheus scrape setup. It
	// may be a non-loopback address even on an open hub, since it exposes
	// only metrics (counts, latencies and worker ids), never jobs or
	// params; the hub logs a warning naming it. Default "" (/metrics only
	// on hub.listen, behind the API token).
	Listen string `yaml:"listen"`
}

// DebugConfig is the "debug" section.
type DebugConfig struct {
	// Pprof is a host:port serving net/http/pprof (/debug/pprof/...) for
	// profiling the hub under load. Loopback only: a profile shows code
	// paths, goroutine stacks and heap contents, so an address open to the
	// network is refused at start. Default "" (off).
	Pprof string `yaml:"pprof"`
	// FaultInjection enables POST /debug/panic, which makes one actor of the
	// hub panic (the chaos suite proves supervision with it). Never in
	// production. Default false.
	FaultInjection bool `yaml:"fault_injection"`
}

// Default returns the built-in configuration, before any file, env var or
// flag.
func Default() *Config {
	return &Config{
		Hub: HubConfig{Listen: DefaultHubListen},
		Worker: WorkerConfig{
			HeartbeatInterval: DefaultWorkerHeartbeatInterval,
			AliveWindow:       DefaultWorkerAliveWindow,
		},
		Scheduler: SchedulerConfig{
			AssignGrace:    DefaultSchedulerAssignGrace,
			DiskExcludePct: DefaultSchedulerDiskExcludePct,
			PriorityAging:  DefaultSchedulerPriorityAging,

			MaxLaneRSSMB:       DefaultSchedulerMaxLaneRSSMB,
			MaxLaneCrashes10m:  DefaultSchedulerMaxLaneCrashes10m,
			MaxLaneRestarts10m: DefaultSchedulerMaxLaneRestarts10m,
			MinShmFreeMB:       DefaultSchedulerMinShmFreeMB,
			AffinityWait:       DefaultSchedulerAffinityWait,
			SessionProfileWait: DefaultSchedulerSessionProfileWait,
		},
		Redrive: RedriveConfig{
			Interval: DefaultRedriveInterval,
			MinAge:   DefaultRedriveMinAge,
		},
		Reconciler: ReconcilerConfig{
			Interval:         DefaultReconcilerInterval,
			OrphanGrace:      DefaultReconcilerOrphanGrace,
			QueuedTimeout:    DefaultReconcilerQueuedTimeout,
			FleetReadTimeout: DefaultReconcilerFleetReadTimeout,
			FleetCache:       DefaultReconcilerFleetCache,
		},
		Jobs: JobsConfig{
			DefaultTimeout:   DefaultJobsDefaultTimeout,
			MaxAttempts:      DefaultJobsMaxAttempts,
			RetryBackoffMax:  DefaultJobsRetryBackoffMax,
			GroupCommitWait:  DefaultJobsGroupCommitWait,
			FinishCommitWait: DefaultJobsFinishCommitWait,
			CreateCommitWait: DefaultJobsCreateCommitWait,
		},
		Logs: LogsConfig{
			BatchLines: DefaultLogsBatchLines,
			BatchWait:  DefaultLogsBatchWait,
			Retention:  DefaultLogsRetention,
		},
		Cluster: ClusterConfig{
			Provider:       DefaultClusterProvider,
			HubTTL:         DefaultClusterHubTTL,
			ForwardTimeout: DefaultClusterForwardTimeout,
			MemberTimeout:  DefaultClusterMemberTimeout,
			Host:           DefaultClusterHost,
			Port:           DefaultClusterPort,
			JoinTimeout:    DefaultClusterJoinTimeout,
			ConsulAddress:  DefaultClusterConsulAddress,
			EtcdEndpoints:  DefaultClusterEtcdEndpoints,

			AutomanagedPort:  DefaultClusterAutomanagedPort,
			AutomanagedHosts: DefaultClusterAutomanagedHosts,
		},
		Redis:  RedisConfig{Prefix: DefaultRedisPrefix},
		MinIO:  MinIOConfig{Bucket: DefaultMinIOBucket},
		Assets: AssetsConfig{Dir: DefaultAssetsDir},
		Limits: LimitsConfig{
			MaxParamsBytes:       DefaultLimitsMaxParamsBytes,
			MaxLabels:            DefaultLimitsMaxLabels,
			MaxLabelKeyBytes:     DefaultLimitsMaxLabelKeyBytes,
			MaxLabelValueBytes:   DefaultLimitsMaxLabelValueBytes,
			MaxQueued:            DefaultLimitsMaxQueued,
			MaxConnsPerIP:        DefaultLimitsMaxConnsPerIP,
			APIRate:              DefaultLimitsAPIRate,
			APIBurst:             DefaultLimitsAPIBurst,
			MaxLogLines:          DefaultLimitsMaxLogLines,
			CDPTunnelsPerSession: DefaultLimitsCDPTunnelsPerSession,
			CDPMaxMessageBytes:   DefaultLimitsCDPMaxMessageBytes,
			MaxLogBytes:          DefaultLimitsMaxLogBytes,
			MaxAssetBytes:        DefaultLimitsMaxAssetBytes,
			MaxSessionDownloads:  DefaultLimitsMaxSessionDownloads,
			MaxListBytes:         DefaultLimitsMaxListBytes,
			WorkerMaxLanes:       DefaultLimitsWorkerMaxLanes,
		},
	}
}
