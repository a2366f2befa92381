package miniostore_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"testing"
	"time"

	"github.com/paprika-hub/paprika/persistence/storetest"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/persistence/miniostore"
)

// Environment of the tests, with their defaults (scripts/services.sh
// starts a MinIO that matches them).
const (
	envEndpoint     = "PAPRIKA_TEST_MINIO_ENDPOINT"
	envAccessKey    = "PAPRIKA_TEST_MINIO_ACCESS_KEY"
	envSecretKey    = "PAPRIKA_TEST_MINIO_SECRET_KEY"
	defaultEndpoint = "127.0.0.1:9100"
	defaultKey      = "minioadmin"
)

// cleanupTimeout bounds the removal of a test's bucket.
const cleanupTimeout = time.Minute

func getenv(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// testConfig is the configuration of a Store on bucket of the test server.
func testConfig(bucket string) miniostore.Config {
	return miniostore.Config{
		Endpoint:  getenv(envEndpoint, defaultEndpoint),
		AccessKey: getenv(envAccessKey, defaultKey),
		SecretKey: getenv(envSecretKey, defaultKey),
		Bucket:    bucket,
	}
}

// requireServer skips t when the test server does not accept connections,
// or fails it under CI (CI=true), where scripts/services.sh must have
// started one.
func requireServer(t *testing.T) {
	t.Helper()
	endpoint := getenv(envEndpoint, defaultEndpoint)
	conn, err := net.DialTimeout("tcp", endpoint, 2*time.Second)
	if err == nil {
		conn.Close()
		return
	}
	storetest.Unavailable(t, fmt.Sprintf("MinIO at %s (%s)", endpoint, envEndpoint), err)
}

// newBucketName returns a bucket name no other test uses.
func newBucketName() string {
	b := make([]byte, 8)
	rand.Read(b)
	return "paprika-t-" + hex.EncodeToString(b)
}

// adminClient returns a client of the test server, apart from any Store,
// to look behind a Store's back and to clean up. Its idle connections are
// dropped in t.Cleanup.
func adminClient(t *testing.T) *minio.Client {
	t.Helper()
	cfg := testConfig("")
	transport, err := minio.DefaultTransport(false)
	require.NoError(t, err)
	c, err := minio.New(cfg.Endpoint, &minio.Options{
		Creds:     credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, ""),
		Transport: transport,
	})
	require.NoError(t, err)
	t.Cleanup(transport.CloseIdleConnections)
	return c
}

// removeBucketInCleanup removes bucket and everything in it when t ends
// (and does nothing if it was never created).
func removeBucketInCleanup(t *testing.T, admin *minio.Client, bucket string) {
	t.Helper()
	t.Cleanup(func() {
		// t.Context() is already cancelled when cleanups run.
		ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer cancel()
		ok, err := admin.BucketExists(ctx, bucket)
		require.NoError(t, err)
		if !ok {
			return
		}
		objects := admin.ListObjects(ctx, bucket, minio.ListObjectsOptions{Recursive: true})
		for rerr := range admin.RemoveObjects(ctx, bucket, objects, minio.RemoveObjectsOptions{}) {
			require.NoError(t, rerr.Err, "remove %s/%s", bucket, rerr.ObjectName)
		}
		require.NoError(t, admin.RemoveBucket(ctx, bucket), "remove bucket %s", bucket)
	})
}

// setup returns a Store on a fresh bucket of its own, removed with its
// objects when t ends.
func setup(t *testing.T) *miniostore.Store {
	t.Helper()
	s, _, _ := setupBucket(t)
	return s
}

// setupBucket is setup that also returns a client of the server and the
// Store's bucket, to look behind the Store's back.
func setupBucket(t *testing.T) (s *miniostore.Store, admin *minio.Client, bucket string) {
	t.Helper()
	requireServer(t)
	admin = adminClient(t)
	bucket = newBucketName()
	removeBucketInCleanup(t, admin, bucket)
	s, err := miniostore.New(t.Context(), testConfig(bucket))
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s, admin, bucket
}
