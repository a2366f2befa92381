package storetest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net"
	"os"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/redis/go-redis/v9"
)

// The real services tests run against, from the environment, defaulting to
// what scripts/services.sh starts on this machine.
const (
	DefaultMySQLDSN      = "root@tcp(127.0.0.1:3306)/"
	DefaultRedisURL      = "redis://127.0.0.1:6379/0"
	DefaultMinIOEndpoint = "127.0.0.1:9100"
)

// Unavailable skips the test when a service is absent locally, and fails it
// under CI=true, where .ci/run has started every service.
func Unavailable(t testing.TB, service string, err error) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is required under CI=true (run scripts/services.sh): %v", service, err)
	}
	t.Skipf("%s not reachable: %v", service, err)
}

func randomSuffix() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// MySQLDatabase creates a fresh database on the test MariaDB
// (PAPRIKA_TEST_MYSQL_DSN), drops it when the test ends, and returns a DSN
// naming it.
func MySQLDatabase(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv("PAPRIKA_TEST_MYSQL_DSN")
	if dsn == "" {
		dsn = DefaultMySQLDSN
	}
	cfg, err := gomysql.ParseDSN(dsn)
	if err != nil {
		t.Fatalf("PAPRIKA_TEST_MYSQL_DSN: %v", err)
	}
	cfg.Timeout = 2 * time.Second
	connector, err := gomysql.NewConnector(cfg)
	if err != nil {
		t.Fatalf("mysql connector: %v", err)
	}
	server := sql.OpenDB(connector)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := server.PingContext(ctx); err != nil {
		_ = server.Close()
		Unavailable(t, "MariaDB at "+cfg.Addr, err)
	}
	name := "paprika_t_" + randomSuffix()
	if _, err := server.ExecContext(ctx, "CREATE DATABASE "+name+" CHARACTER SET utf8mb4"); err != nil {
		t.Fatalf("create database %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, _ = server.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name)
		_ = server.Close()
	})
	cfg.DBName = name
	return cfg.FormatDSN()
}

// RedisPrefix checks the test Redis (PAPRIKA_TEST_REDIS_URL) and returns its
// URL and a key prefix of the test's own; the prefix's keys are deleted when
// the test ends (never FLUSHDB: other tests share the server).
func RedisPrefix(t testing.TB) (url, prefix string) {
	t.Helper()
	url = os.Getenv("PAPRIKA_TEST_REDIS_URL")
	if url == "" {
		url = DefaultRedisURL
	}
	opt, err := redis.ParseURL(url)
	if err != nil {
		t.Fatalf("PAPRIKA_TEST_REDIS_URL: %v", err)
	}
	rdb := redis.NewClient(opt)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		_ = rdb.Close()
		Unavailable(t, "Redis at "+opt.Addr, err)
	}
	prefix = "paprika_t_" + randomSuffix() + ":"
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		iter := rdb.Scan(ctx, 0, prefix+"*", 500).Iterator()
		var keys []string
		for iter.Next(ctx) {
			keys = append(keys, iter.Val())
		}
		for len(keys) > 0 {
			n := min(len(keys), 500)
			_ = rdb.Del(ctx, keys[:n]...).Err()
			keys = keys[n:]
		}
		_ = rdb.Close()
	})
	return url, prefix
}

// MinIOEndpoint checks the test MinIO (PAPRIKA_TEST_MINIO_ENDPOINT) and
// returns its endpoint, keys and a bucket name of the test's own (the store
// creates it). Objects are left to the throwaway server.
func MinIOEndpoint(t testing.TB) (endpoint, accessKey, secretKey, bucket string) {
	t.Helper()
	endpoint = os.Getenv("PAPRIKA_TEST_MINIO_ENDPOINT")
	if endpoint == "" {
		endpoint = DefaultMinIOEndpoint
	}
	accessKey, secretKey = os.Getenv("PAPRIKA_TEST_MINIO_ACCESS_KEY"), os.Getenv("PAPRIKA_TEST_MINIO_SECRET_KEY")
	if accessKey == "" {
		accessKey, secretKey = "minioadmin", "minioadmin"
	}
	c, err := net.DialTimeout("tcp", endpoint, 2*time.Second)
	if err != nil {
		Unavailable(t, "MinIO at "+endpoint, err)
	}
	_ = c.Close()
	return endpoint, accessKey, secretKey, "paprika-t-" + randomSuffix()
}
