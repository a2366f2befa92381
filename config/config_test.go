package config

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/internal/certs"
)

// repoConfig is the config.yaml at the repository root.
const repoConfig = "../config.yaml"

// withoutOrigin drops the bookkeeping so two configs compare by value.
func withoutOrigin(c *Config) *Config {
	cp := *c
	cp.origin = nil
	return &cp
}

// writeFile writes a config file into a fresh temp dir and returns its path.
func writeFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(p, []byte(body), 0o600))
	return p
}

func TestRepoConfigYAMLIsDefault(t *testing.T) {
	t.Parallel()
	c, err := Load(repoConfig, nil)
	require.NoError(t, err)
	require.Equal(t, Default(), withoutOrigin(c), "config.yaml and config.Default() drifted apart")
	for _, key := range Keys() {
		require.True(t, strings.HasPrefix(c.Origin(key), "file "+repoConfig+":"),
			"config.yaml does not set %s (origin %q); it must hold every key", key, c.Origin(key))
	}
}

func TestDefaultIsValid(t *testing.T) {
	t.Parallel()
	require.NoError(t, Default().Validate())
}

// TestFieldDocsStateDefault keeps each field's doc comment truthful: it must
// say "Default X" with X the value Default() holds.
func TestFieldDocsStateDefault(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "config.go", nil, parser.ParseComments)
	require.NoError(t, err)
	docs := map[string]string{} // "HubConfig.Listen" → doc
	ast.Inspect(f, func(n ast.Node) bool {
		ts, ok := n.(*ast.TypeSpec)
		if !ok {
			return true
		}
		st, ok := ts.Type.(*ast.StructType)
		if !ok {
			return false
		}
		for _, fl := range st.Fields.List {
			for _, name := range fl.Names {
				docs[ts.Name.Name+"."+name.Name] = strings.Join(strings.Fields(fl.Doc.Text()), " ")
			}
		}
		return false
	})
	def := Default()
	root := reflect.TypeFor[Config]()
	for _, fd := range fields {
		sec := root.Field(fd.index[0])
		name := sec.Type.Name() + "." + sec.Type.Field(fd.index[1]).Name
		require.NotEmpty(t, docs["Config."+sec.Name], "Config.%s has no doc comment", sec.Name)
		doc, ok := docs[name]
		require.True(t, ok && doc != "", "%s (%s) has no doc comment", name, fd.key)
		val, err := def.Get(fd.key)
		require.NoError(t, err)
		want := "Default " + val
		if fd.kind == kindString {
			want = "Default " + `"` + val + `"`
		}
		require.Contains(t, doc, want, "doc of %s (%s) must state its default", name, fd.key)
	}
}

func TestKeysAndEnvNames(t *testing.T) {
	t.Parallel()
	keys := Keys()
	// API.md's 40 keys plus redis.prefix, cluster.member_timeout,
	// debug.fault_injection, auth.worker_secret, auth.params_key, auth.insecure and
	// cluster.tls_ca, tls_cert, tls_key, insecure, hub.tls_cert, tls_key,
	// and the limits section (max_params_bytes, max_labels,
	// max_label_key_bytes, max_label_value_bytes, max_queued,
	// max_conns_per_ip, api_rate, api_burst, max_log_lines, max_log_bytes,
	// max_asset_bytes, max_session_downloads, max_list_bytes, worker_max_lanes,
	// cdp_tunnels_per_session, cdp_max_message_bytes), auth.worker_approval,
	// metrics.listen, scheduler.priority_aging, jobs.retry_backoff_max,
	// scheduler.tenant_label, tenant_weights, tenant_quotas, debug.pprof,
	// the four health thresholds, scheduler.affinity_wait,
	// scheduler.session_profile_wait, jobs.group_commit_wait,
	// jobs.finish_commit_wait, jobs.create_commit_wait
	require.Len(t, keys, 85)
	require.Equal(t, "PAPRIKA_JOBS_FINISH_COMMIT_WAIT", EnvName("jobs.finish_commit_wait"))
	require.Equal(t, "PAPRIKA_JOBS_CREATE_COMMIT_WAIT", EnvName("jobs.create_commit_wait"))
	require.Equal(t, "hub.listen", keys[0])
	require.Equal(t, "debug.fault_injection", keys[len(keys)-1])
	require.Equal(t, "PAPRIKA_RECONCILER_ORPHAN_GRACE", EnvName("reconciler.orphan_grace"))
	require.Equal(t, "PAPRIKA_MINIO_SECRET_KEY", EnvName("minio.secret_key"))
	require.Equal(t, "PAPRIKA_CLUSTER_ETCD_ENDPOINTS", EnvName("cluster.etcd_endpoints"))
}

func TestLoadWithoutFileUsesDefaults(t *testing.T) {
	t.Chdir(t.TempDir()) // no ./config.yaml here
	c, err := Load("", nil)
	require.NoError(t, err)
	require.Equal(t, Default(), withoutOrigin(c))
}

func TestLoadPicksConfigYAMLInWorkingDir(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, DefaultPath), []byte("hub: {listen: \"127.0.0.1:9001\"}\n"), 0o600))
	t.Chdir(dir)
	c, err := Load("", nil)
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:9001", c.Hub.Listen)
	require.Equal(t, "file config.yaml:1", c.Origin("hub.listen"))
}

func TestLoadMissingFileIsAnError(t *testing.T) {
	t.Parallel()
	_, err := Load(filepath.Join(t.TempDir(), "nope.yaml"), nil)
	require.ErrorIs(t, err, os.ErrNotExist)
}

func TestLoadEmptyAndNullSections(t *testing.T) {
	t.Parallel()
	for _, body := range []string{"", "# only comments\n", "hub:\nauth: ~\n", "hub:\n  id:\n  listen: ~\n"} {
		c, err := Load(writeFile(t, body), nil)
		require.NoError(t, err, "body %q", body)
		require.Equal(t, Default(), withoutOrigin(c), "body %q", body)
	}
}

func TestLayering(t *testing.T) {
	t.Parallel()
	p := writeFile(t, `
hub:
  listen: 127.0.0.1:9000
  id: from-file
redrive:
  interval: 5s
`)
	c, err := Load(p, []string{"PAPRIKA_HUB_ID=from-env", "PATH=/bin"})
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:9000", c.Hub.Listen) // file over default
	require.Equal(t, "from-env", c.Hub.ID)           // env over file
	require.Equal(t, 5*time.Second, c.Redrive.Interval)
	require.Equal(t, "file "+p+":3", c.Origin("hub.listen"))
	require.Equal(t, "env PAPRIKA_HUB_ID", c.Origin("hub.id"))
	require.Equal(t, "default", c.Origin("hub.advertise_url"))

	require.NoError(t, c.Set("hub.id", "from-flag")) // flag over env
	require.Equal(t, "from-flag", c.Hub.ID)
	require.Equal(t, "flag", c.Origin("hub.id"))
	require.NoError(t, c.Validate())
}

func TestEnvOverrides(t *testing.T) {
	t.Parallel()
	cases := []struct {
		env  string
		key  string
		want string
	}{
		{"PAPRIKA_HUB_LISTEN=127.0.0.1:80", "hub.listen", "127.0.0.1:80"}, // 0.0.0.0 needs tokens: TestSecurityOpenListen…
		{"PAPRIKA_AUTH_INSECURE=true", "auth.insecure", "true"},
		{"PAPRIKA_METRICS_LISTEN=0.0.0.0:9090", "metrics.listen", "0.0.0.0:9090"}, // allowed open: metrics only
		{"PAPRIKA_AUTH_WORKER_APPROVAL=true", "auth.worker_approval", "true"},
		{"PAPRIKA_HUB_ADVERTISE_URL=http://hub1:8080", "hub.advertise_url", "http://hub1:8080"},
		{"PAPRIKA_AUTH_API_TOKEN=s3cret", "auth.api_token", "s3cret"},
		{"PAPRIKA_WORKER_ALIVE_WINDOW=2m", "worker.alive_window", "120s"},
		{"PAPRIKA_SCHEDULER_DISK_EXCLUDE_PCT=95", "scheduler.disk_exclude_pct", "95"},
		{"PAPRIKA_SCHEDULER_PRIORITY_AGING=45s", "scheduler.priority_aging", "45s"},
		{"PAPRIKA_REDRIVE_DISABLE=true", "redrive.disable", "true"},
		{"PAPRIKA_RECONCILER_ORPHAN_GRACE=5s", "reconciler.orphan_grace", "5s"},
		{"PAPRIKA_RECONCILER_FLEET_READ_TIMEOUT=250ms", "reconciler.fleet_read_timeout", "250ms"},
		{"PAPRIKA_JOBS_MAX_ATTEMPTS=3", "jobs.max_attempts", "3"},
		{"PAPRIKA_LOGS_BATCH_LINES= 100 ", "logs.batch_lines", "100"},
		{"PAPRIKA_LOGS_RETENTION=168h", "logs.retention", "168h"},
		{"PAPRIKA_CLUSTER_PROVIDER=consul", "cluster.provider", "consul"},
		{"PAPRIKA_CLUSTER_AUTOMANAGED_PORT=7330", "cluster.automanaged_port", "7330"},
		{"PAPRIKA_CLUSTER_AUTOMANAGED_HOSTS=hub1:6330,hub2:6330", "cluster.automanaged_hosts", "hub1:6330,hub2:6330"},
		{"PAPRIKA_CLUSTER_PORT=6330", "cluster.port", "6330"},
		{"PAPRIKA_CLUSTER_JOIN_TIMEOUT=3s", "cluster.join_timeout", "3s"},
		{"PAPRIKA_CLUSTER_CONSUL_ADDRESS=https://consul.internal:8501", "cluster.consul_address", "https://consul.internal:8501"},
		{"PAPRIKA_CLUSTER_ETCD_ENDPOINTS=10.0.0.5:2379,10.0.0.6:2379", "cluster.etcd_endpoints", "10.0.0.5:2379,10.0.0.6:2379"},
		{"PAPRIKA_REDIS_URL=redis://:pw@10.0.0.5:6379/2", "redis.url", "redis://:pw@10.0.0.5:6379/2"},
		{"PAPRIKA_MYSQL_DSN=u:p@tcp(db:3306)/paprika?parseTime=true", "mysql.dsn", "u:p@tcp(db:3306)/paprika?parseTime=true"},
		{"PAPRIKA_MINIO_SECURE=1", "minio.secure", "true"},
		{"PAPRIKA_ASSETS_DIR=/var/lib/paprika", "assets.dir", "/var/lib/paprika"},
		{"PAPRIKA_HUB_ID=", "hub.id", ""}, // empty = unset
	}
	for _, tc := range cases {
		t.Run(tc.env, func(t *testing.T) {
			t.Parallel()
			c, err := Load(writeFile(t, ""), []string{tc.env})
			require.NoError(t, err)
			got, err := c.Get(tc.key)
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestEnvAliases(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		env      []string
		interval time.Duration
		disable  bool
		origin   string
	}{
		{"interval seconds", []string{"PAPRIKA_QUEUE_REDRIVE_INTERVAL_S=7"}, 7 * time.Second, false, "env PAPRIKA_QUEUE_REDRIVE_INTERVAL_S"},
		{"disable 1", []string{"PAPRIKA_QUEUE_REDRIVE_DISABLE=1"}, DefaultRedriveInterval, true, "default"},
		{"disable true", []string{"PAPRIKA_QUEUE_REDRIVE_DISABLE=true"}, DefaultRedriveInterval, true, "default"},
		{"disable 0", []string{"PAPRIKA_QUEUE_REDRIVE_DISABLE=0"}, DefaultRedriveInterval, false, "default"},
		{"canonical wins", []string{"PAPRIKA_REDRIVE_INTERVAL=2s", "PAPRIKA_QUEUE_REDRIVE_INTERVAL_S=9"}, 2 * time.Second, false, "env PAPRIKA_REDRIVE_INTERVAL"},
		{"canonical wins disable", []string{"PAPRIKA_REDRIVE_DISABLE=false", "PAPRIKA_QUEUE_REDRIVE_DISABLE=1"}, DefaultRedriveInterval, false, "default"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := Load(writeFile(t, ""), tc.env)
			require.NoError(t, err)
			require.Equal(t, tc.interval, c.Redrive.Interval)
			require.Equal(t, tc.disable, c.Redrive.Disable)
			require.Equal(t, tc.origin, c.Origin("redrive.interval"))
		})
	}
}

func TestEnvErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		env  string
		want string
	}{
		{"PAPRIKA_QUEUE_REDRIVE_INTERVAL_S=3s", `redrive.interval: "3s" is not a whole number of seconds (from env PAPRIKA_QUEUE_REDRIVE_INTERVAL_S)`},
		{"PAPRIKA_QUEUE_REDRIVE_INTERVAL_S=0", `redrive.interval: 0s must be greater than 0 (from env PAPRIKA_QUEUE_REDRIVE_INTERVAL_S)`},
		{"PAPRIKA_QUEUE_REDRIVE_DISABLE=yes please", `redrive.disable: "yes please" is not a boolean (true or false) (from env PAPRIKA_QUEUE_REDRIVE_DISABLE)`},
		{"PAPRIKA_RECONCILER_ORPHAN_GRACE=5", `reconciler.orphan_grace: "5" has no unit; give a Go duration such as 5s (from env PAPRIKA_RECONCILER_ORPHAN_GRACE)`},
		{"PAPRIKA_LOGS_BATCH_WAIT=soon", `logs.batch_wait: "soon" is not a Go duration (e.g. 90s, 1.5s, 100ms, 24h) (from env PAPRIKA_LOGS_BATCH_WAIT)`},
		{"PAPRIKA_CLUSTER_PORT=eighty", `cluster.port: "eighty" is not an integer (from env PAPRIKA_CLUSTER_PORT)`},
		{"PAPRIKA_SCHEDULER_DISK_EXCLUDE_PCT=140", `scheduler.disk_exclude_pct: 140 is out of range 1..100 (from env PAPRIKA_SCHEDULER_DISK_EXCLUDE_PCT)`},
		{"PAPRIKA_CLUSTER_JOIN_TIMEOUT=15", `cluster.join_timeout: "15" has no unit; give a Go duration such as 15s (from env PAPRIKA_CLUSTER_JOIN_TIMEOUT)`},
		{"PAPRIKA_CLUSTER_ETCD_ENDPOINTS=etcd1:2379;etcd2:2379", `cluster.etcd_endpoints: endpoint "etcd1:2379;etcd2:2379" is not host:port or http(s)://host:port (from env PAPRIKA_CLUSTER_ETCD_ENDPOINTS)`},
		{"PAPRIKA_CLUSTER_CONSUL_ADDRESS=consul", `cluster.consul_address: "consul" is not host:port, http(s)://host:port or unix:///path (from env PAPRIKA_CLUSTER_CONSUL_ADDRESS)`},
	}
	for _, tc := range cases {
		t.Run(tc.env, func(t *testing.T) {
			t.Parallel()
			_, err := Load(writeFile(t, ""), []string{tc.env})
			require.Error(t, err)
			require.Equal(t, tc.want, err.Error()) // exactly one line: no duplicate from Validate
		})
	}
}

func TestFileErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		body string
		want []string // each a line of the error, after "PATH:"
	}{
		{"unknown leaf", "hub:\n  lisen: 1.2.3.4:80\n",
			[]string{`2: hub.lisen: unknown key (hub has: listen, id, advertise_url, tls_cert, tls_key)`}},
		{"unknown section", "hubs:\n  listen: x\n",
			[]string{`1: hubs: unknown key (sections: hub, auth, worker, scheduler, redrive, reconciler, jobs, logs, cluster, redis, mysql, minio, assets, limits, metrics, debug)`}},
		{"duplicate", "hub:\n  id: a\n  id: b\n",
			[]string{`3: hub.id: given twice (first on line 2)`}},
		{"list value", "hub:\n  listen: [a, b]\n",
			[]string{`2: hub.listen: must be a single value, not a list or mapping`}},
		{"scalar section", "hub: 127.0.0.1:80\n",
			[]string{`1: hub: must be a mapping of keys (hub has: listen, id, advertise_url, tls_cert, tls_key)`}},
		{"bad values, all reported", "scheduler:\n  disk_exclude_pct: 140\nlogs:\n  batch_lines: lots\n  batch_wait: -1s\n",
			[]string{
				`2: scheduler.disk_exclude_pct: 140 is out of range 1..100`,
				`4: logs.batch_lines: "lots" is not an integer`,
				`5: logs.batch_wait: -1s must be greater than 0`,
			}},
		{"bool in yaml", "redrive:\n  disable: yes\n",
			[]string{`2: redrive.disable: "yes" is not a boolean (true or false)`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := writeFile(t, tc.body)
			_, err := Load(p, nil)
			require.Error(t, err)
			var want []string
			for _, w := range tc.want {
				want = append(want, p+":"+w)
			}
			require.Equal(t, strings.Join(want, "\n"), err.Error())
		})
	}
}

func TestFileNotYAML(t *testing.T) {
	t.Parallel()
	_, err := Load(writeFile(t, "hub: [\n"), nil)
	require.ErrorContains(t, err, "config.yaml")

	_, err = Load(writeFile(t, "- a\n- b\n"), nil)
	require.ErrorContains(t, err, "the top level must be a mapping of sections")
}

func TestFileAnchors(t *testing.T) {
	t.Parallel()
	c, err := Load(writeFile(t, "worker:\n  heartbeat_interval: &hb 10s\nredrive:\n  interval: *hb\n"), nil)
	require.NoError(t, err)
	require.Equal(t, 10*time.Second, c.Redrive.Interval)
}

func TestValidateErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		mutate func(c *Config)
		want   string
	}{
		{"listen not host:port", func(c *Config) { c.Hub.Listen = "localhost" }, `hub.listen: "localhost" is not host:port (e.g. 127.0.0.1:8080, :8080)`},
		{"listen bad port", func(c *Config) { c.Hub.Listen = "127.0.0.1:99999" }, `hub.listen: "127.0.0.1:99999": port "99999" is not a number in 0..65535`},
		{"metrics listen not host:port", func(c *Config) { c.Metrics.Listen = "9090" }, `metrics.listen: "9090" is not host:port (e.g. 127.0.0.1:8080, :8080)`},
		{"metrics listen is hub listen", func(c *Config) { c.Metrics.Listen = c.Hub.Listen },
			`metrics.listen: "127.0.0.1:8080" is hub.listen as well: give another port (or "" to serve /metrics on hub.listen only)`},
		{"pprof open to the network", func(c *Config) { c.Debug.Pprof = "0.0.0.0:6060" },
			`debug.pprof: "0.0.0.0:6060" is not a loopback address: the profiler is served on 127.0.0.1, [::1] or localhost only (e.g. 127.0.0.1:6060)`},
		{"pprof all interfaces", func(c *Config) { c.Debug.Pprof = ":6060" },
			`debug.pprof: ":6060" is not a loopback address: the profiler is served on 127.0.0.1, [::1] or localhost only (e.g. 127.0.0.1:6060)`},
		{"hub id", func(c *Config) { c.Hub.ID = "hub one" }, `hub.id: "hub one" may hold only letters, digits, '.', '_' and '-' (at most 64, starting with a letter or digit)`},
		{"advertise url", func(c *Config) { c.Hub.AdvertiseURL = "hub1:8080" }, `hub.advertise_url: "hub1:8080" is not an http:// or https:// URL with a host`},
		{"heartbeat zero", func(c *Config) { c.Worker.HeartbeatInterval = 0 }, `worker.heartbeat_interval: 0s must be greater than 0`},
		{"alive window zero", func(c *Config) { c.Worker.AliveWindow = 0 }, `worker.alive_window: 0s must be greater than 0`},
		{"alive window short", func(c *Config) { c.Worker.AliveWindow = 10 * time.Second }, `worker.alive_window: 10s must be longer than worker.heartbeat_interval (15s)`},
		{"assign grace", func(c *Config) { c.Scheduler.AssignGrace = -time.Second }, `scheduler.assign_grace: -1s must be greater than 0`},
		{"disk pct high", func(c *Config) { c.Scheduler.DiskExcludePct = 140 }, `scheduler.disk_exclude_pct: 140 is out of range 1..100`},
		{"priority aging zero", func(c *Config) { c.Scheduler.PriorityAging = 0 }, `scheduler.priority_aging: 0s must be greater than 0`},
		{"disk pct zero", func(c *Config) { c.Scheduler.DiskExcludePct = 0 }, `scheduler.disk_exclude_pct: 0 is out of range 1..100`},
		{"redrive interval", func(c *Config) { c.Redrive.Interval = 0 }, `redrive.interval: 0s must be greater than 0`},
		{"redrive min age", func(c *Config) { c.Redrive.MinAge = -time.Second }, `redrive.min_age: -1s must not be negative`},
		{"reconciler interval", func(c *Config) { c.Reconciler.Interval = 0 }, `reconciler.interval: 0s must be greater than 0`},
		{"orphan grace", func(c *Config) { c.Reconciler.OrphanGrace = -time.Minute }, `reconciler.orphan_grace: -60s must not be negative`},
		{"queued timeout", func(c *Config) { c.Reconciler.QueuedTimeout = 0 }, `reconciler.queued_timeout: 0s must be greater than 0`},
		{"fleet read timeout", func(c *Config) { c.Reconciler.FleetReadTimeout = 0 }, `reconciler.fleet_read_timeout: 0s must be greater than 0`},
		{"fleet cache", func(c *Config) { c.Reconciler.FleetCache = -time.Second }, `reconciler.fleet_cache: -1s must not be negative`},
		{"default timeout", func(c *Config) { c.Jobs.DefaultTimeout = 500 * time.Millisecond }, `jobs.default_timeout: 500ms must be at least 1s`},
		{"max attempts", func(c *Config) { c.Jobs.MaxAttempts = 0 }, `jobs.max_attempts: 0 is out of range 1..100`},
		{"batch lines zero", func(c *Config) { c.Logs.BatchLines = 0 }, `logs.batch_lines: 0 is out of range 1..10000`},
		{"batch lines high", func(c *Config) { c.Logs.BatchLines = 10001 }, `logs.batch_lines: 10001 is out of range 1..10000`},
		{"batch wait", func(c *Config) { c.Logs.BatchWait = 0 }, `logs.batch_wait: 0s must be greater than 0`},
		{"retention", func(c *Config) { c.Logs.Retention = 0 }, `logs.retention: 0s must be greater than 0`},
		{"provider", func(c *Config) { c.Cluster.Provider = "x" }, `cluster.provider: "x" is not one of redis, automanaged, test, consul, etcd, k8s`},
		{"hub ttl", func(c *Config) { c.Cluster.HubTTL = 0 }, `cluster.hub_ttl: 0s must be greater than 0`},
		{"forward timeout", func(c *Config) { c.Cluster.ForwardTimeout = 0 }, `cluster.forward_timeout: 0s must be greater than 0`},
		{"cluster host", func(c *Config) { c.Cluster.Host = "" }, `cluster.host: "" is not a host name or IP address`},
		{"cluster port", func(c *Config) { c.Cluster.Port = -1 }, `cluster.port: -1 is out of range 0..65535`},
		{"join timeout", func(c *Config) { c.Cluster.JoinTimeout = 0 }, `cluster.join_timeout: 0s must be greater than 0`},
		{"consul address scheme", func(c *Config) { c.Cluster.ConsulAddress = "grpc://consul:8502" }, `cluster.consul_address: "grpc://consul:8502" is not host:port, http(s)://host:port or unix:///path`},
		{"consul address no port", func(c *Config) { c.Cluster.ConsulAddress = "http://consul" }, `cluster.consul_address: "http://consul" is not host:port, http(s)://host:port or unix:///path`},
		{"consul unix relative", func(c *Config) { c.Cluster.ConsulAddress = "unix://consul.sock" }, `cluster.consul_address: "unix://consul.sock" is not host:port, http(s)://host:port or unix:///path`},
		{"consul required", func(c *Config) { c.Cluster.Provider = ProviderConsul; c.Cluster.ConsulAddress = " " }, `cluster.consul_address: required when cluster.provider is consul (the Consul agent, e.g. 127.0.0.1:8500; env PAPRIKA_CLUSTER_CONSUL_ADDRESS)`},
		{"etcd required", func(c *Config) { c.Cluster.Provider = ProviderEtcd }, `cluster.etcd_endpoints: required when cluster.provider is etcd (comma-separated host:port, e.g. 10.0.0.5:2379,10.0.0.6:2379; env PAPRIKA_CLUSTER_ETCD_ENDPOINTS)`},
		{"etcd only commas", func(c *Config) { c.Cluster.EtcdEndpoints = "," }, `cluster.etcd_endpoints: "," has an empty endpoint (give host:port[,host:port...])`},
		{"etcd empty item", func(c *Config) { c.Cluster.EtcdEndpoints = "etcd1:2379,,etcd2:2379" }, `cluster.etcd_endpoints: "etcd1:2379,,etcd2:2379" has an empty endpoint (give host:port[,host:port...])`},
		{"etcd no port", func(c *Config) { c.Cluster.EtcdEndpoints = "etcd1:2379,etcd2" }, `cluster.etcd_endpoints: endpoint "etcd2" is not host:port or http(s)://host:port`},
		{"etcd port zero", func(c *Config) { c.Cluster.EtcdEndpoints = "etcd1:0" }, `cluster.etcd_endpoints: endpoint "etcd1:0" is not host:port or http(s)://host:port`},
		{"etcd scheme", func(c *Config) { c.Cluster.EtcdEndpoints = "unix://etcd.sock" }, `cluster.etcd_endpoints: endpoint "unix://etcd.sock": scheme must be http or https`},
		{"automanaged port", func(c *Config) { c.Cluster.AutomanagedPort = 0 }, `cluster.automanaged_port: 0 is out of range 1..65535`},
		{"automanaged required", func(c *Config) { c.Cluster.Provider = ProviderAutomanaged }, `cluster.automanaged_hosts: required when cluster.provider is automanaged (every hub's host:automanaged_port, this one included, e.g. hub1:6330,hub2:6330; env PAPRIKA_CLUSTER_AUTOMANAGED_HOSTS)`},
		{"automanaged host no port", func(c *Config) { c.Cluster.AutomanagedHosts = "hub1:6330,hub2" }, `cluster.automanaged_hosts: "hub2" is not host:port`},
		{"automanaged empty item", func(c *Config) { c.Cluster.AutomanagedHosts = "hub1:6330," }, `cluster.automanaged_hosts: "hub1:6330," has an empty item (give host:port[,host:port...])`},
		{"k8s loopback", func(c *Config) { c.Cluster.Provider = ProviderK8s }, `cluster.host: "127.0.0.1" is a loopback address; with cluster.provider k8s give the pod IP (e.g. PAPRIKA_CLUSTER_HOST from the downward API's status.podIP)`},
		{"k8s localhost", func(c *Config) { c.Cluster.Provider = ProviderK8s; c.Cluster.Host = "localhost" }, `cluster.host: "localhost" is a loopback address; with cluster.provider k8s give the pod IP (e.g. PAPRIKA_CLUSTER_HOST from the downward API's status.podIP)`},
		{"redis scheme", func(c *Config) { c.Redis.URL = "http://:hunter2@localhost:6379" }, `redis.url: "http://:***@localhost:6379" is not a redis URL (redis://[:password@]host:port[/db], rediss://..., unix:///path)`},
		{"redis no host", func(c *Config) { c.Redis.URL = "redis://" }, `redis.url: "redis://" is not a redis URL (redis://[:password@]host:port[/db], rediss://..., unix:///path)`},
		{"redis db", func(c *Config) { c.Redis.URL = "redis://localhost:6379/x" }, `redis.url: "redis://localhost:6379/x": database "x" is not a number`},
		{"mysql dsn", func(c *Config) { c.MySQL.DSN = "u:hunter2@db/paprika" }, `mysql.dsn: is not a MySQL DSN (user:pass@tcp(host:3306)/paprika?parseTime=true): `},
		{"minio scheme", func(c *Config) {
			c.MinIO.Endpoint = "http://minio:9000"
			c.MinIO.AccessKey = "a"
			c.MinIO.SecretKey = "s"
		}, `minio.endpoint: "http://minio:9000": give host:port without a scheme (set minio.secure for https)`},
		{"minio access key", func(c *Config) { c.MinIO.Endpoint = "minio:9000"; c.MinIO.SecretKey = "s" }, `minio.access_key: required when minio.endpoint is set (env PAPRIKA_MINIO_ACCESS_KEY)`},
		{"minio secret key", func(c *Config) { c.MinIO.Endpoint = "minio:9000"; c.MinIO.AccessKey = "a" }, `minio.secret_key: required when minio.endpoint is set (env PAPRIKA_MINIO_SECRET_KEY)`},
		{"bucket", func(c *Config) { c.MinIO.Bucket = "Paprika_Assets" }, `minio.bucket: "Paprika_Assets" is not a bucket name (3..63 of a-z, 0-9, '.', '-', starting and ending with a letter or digit)`},
		{"assets dir", func(c *Config) { c.Assets.Dir = "" }, `assets.dir: required when minio.endpoint is empty (assets are stored on local disk)`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := Default()
			tc.mutate(c)
			err := c.Validate()
			require.Error(t, err)
			require.NotContains(t, err.Error(), "\n", "one problem, one line")
			require.True(t, strings.HasPrefix(err.Error(), tc.want), "got  %s\nwant %s", err, tc.want)
			require.NotContains(t, err.Error(), "hunter2", "a password leaked into the message")
			ke, ok := errors.AsType[*KeyError](err)
			require.True(t, ok)
			require.Equal(t, strings.SplitN(tc.want, ":", 2)[0], ke.Key)
		})
	}
}

func TestValidateAccepts(t *testing.T) {
	t.Parallel()
	c := Default()
	c.Hub.Listen = ":8080"
	c.Auth.Insecure = true // all interfaces with no tokens (TestSecurityOpenListen)
	c.Hub.ID = "hub-1.eu_west"
	c.Hub.AdvertiseURL = "https://hub1.example:8443/"
	c.Cluster.Host = "::1"
	c.Redis.URL = "rediss://user:pw@redis.example:6380/3"
	c.MySQL.DSN = "paprika:pw@tcp(127.0.0.1:3306)/paprika?parseTime=true"
	c.MinIO = MinIOConfig{Endpoint: "127.0.0.1:9000", AccessKey: "a", SecretKey: "s", Bucket: "paprika-assets"}
	c.Assets.Dir = ""
	c.Redrive.MinAge = 0
	c.Reconciler.OrphanGrace = 0
	c.Debug.Pprof = "[::1]:6060"
	require.NoError(t, c.Validate())

	c.Debug.Pprof = "localhost:0"
	c.Redis.URL = "unix:///run/redis.sock"
	c.MinIO.Endpoint = "minio"
	require.NoError(t, c.Validate())
}

func TestValidateAcceptsProviderKeys(t *testing.T) {
	t.Parallel()
	for _, addr := range []string{"127.0.0.1:8500", "consul.service:8500", "[::1]:8500", "http://consul:8500", "https://consul:8501", "unix:///run/consul.sock"} {
		c := Default()
		c.Cluster.Provider = ProviderConsul
		c.Cluster.ConsulAddress = addr
		require.NoError(t, c.Validate(), "consul_address %q", addr)
	}
	for _, eps := range []string{"127.0.0.1:2379", " etcd1:2379 , etcd2:2379 ", "http://etcd1:2379,https://etcd2:2379/", "[::1]:2379"} {
		c := Default()
		c.Cluster.Provider = ProviderEtcd
		c.Cluster.EtcdEndpoints = eps
		require.NoError(t, c.Validate(), "etcd_endpoints %q", eps)
	}
	c := Default()
	c.Cluster.Provider = ProviderK8s
	c.Cluster.Host = "10.244.1.7"
	c.Cluster.Insecure = true // a pod IP is not loopback (TestSecurityConfig...)
	require.NoError(t, c.Validate())

	c = Default()
	c.Cluster.Provider = ProviderAutomanaged
	c.Cluster.AutomanagedHosts = "127.0.0.1:6330, hub2.internal:6330"
	require.Equal(t, []string{"127.0.0.1:6330", "hub2.internal:6330"}, c.Cluster.AutomanagedHostList())
	require.NoError(t, c.Validate())

	// The provider keys are only required by their own provider.
	c = Default()
	c.Cluster.ConsulAddress = ""
	require.NoError(t, c.Validate())
}

func TestProviderKeysFromFileAndEnv(t *testing.T) {
	t.Parallel()
	p := writeFile(t, `
cluster:
  provider: etcd
  etcd_endpoints: "etcd1:2379, etcd2:2379"
  join_timeout: 5s
`)
	c, err := Load(p, nil)
	require.NoError(t, err)
	require.Equal(t, ProviderEtcd, c.Cluster.Provider)
	require.Equal(t, []string{"etcd1:2379", "etcd2:2379"}, c.Cluster.EtcdEndpointList())
	require.Equal(t, 5*time.Second, c.Cluster.JoinTimeout)
	require.Equal(t, "file "+p+":4", c.Origin("cluster.etcd_endpoints"))

	c, err = Load(p, []string{"PAPRIKA_CLUSTER_ETCD_ENDPOINTS=http://10.0.0.9:2379", "PAPRIKA_CLUSTER_JOIN_TIMEOUT=750ms"})
	require.NoError(t, err)
	require.Equal(t, []string{"http://10.0.0.9:2379"}, c.Cluster.EtcdEndpointList())
	require.Equal(t, 750*time.Millisecond, c.Cluster.JoinTimeout)
	require.Equal(t, "env PAPRIKA_CLUSTER_ETCD_ENDPOINTS", c.Origin("cluster.etcd_endpoints"))

	// A provider chosen by env without its address: the message names the
	// missing key and its variable.
	_, err = Load(writeFile(t, ""), []string{"PAPRIKA_CLUSTER_PROVIDER=etcd"})
	require.EqualError(t, err, `cluster.etcd_endpoints: required when cluster.provider is etcd (comma-separated host:port, e.g. 10.0.0.5:2379,10.0.0.6:2379; env PAPRIKA_CLUSTER_ETCD_ENDPOINTS)`)

	// A blank value set in the file is blamed on its line.
	p = writeFile(t, "cluster:\n  provider: consul\n  consul_address: \"\"\n")
	_, err = Load(p, nil)
	require.EqualError(t, err, p+`:3: cluster.consul_address: required when cluster.provider is consul (the Consul agent, e.g. 127.0.0.1:8500; env PAPRIKA_CLUSTER_CONSUL_ADDRESS)`)

	_, err = Load(writeFile(t, "cluster:\n  provider: k8s\n"), nil)
	require.ErrorContains(t, err, `cluster.host: "127.0.0.1" is a loopback address; with cluster.provider k8s`)
}

func TestValidateCollectsEveryProblem(t *testing.T) {
	t.Parallel()
	c := Default()
	c.Hub.Listen = "nope"
	c.Scheduler.DiskExcludePct = 140
	c.Cluster.Provider = "x"
	c.Logs.BatchLines = 0
	err := c.Validate()
	require.Error(t, err)
	lines := strings.Split(err.Error(), "\n")
	require.Len(t, lines, 4)
	require.True(t, strings.HasPrefix(lines[0], "hub.listen: "))
	require.True(t, strings.HasPrefix(lines[1], "scheduler.disk_exclude_pct: "))
	require.True(t, strings.HasPrefix(lines[2], "logs.batch_lines: "))
	require.True(t, strings.HasPrefix(lines[3], "cluster.provider: "))
}

func TestSet(t *testing.T) {
	t.Parallel()
	c := Default()
	require.NoError(t, c.Set("hub.listen", "127.0.0.1:9000"))
	require.Equal(t, "127.0.0.1:9000", c.Hub.Listen)
	require.NoError(t, c.Set("reconciler.fleet_read_timeout", "2.5s"))
	require.Equal(t, 2500*time.Millisecond, c.Reconciler.FleetReadTimeout)

	require.EqualError(t, c.Set("hub.lisen", "x"), "hub.lisen: unknown key (hub has: listen, id, advertise_url, tls_cert, tls_key)")
	require.EqualError(t, c.Set("listen", "x"), "listen: unknown key (sections: hub, auth, worker, scheduler, redrive, reconciler, jobs, logs, cluster, redis, mysql, minio, assets, limits, metrics, debug)")
	require.EqualError(t, c.Set("hub.listen", "nope"), `hub.listen: "nope" is not host:port (e.g. 127.0.0.1:8080, :8080)`)
	require.EqualError(t, c.Set("jobs.max_attempts", "x"), `jobs.max_attempts: "x" is not an integer`)

	_, err := c.Get("nope.nope")
	require.Error(t, err)
}

func TestFormatDuration(t *testing.T) {
	t.Parallel()
	for d, want := range map[time.Duration]string{
		0:                       "0s",
		90 * time.Second:        "90s",
		300 * time.Second:       "300s",
		1500 * time.Millisecond: "1.5s",
		100 * time.Millisecond:  "100ms",
		24 * time.Hour:          "24h",
		-time.Second:            "-1s",
		1500 * time.Microsecond: "1.5ms",
	} {
		require.Equal(t, want, FormatDuration(d))
		back, err := time.ParseDuration(want)
		require.NoError(t, err)
		require.Equal(t, d, back)
	}
}

func TestWriteYAMLMasksSecretsAndRoundTrips(t *testing.T) {
	t.Parallel()
	c, err := Load(writeFile(t, "hub:\n  id: hub-1\n"), []string{
		"PAPRIKA_AUTH_API_TOKEN=tok-api",
		"PAPRIKA_AUTH_WORKER_TOKEN=tok-worker",
		"PAPRIKA_MINIO_ENDPOINT=minio:9000",
		"PAPRIKA_MINIO_ACCESS_KEY=AKIA",
		"PAPRIKA_MINIO_SECRET_KEY=tok-minio",
		"PAPRIKA_REDIS_URL=redis://:tok-redis@redis:6379/1",
		"PAPRIKA_MYSQL_DSN=paprika:tok-mysql@tcp(db:3306)/paprika?parseTime=true",
		"PAPRIKA_RECONCILER_FLEET_READ_TIMEOUT=2.5s",
	})
	require.NoError(t, err)
	require.NoError(t, c.Set("hub.listen", "127.0.0.1:9000"))

	var b strings.Builder
	require.NoError(t, c.WriteYAML(&b))
	out := b.String()
	require.NotContains(t, out, "tok-")
	require.Contains(t, out, "  listen: 127.0.0.1:9000 # flag\n")
	require.Contains(t, out, "  api_token: '***' # env PAPRIKA_AUTH_API_TOKEN\n")
	require.Contains(t, out, "  url: redis://:***@redis:6379/1 # env PAPRIKA_REDIS_URL\n")
	require.Contains(t, out, "  dsn: paprika:***@tcp(db:3306)/paprika?parseTime=true # env PAPRIKA_MYSQL_DSN\n")
	require.Contains(t, out, "  access_key: AKIA")
	require.Contains(t, out, "  fleet_read_timeout: 2.5s")
	require.Contains(t, out, "  orphan_grace: 300s\n")
	require.Contains(t, out, "  advertise_url: \"\"\n")

	back, err := Load(writeFile(t, out), nil)
	require.NoError(t, err)
	want := withoutOrigin(c)
	want.Auth = AuthConfig{WorkerToken: masked, APIToken: masked}
	want.MinIO.SecretKey = masked
	want.Redis.URL = "redis://:***@redis:6379/1"
	want.MySQL.DSN = "paprika:***@tcp(db:3306)/paprika?parseTime=true"
	require.Equal(t, want, withoutOrigin(back))
}

func TestWriteYAMLOfDefaultsLoadsBack(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	require.NoError(t, Default().WriteYAML(&b))
	require.NotContains(t, b.String(), "#", "defaults carry no origin comments")
	back, err := Load(writeFile(t, b.String()), nil)
	require.NoError(t, err)
	require.Equal(t, Default(), withoutOrigin(back))
}

// The secret that mints every worker's credential comes from the
// environment only, and is long enough.
func TestSecurityWorkerSecretFromEnvOnly(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(p, []byte("auth:\n  worker_secret: from-a-file-0123456789\n"), 0o600))
	_, err := Load(p, nil)
	require.ErrorContains(t, err, "auth.worker_secret")
	require.ErrorContains(t, err, "environment only")

	_, err = Load("", []string{"PAPRIKA_AUTH_WORKER_SECRET=short"})
	require.ErrorContains(t, err, "at least 16 bytes")

	c, err := Load("", []string{"PAPRIKA_AUTH_WORKER_SECRET=from-the-env-0123456789"})
	require.NoError(t, err)
	require.Equal(t, "from-the-env-0123456789", c.Auth.WorkerSecret)
	var out strings.Builder
	require.NoError(t, c.WriteYAML(&out))
	require.NotContains(t, out.String(), "from-the-env-0123456789", "--check-config masks it")
}

// TestSecurityConfigNonLoopbackNeedsClusterTLS: a cluster port other
// machines can reach runs TLS, unless cluster.insecure says otherwise.
func TestSecurityConfigNonLoopbackNeedsClusterTLS(t *testing.T) {
	t.Parallel()
	_, err := Load("", []string{"PAPRIKA_CLUSTER_HOST=10.1.2.3"})
	require.EqualError(t, err, `cluster.host: "10.1.2.3" is not a loopback address and cluster TLS is off: set cluster.tls_ca, cluster.tls_cert and cluster.tls_key `+
		`(paprika certs), or cluster.insecure: true to run the cluster port without TLS (from env PAPRIKA_CLUSTER_HOST)`)
	for _, host := range []string{"0.0.0.0", "hub1.internal", "::"} {
		c := Default()
		c.Cluster.Host = host
		require.ErrorContains(t, c.Validate(), "cluster.insecure: true", host)
	}
	for _, host := range []string{"127.0.0.1", "localhost", "::1", "127.0.0.2"} {
		c := Default()
		c.Cluster.Host = host
		require.NoError(t, c.Validate(), host)
	}
	c, err := Load("", []string{"PAPRIKA_CLUSTER_HOST=10.1.2.3", "PAPRIKA_CLUSTER_INSECURE=true"})
	require.NoError(t, err)
	require.True(t, c.Cluster.Insecure)

	dir := t.TempDir()
	require.NoError(t, certs.MakeCA(dir, false, time.Now()))
	require.NoError(t, certs.MakeHub(dir, []string{"10.1.2.3"}, false, time.Now()))
	ca, crt, key := filepath.Join(dir, certs.CACert), filepath.Join(dir, certs.HubCert), filepath.Join(dir, certs.HubKey)
	c, err = Load("", []string{"PAPRIKA_CLUSTER_HOST=10.1.2.3", "PAPRIKA_CLUSTER_TLS_CA=" + ca,
		"PAPRIKA_CLUSTER_TLS_CERT=" + crt, "PAPRIKA_CLUSTER_TLS_KEY=" + key})
	require.NoError(t, err)
	require.True(t, c.Cluster.TLSEnabled())
	require.Equal(t, ca, c.Cluster.TLSCA)
}

// TestSecurityConfigClusterTLSFiles: all three or none, each readable and
// a matching PEM pair from a CA file; each problem names its key.
func TestSecurityConfigClusterTLSFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, certs.MakeCA(dir, false, time.Now()))
	require.NoError(t, certs.MakeHub(dir, []string{"127.0.0.1"}, false, time.Now()))
	ca, crt, key := filepath.Join(dir, certs.CACert), filepath.Join(dir, certs.HubCert), filepath.Join(dir, certs.HubKey)
	missing := filepath.Join(dir, "nope.pem")
	junk := filepath.Join(dir, "junk.pem")
	require.NoError(t, os.WriteFile(junk, []byte("junk"), 0o600))
	cases := []struct {
		name         string
		ca, crt, key string
		want         string
	}{
		{"only ca", ca, "", "", "cluster.tls_cert: required when any of cluster.tls_ca, cluster.tls_cert, cluster.tls_key is set (give all three; env PAPRIKA_CLUSTER_TLS_CERT)"},
		{"no key", ca, crt, "", "cluster.tls_key: required when any of"},
		{"no ca", "", crt, key, "cluster.tls_ca: required when any of"},
		{"unreadable ca", missing, crt, key, "cluster.tls_ca: cannot read " + missing + ": no such file or directory"},
		{"unreadable key", ca, crt, missing, "cluster.tls_key: cannot read " + missing},
		{"ca not pem", junk, crt, key, "cluster.tls_ca: " + junk + " holds no PEM certificate"},
		{"cert not pem", ca, junk, key, "cluster.tls_cert: " + junk + " with cluster.tls_key " + key + ": tls: failed to find any PEM data in certificate input"},
		{"key of another cert", ca, crt, filepath.Join(dir, certs.CAKey), "cluster.tls_cert: " + crt + " with cluster.tls_key"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := Default()
			c.Cluster.TLSCA, c.Cluster.TLSCert, c.Cluster.TLSKey = tc.ca, tc.crt, tc.key
			err := c.Validate()
			require.Error(t, err)
			require.NotContains(t, err.Error(), "\n", "one problem, one line")
			require.True(t, strings.HasPrefix(err.Error(), tc.want), "got  %s\nwant %s", err, tc.want)
		})
	}
}

// TestSecurityConfigHubTLSFiles: hub.tls_cert and hub.tls_key come
// together, from the environment too, each readable and a matching PEM
// pair; each problem names its key on one line.
func TestSecurityConfigHubTLSFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, certs.MakeCA(dir, false, time.Now()))
	require.NoError(t, certs.MakeHub(dir, []string{"127.0.0.1"}, false, time.Now()))
	crt, key := filepath.Join(dir, certs.HubCert), filepath.Join(dir, certs.HubKey)
	missing := filepath.Join(dir, "nope.pem")
	junk := filepath.Join(dir, "junk.pem")
	require.NoError(t, os.WriteFile(junk, []byte("junk"), 0o600))

	c, err := Load("", []string{"PAPRIKA_HUB_TLS_CERT=" + crt, "PAPRIKA_HUB_TLS_KEY=" + key})
	require.NoError(t, err)
	require.True(t, c.Hub.TLSEnabled())
	require.Equal(t, "env PAPRIKA_HUB_TLS_CERT", c.Origin("hub.tls_cert"))
	require.False(t, Default().Hub.TLSEnabled())

	cases := []struct {
		name     string
		crt, key string
		want     string
	}{
		{"only cert", crt, "", "hub.tls_key: required when either of hub.tls_cert, hub.tls_key is set (give both; env PAPRIKA_HUB_TLS_KEY)"},
		{"only key", "", key, "hub.tls_cert: required when either of"},
		{"unreadable cert", missing, key, "hub.tls_cert: cannot read " + missing + ": no such file or directory"},
		{"unreadable key", crt, missing, "hub.tls_key: cannot read " + missing},
		{"cert not pem", junk, key, "hub.tls_cert: " + junk + " with hub.tls_key " + key + ": tls: failed to find any PEM data in certificate input"},
		{"key of another cert", crt, filepath.Join(dir, certs.CAKey), "hub.tls_cert: " + crt + " with hub.tls_key"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := Default()
			c.Hub.TLSCert, c.Hub.TLSKey = tc.crt, tc.key
			err := c.Validate()
			require.Error(t, err)
			require.NotContains(t, err.Error(), "\n", "one problem, one line")
			require.True(t, strings.HasPrefix(err.Error(), tc.want), "got  %s\nwant %s", err, tc.want)
		})
	}
}

// The key that seals stored proxy passwords comes from the environment
// only, and is long enough.
func TestSecurityParamsKeyFromEnvOnly(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(p, []byte("auth:\n  params_key: from-a-file-0123456789\n"), 0o600))
	_, err := Load(p, nil)
	require.ErrorContains(t, err, "auth.params_key")
	require.ErrorContains(t, err, "environment only")

	_, err = Load("", []string{"PAPRIKA_AUTH_PARAMS_KEY=short"})
	require.ErrorContains(t, err, "at least 16 bytes")

	c, err := Load("", []string{"PAPRIKA_AUTH_PARAMS_KEY=from-the-env-0123456789"})
	require.NoError(t, err)
	require.Equal(t, "from-the-env-0123456789", c.Auth.ParamsKey)
}

// TestTenantKeys: tenant_weights and tenant_quotas parse as documented and
// refuse what they cannot mean, naming the key.
func TestTenantKeys(t *testing.T) {
	t.Parallel()
	c := Default()
	c.Scheduler.TenantWeights = "acme=3, beta=0.5"
	c.Scheduler.TenantQuotas = "*=running:10/queued:1000, acme=running:50"
	require.NoError(t, c.Validate())
	w, err := c.Scheduler.ParseTenantWeights()
	require.NoError(t, err)
	require.Equal(t, map[string]float64{"acme": 3, "beta": 0.5}, w)
	q, err := c.Scheduler.ParseTenantQuotas()
	require.NoError(t, err)
	require.Equal(t, TenantQuota{MaxRunning: 10, MaxQueued: 1000}, q.For("other"))
	require.Equal(t, TenantQuota{MaxRunning: 50}, q.For("acme"))
	require.True(t, q.Any())
	for _, bad := range []struct{ key, weights, quotas string }{
		{"scheduler.tenant_weights", "acme", ""},
		{"scheduler.tenant_weights", "acme=0", ""},
		{"scheduler.tenant_weights", "acme=1,acme=2", ""},
		{"scheduler.tenant_quotas", "", "acme=running:-1"},
		{"scheduler.tenant_quotas", "", "acme=jobs:3"},
		{"scheduler.tenant_quotas", "", "=running:3"},
	} {
		c := Default()
		c.Scheduler.TenantWeights, c.Scheduler.TenantQuotas = bad.weights, bad.quotas
		err := c.Validate()
		require.Error(t, err, "%+v", bad)
		require.Contains(t, err.Error(), bad.key)
	}
}
