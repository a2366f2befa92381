package hub

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/paprika-hub/paprika/config"
	"github.com/paprika-hub/paprika/persistence"
	"github.com/paprika-hub/paprika/persistence/assetdir"
	"github.com/paprika-hub/paprika/persistence/bolt"
	"github.com/paprika-hub/paprika/persistence/memory"
	"github.com/paprika-hub/paprika/persistence/miniostore"
	"github.com/paprika-hub/paprika/persistence/mysql"
	"github.com/paprika-hub/paprika/persistence/redisstore"
)

// Stores are the hub's store clients, each behind its contract.
type Stores struct {
	Jobs    persistence.JobStore
	Logs    persistence.LogStore
	Workers persistence.WorkerRegistry
	Hubs    persistence.HubRegistry
	// Sessions shares the coordination store: Redis when named, so a
	// session outlives its hub; in memory otherwise (one hub).
	Sessions persistence.SessionStore
	// Approvals records the worker ids an operator approved
	// (auth.worker_approval): Redis when named, so every hub shares them,
	// else a file beside the embedded job file. nil when approval is off.
	Approvals persistence.ApprovalStore
	Assets    persistence.AssetStore
	// Redis is the client of the real coordination store, nil when embedded;
	// the cluster membership provider shares it.
	Redis *redis.Client
	// Kinds names each store's implementation, for the start-up log.
	Kinds map[string]string
	close []func() error
}

// JobsFile is the embedded job database, beside the embedded assets.
func JobsFile(cfg *config.Config) string {
	return filepath.Join(filepath.Dir(filepath.Clean(cfg.Assets.Dir)), "jobs.db")
}

// ApprovalsFile is the embedded approval file, beside the embedded job file.
func ApprovalsFile(cfg *config.Config) string {
	return filepath.Join(filepath.Dir(JobsFile(cfg)), "approvals.db")
}

// storeOpenTimeout bounds connecting to each real store at start.
const storeOpenTimeout = 30 * time.Second

// OpenStores opens what the config names; an empty URL/DSN/endpoint means
// the embedded implementation of that store. The code above the store
// interfaces is the same either way.
func OpenStores(ctx context.Context, cfg *config.Config, log *slog.Logger) (s *Stores, err error) {
	opened := &Stores{Kinds: map[string]string{}}
	s = opened
	defer func() {
		if err != nil {
			// Close what opened: s itself is nil by now (return nil, err).
			_ = opened.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(ctx, storeOpenTimeout)
	defer cancel()

	if dsn := cfg.MySQL.DSN; dsn != "" {
		jobs, err := mysql.Open(ctx, dsn, mysql.WithLogger(log), mysql.WithGroupWait(cfg.Jobs.GroupCommitWait),
			mysql.WithFinishWait(cfg.Jobs.FinishCommitWait))
		if err != nil {
			return nil, fmt.Errorf("open job store (mysql.dsn): %w", err)
		}
		s.Jobs, s.Kinds["jobs"] = jobs, "mariadb"
		s.close = append(s.close, jobs.Close)
	} else {
		path := JobsFile(cfg)
		jobs, err := bolt.Open(path, bolt.WithGroupWait(cfg.Jobs.GroupCommitWait), bolt.WithFinishWait(cfg.Jobs.FinishCommitWait),
			bolt.WithCreateWait(cfg.Jobs.CreateCommitWait))
		if err != nil {
			return nil, fmt.Errorf("open embedded job store %s: %w", path, err)
		}
		s.Jobs, s.Kinds["jobs"] = jobs, "embedded:"+path
		s.close = append(s.close, jobs.Close)
	}

	if url := cfg.Redis.URL; url != "" {
		rdb, err := redisstore.Connect(ctx, url)
		if err != nil {
			return nil, fmt.Errorf("connect redis (redis.url): %w", err)
		}
		s.Redis = rdb
		s.close = append(s.close, rdb.Close)
		opts := []redisstore.Option{redisstore.WithPrefix(cfg.Redis.Prefix), redisstore.WithLogger(log)}
		s.Logs = redisstore.NewLogStore(rdb, append(opts, redisstore.WithRetention(cfg.Logs.Retention))...)
		s.Workers = redisstore.NewWorkerRegistry(rdb, opts...)
		s.Hubs = redisstore.NewHubRegistry(rdb, opts...)
		s.Sessions = redisstore.NewSessionStore(rdb, opts...)
		s.Kinds["logs"], s.Kinds["workers"], s.Kinds["hubs"], s.Kinds["sessions"] = "redis", "redis", "redis", "redis"
		if cfg.Auth.WorkerApproval {
			s.Approvals, s.Kinds["approvals"] = redisstore.NewApprovalStore(rdb, opts...), "redis"
		}
	} else {
		s.Logs, s.Kinds["logs"] = memory.NewLogStore(memory.WithRetention(cfg.Logs.Retention)), "embedded:memory"
		s.Workers, s.Kinds["workers"] = memory.NewWorkerRegistry(), "embedded:memory"
		s.Hubs, s.Kinds["hubs"] = memory.NewHubRegistry(), "embedded:memory"
		s.Sessions, s.Kinds["sessions"] = memory.NewSessionStore(), "embedded:memory"
		if cfg.Auth.WorkerApproval {
			// Not in memory: an approval must survive the hub's restart.
			path := ApprovalsFile(cfg)
			approvals, err := bolt.OpenApprovals(path)
			if err != nil {
				return nil, fmt.Errorf("open embedded approval store (auth.worker_approval) %s: %w", path, err)
			}
			s.Approvals, s.Kinds["approvals"] = approvals, "embedded:"+path
			s.close = append(s.close, approvals.Close)
		}
	}

	if ep := cfg.MinIO.Endpoint; ep != "" {
		assets, err := miniostore.New(ctx, miniostore.Config{Endpoint: ep, AccessKey: cfg.MinIO.AccessKey,
			SecretKey: cfg.MinIO.SecretKey, Bucket: cfg.MinIO.Bucket, Secure: cfg.MinIO.Secure})
		if err != nil {
			return nil, fmt.Errorf("open asset store (minio.endpoint): %w", err)
		}
		s.Assets, s.Kinds["assets"] = assets, "minio:"+ep+"/"+cfg.MinIO.Bucket
		s.close = append(s.close, assets.Close)
	} else {
		assets, err := assetdir.New(cfg.Assets.Dir)
		if err != nil {
			return nil, fmt.Errorf("open asset dir %s: %w", cfg.Assets.Dir, err)
		}
		s.Assets, s.Kinds["assets"] = assets, "embedded:"+cfg.Assets.Dir
	}
	return s, nil
}

// Close closes every store client, last of all in the shutdown order.
func (s *Stores) Close() error {
	var first error
	for i := len(s.close) - 1; i >= 0; i-- {
		if err := s.close[i](); err != nil && first == nil {
			first = err
		}
	}
	s.close = nil
	return first
}
