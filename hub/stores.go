package hub

import (
	"fmt"
	"path/filepath"

	"github.com/paprika-hub/paprika/config"
	"github.com/paprika-hub/paprika/persistence"
	"github.com/paprika-hub/paprika/persistence/assetdir"
	"github.com/paprika-hub/paprika/persistence/bolt"
	"github.com/paprika-hub/paprika/persistence/memory"
)

// Stores are the hub's store clients, each behind its contract.
type Stores struct {
	Jobs    persistence.JobStore
	Logs    persistence.LogStore
	Workers persistence.WorkerRegistry
	Hubs    persistence.HubRegistry
	Assets  persistence.AssetStore
	// Kinds names each store's implementation, for /readyz and the logs.
	Kinds map[string]string
	close []func() error
}

// JobsFile is the embedded job database, beside the embedded assets.
func JobsFile(cfg *config.Config) string {
	return filepath.Join(filepath.Dir(filepath.Clean(cfg.Assets.Dir)), "jobs.db")
}

// OpenStores opens what the config names; an empty URL/DSN/endpoint means
// the embedded implementation of that store.
func OpenStores(cfg *config.Config) (*Stores, error) {
	s := &Stores{Kinds: map[string]string{}}
	if cfg.MySQL.DSN != "" || cfg.Redis.URL != "" || cfg.MinIO.Endpoint != "" {
		return nil, fmt.Errorf("real stores (mysql.dsn, redis.url, minio.endpoint) are not built into this hub yet; leave them empty for the embedded stores")
	}
	path := JobsFile(cfg)
	jobs, err := bolt.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open embedded job store %s: %w", path, err)
	}
	s.Jobs, s.Kinds["jobs"] = jobs, "embedded:"+path
	s.close = append(s.close, jobs.Close)
	s.Logs, s.Kinds["logs"] = memory.NewLogStore(), "embedded:memory"
	s.Workers, s.Kinds["workers"] = memory.NewWorkerRegistry(), "embedded:memory"
	s.Hubs, s.Kinds["hubs"] = memory.NewHubRegistry(), "embedded:memory"
	assets, err := assetdir.New(cfg.Assets.Dir)
	if err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("open asset dir %s: %w", cfg.Assets.Dir, err)
	}
	s.Assets, s.Kinds["assets"] = assets, "embedded:"+cfg.Assets.Dir
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
