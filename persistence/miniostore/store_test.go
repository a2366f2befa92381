package miniostore_test

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/persistence"
	"github.com/paprika-hub/paprika/persistence/miniostore"
	"github.com/paprika-hub/paprika/persistence/storetest"
)

func TestAssetStore(t *testing.T) {
	t.Parallel()
	storetest.RunAssetStore(t, func(t *testing.T) persistence.AssetStore { return setup(t) })
}

// TestNewCreatesBucket checks New creates a missing bucket, and that a
// second New on it (the next hub, or a restart) just uses it.
func TestNewCreatesBucket(t *testing.T) {
	t.Parallel()
	requireServer(t)
	ctx := t.Context()
	admin := adminClient(t)
	bucket := newBucketName()
	removeBucketInCleanup(t, admin, bucket)

	ok, err := admin.BucketExists(ctx, bucket)
	require.NoError(t, err)
	require.False(t, ok)

	first, err := miniostore.New(ctx, testConfig(bucket))
	require.NoError(t, err)
	defer first.Close()
	ok, err = admin.BucketExists(ctx, bucket)
	require.NoError(t, err)
	require.True(t, ok, "New created the bucket")

	second, err := miniostore.New(ctx, testConfig(bucket))
	require.NoError(t, err, "New on an existing bucket")
	defer second.Close()
	require.NoError(t, first.Put(ctx, "job-1", "a.txt", "text/plain", strings.NewReader("shared"), 6))
	rc, info, err := second.Get(ctx, "job-1", "a.txt")
	require.NoError(t, err)
	defer rc.Close()
	data, err := io.ReadAll(rc)
	require.NoError(t, err)
	require.Equal(t, "shared", string(data))
	require.Equal(t, persistence.AssetInfo{Name: "a.txt", ContentType: "text/plain", Size: 6}, info)

	// The object is where other tools expect it, with its type.
	st, err := admin.StatObject(ctx, bucket, "job-1/a.txt", minio.StatObjectOptions{})
	require.NoError(t, err)
	require.Equal(t, "text/plain", st.ContentType)
}

// TestNewRace starts hubs together on a missing bucket: all of them must
// come up, whoever created the bucket.
func TestNewRace(t *testing.T) {
	t.Parallel()
	requireServer(t)
	const hubs = 6
	admin := adminClient(t)
	bucket := newBucketName()
	removeBucketInCleanup(t, admin, bucket)

	stores, errs := storetest.AtOnce(hubs, func(int) (*miniostore.Store, error) {
		return miniostore.New(t.Context(), testConfig(bucket))
	})
	for i := range hubs {
		require.NoError(t, errs[i], "hub %d", i)
		stores[i].Close()
	}

	// The answer a loser of the race gets, which New takes as success.
	err := admin.MakeBucket(t.Context(), bucket, minio.MakeBucketOptions{})
	require.Equal(t, minio.BucketAlreadyOwnedByYou, minio.ToErrorResponse(err).Code, "%v", err)
}

// TestUnavailable checks a server that cannot be reached is
// persistence.ErrUnavailable. It needs no server.
func TestUnavailable(t *testing.T) {
	t.Parallel()
	// A port that was free a moment ago: connections are refused.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())

	cfg := testConfig(newBucketName())
	cfg.Endpoint = addr
	start := time.Now()
	_, err = miniostore.New(t.Context(), cfg)
	require.ErrorIs(t, err, persistence.ErrUnavailable)
	t.Logf("unavailable after %s: %v", time.Since(start).Round(time.Millisecond), err)
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	good := miniostore.Config{Endpoint: "minio:9000", AccessKey: "a", SecretKey: "s", Bucket: "paprika"}
	require.NoError(t, good.Validate())
	tests := []struct {
		name string
		edit func(*miniostore.Config)
		want string
	}{
		{"no endpoint", func(c *miniostore.Config) { c.Endpoint = "" }, "endpoint: required"},
		{"scheme", func(c *miniostore.Config) { c.Endpoint = "http://minio:9000" }, "without a scheme"},
		{"path", func(c *miniostore.Config) { c.Endpoint = "minio:9000/x" }, "without a path"},
		{"half keys", func(c *miniostore.Config) { c.SecretKey = "" }, "give both or neither"},
		{"bucket", func(c *miniostore.Config) { c.Bucket = "Paprika_Assets" }, "bucket:"},
		{"no bucket", func(c *miniostore.Config) { c.Bucket = "" }, "bucket:"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := good
			tc.edit(&c)
			require.ErrorContains(t, c.Validate(), tc.want)
			_, err := miniostore.New(t.Context(), c)
			require.ErrorContains(t, err, tc.want, "New validates")
		})
	}
	// Every problem at once.
	err := miniostore.Config{Endpoint: "https://x", AccessKey: "a"}.Validate()
	require.ErrorContains(t, err, "endpoint:")
	require.ErrorContains(t, err, "secret key")
	require.ErrorContains(t, err, "bucket:")
}

// TestSizeMismatchMultipart is the suite's SizeMismatch for objects large
// enough to go up in parts: a short or long reader fails the upload, and
// neither the object nor a part of it stays behind.
func TestSizeMismatchMultipart(t *testing.T) {
	t.Parallel()
	s, admin, bucket := setupBucket(t)
	ctx := t.Context()
	const n = 17 << 20 // over the 16 MiB single-PUT limit
	rnd := func() io.Reader { return io.LimitReader(rand.NewChaCha8([32]byte{1}), n) }

	err := s.Put(ctx, "job-1", "short", "", rnd(), n+3<<20)
	require.ErrorContains(t, err, "reader ended after")
	require.NotErrorIs(t, err, persistence.ErrUnavailable)
	err = s.Put(ctx, "job-1", "long", "", io.MultiReader(rnd(), strings.NewReader("x")), n)
	require.ErrorContains(t, err, "more than the")

	for _, name := range []string{"short", "long"} {
		_, _, err := s.Get(ctx, "job-1", name)
		require.ErrorIs(t, err, persistence.ErrNotFound, name)
	}
	list, err := s.List(ctx, "job-1")
	require.NoError(t, err)
	require.Empty(t, list)
	for up := range admin.ListIncompleteUploads(ctx, bucket, "", true) {
		require.NoError(t, up.Err)
		t.Errorf("multipart upload of %s left behind", up.Key)
	}
}

// TestPutFailureKeepsOldAsset checks a failed overwrite leaves the asset
// as it was.
func TestPutFailureKeepsOldAsset(t *testing.T) {
	t.Parallel()
	s := setup(t)
	ctx := t.Context()
	require.NoError(t, s.Put(ctx, "job-1", "out", "text/plain", strings.NewReader("old"), 3))
	require.Error(t, s.Put(ctx, "job-1", "out", "text/html", strings.NewReader("new!"), 3))
	require.Error(t, s.Put(ctx, "job-1", "out", "text/html", iotest.ErrReader(errors.New("disk on fire")), -1))
	rc, info, err := s.Get(ctx, "job-1", "out")
	require.NoError(t, err)
	defer rc.Close()
	data, err := io.ReadAll(rc)
	require.NoError(t, err)
	require.Equal(t, "old", string(data))
	require.Equal(t, "text/plain", info.ContentType)
}

func TestEmptyAsset(t *testing.T) {
	t.Parallel()
	s := setup(t)
	ctx := t.Context()
	require.NoError(t, s.Put(ctx, "job-1", "empty", "text/plain", strings.NewReader(""), 0))
	require.NoError(t, s.Put(ctx, "job-1", "empty-stream", "text/plain", strings.NewReader(""), -1))
	require.Error(t, s.Put(ctx, "job-1", "not-empty", "text/plain", strings.NewReader("x"), 0))
	for _, name := range []string{"empty", "empty-stream"} {
		rc, info, err := s.Get(ctx, "job-1", name)
		require.NoError(t, err, name)
		data, err := io.ReadAll(rc)
		rc.Close()
		require.NoError(t, err)
		require.Empty(t, data)
		require.Zero(t, info.Size)
	}
	list, err := s.List(ctx, "job-1")
	require.NoError(t, err)
	require.Len(t, list, 2)
	_, _, err = s.Get(ctx, "job-1", "not-empty")
	require.ErrorIs(t, err, persistence.ErrNotFound)
}

// TestListIgnoresForeignKeys checks objects a Store would not write under
// a job's prefix (a nested key, a dot name) are not listed as assets.
func TestListIgnoresForeignKeys(t *testing.T) {
	t.Parallel()
	s, admin, bucket := setupBucket(t)
	ctx := t.Context()
	for _, k := range []string{"job-1/sub/x", "job-1/.hidden"} {
		_, err := admin.PutObject(ctx, bucket, k, bytes.NewReader([]byte("x")), 1, minio.PutObjectOptions{})
		require.NoError(t, err)
	}
	require.NoError(t, s.Put(ctx, "job-1", "real", "", strings.NewReader("y"), 1))
	list, err := s.List(ctx, "job-1")
	require.NoError(t, err)
	require.Equal(t, []persistence.AssetInfo{{Name: "real", ContentType: "application/octet-stream", Size: 1}}, list)
}

// sha256Of hashes r whole.
func sha256Of(t *testing.T, r io.Reader) []byte {
	t.Helper()
	h := sha256.New()
	_, err := io.Copy(h, r)
	require.NoError(t, err)
	return h.Sum(nil)
}
