package storetest

import (
	"bytes"
	"crypto/sha256"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/persistence"
)

// RunAssetStore runs the AssetStore conformance suite. newStore must return
// a fresh, empty, isolated store and release it in t.Cleanup.
func RunAssetStore(t *testing.T, newStore func(t *testing.T) persistence.AssetStore) {
	t.Helper()
	runSuite(t, newStore, []subtest[persistence.AssetStore]{
		{"PutGet", testAssetPutGet},
		{"Streaming", testAssetStreaming},
		{"Overwrite", testAssetOverwrite},
		{"DefaultContentType", testAssetDefaultContentType},
		{"List", testAssetList},
		{"NotFound", testAssetNotFound},
		{"BadNames", testAssetBadNames},
		{"DownloadsFolder", testAssetDownloadsFolder},
		{"SizeMismatch", testAssetSizeMismatch},
		{"Delete", testAssetDelete},
	})
}

// testAssetDelete: a deleted asset is gone from Get and List, its
// neighbours stay, and deleting it again is no error.
func testAssetDelete(t *testing.T, s persistence.AssetStore) {
	for _, n := range []string{"a.json", "b.json"} {
		require.NoError(t, s.Put(t.Context(), "profiles", n, "application/json", bytes.NewReader([]byte("{}")), 2))
	}
	require.NoError(t, s.Delete(t.Context(), "profiles", "a.json"))
	_, _, err := s.Get(t.Context(), "profiles", "a.json")
	require.ErrorIs(t, err, persistence.ErrNotFound)
	list, err := s.List(t.Context(), "profiles")
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.Equal(t, "b.json", list[0].Name)
	require.NoError(t, s.Delete(t.Context(), "profiles", "a.json"))
	require.Error(t, s.Delete(t.Context(), "..", "a.json"))
}

// getAll reads jobID/name whole.
func getAll(t *testing.T, s persistence.AssetStore, jobID, name string) ([]byte, persistence.AssetInfo) {
	t.Helper()
	rc, info, err := s.Get(t.Context(), jobID, name)
	require.NoError(t, err)
	defer rc.Close()
	data, err := io.ReadAll(rc)
	require.NoError(t, err)
	return data, info
}

func testAssetPutGet(t *testing.T, s persistence.AssetStore) {
	body := []byte("<html><body>hello</body></html>")
	require.NoError(t, s.Put(t.Context(), "job-1", "page.html", "text/html; charset=utf-8", bytes.NewReader(body), int64(len(body))))
	data, info := getAll(t, s, "job-1", "page.html")
	require.Equal(t, body, data)
	require.Equal(t, persistence.AssetInfo{Name: "page.html", ContentType: "text/html; charset=utf-8", Size: int64(len(body))}, info)
}

// testAssetStreaming stores 5 MiB from a reader of unknown size that hands
// out small, odd-sized chunks.
func testAssetStreaming(t *testing.T, s persistence.AssetStore) {
	const size = 5<<20 + 123
	src := io.LimitReader(&chunkyRandom{rng: rand.New(rand.NewPCG(3, 4))}, size)
	h := sha256.New()
	require.NoError(t, s.Put(t.Context(), "job-1", "screenshot.png", "image/png", io.TeeReader(src, h), -1))
	want := h.Sum(nil)

	rc, info, err := s.Get(t.Context(), "job-1", "screenshot.png")
	require.NoError(t, err)
	defer rc.Close()
	require.EqualValues(t, size, info.Size)
	require.Equal(t, "image/png", info.ContentType)
	h.Reset()
	n, err := io.Copy(h, rc)
	require.NoError(t, err)
	require.EqualValues(t, size, n)
	require.Equal(t, want, h.Sum(nil))
}

// chunkyRandom yields pseudo-random bytes at most 1000 at a time.
type chunkyRandom struct{ rng *rand.Rand }

func (c *chunkyRandom) Read(p []byte) (int, error) {
	n := min(len(p), 1+c.rng.IntN(1000))
	for i := range n {
		p[i] = byte(c.rng.Uint32())
	}
	return n, nil
}

func testAssetOverwrite(t *testing.T, s persistence.AssetStore) {
	ctx := t.Context()
	require.NoError(t, s.Put(ctx, "job-1", "out", "text/plain", strings.NewReader("first version"), -1))
	require.NoError(t, s.Put(ctx, "job-1", "out", "application/json", strings.NewReader(`{}`), 2))
	data, info := getAll(t, s, "job-1", "out")
	require.Equal(t, `{}`, string(data))
	require.Equal(t, persistence.AssetInfo{Name: "out", ContentType: "application/json", Size: 2}, info)
}

func testAssetDefaultContentType(t *testing.T, s persistence.AssetStore) {
	require.NoError(t, s.Put(t.Context(), "job-1", "blob", "", strings.NewReader("x"), 1))
	_, info := getAll(t, s, "job-1", "blob")
	require.Equal(t, "application/octet-stream", info.ContentType)
}

func testAssetList(t *testing.T, s persistence.AssetStore) {
	ctx := t.Context()
	list, err := s.List(ctx, "job-1")
	require.NoError(t, err)
	require.Empty(t, list, "a job without assets")

	require.NoError(t, s.Put(ctx, "job-1", "screenshot.png", "image/png", strings.NewReader("png"), 3))
	require.NoError(t, s.Put(ctx, "job-1", "page.html", "text/html", strings.NewReader("<p>"), -1))
	require.NoError(t, s.Put(ctx, "job-2", "other.txt", "text/plain", strings.NewReader("x"), 1))
	require.NoError(t, s.Put(ctx, "job-10", "prefix.txt", "text/plain", strings.NewReader("y"), 1))

	list, err = s.List(ctx, "job-1")
	require.NoError(t, err)
	require.Equal(t, []persistence.AssetInfo{
		{Name: "page.html", ContentType: "text/html", Size: 3},
		{Name: "screenshot.png", ContentType: "image/png", Size: 3},
	}, list, "by name, this job's only (not job-10's)")
}

func testAssetNotFound(t *testing.T, s persistence.AssetStore) {
	ctx := t.Context()
	_, _, err := s.Get(ctx, "job-1", "missing.png")
	require.ErrorIs(t, err, persistence.ErrNotFound)
	require.NoError(t, s.Put(ctx, "job-1", "present.png", "image/png", strings.NewReader("p"), 1))
	_, _, err = s.Get(ctx, "job-1", "missing.png")
	require.ErrorIs(t, err, persistence.ErrNotFound)
	_, _, err = s.Get(ctx, "job-2", "present.png")
	require.ErrorIs(t, err, persistence.ErrNotFound)
}

func testAssetBadNames(t *testing.T, s persistence.AssetStore) {
	ctx := t.Context()
	bad := []string{"", ".", "..", "../x", "a/b", "/abs", `a\b`, `..\x`, ".hidden"}
	for _, name := range bad {
		require.Error(t, s.Put(ctx, "job-1", name, "text/plain", strings.NewReader("x"), 1), "name %q", name)
		_, _, err := s.Get(ctx, "job-1", name)
		require.Error(t, err, "get %q", name)
		require.Error(t, s.Put(ctx, name, "ok.txt", "text/plain", strings.NewReader("x"), 1), "job id %q", name)
		_, err = s.List(ctx, name)
		require.Error(t, err, "list %q", name)
	}
	// Only the downloads folder, one level deep, holds names.
	for _, name := range []string{"downloads", "downloads/", "downloads/a/b", "downloads/.x", "downloads/..", `downloads/a\b`, "other/x"} {
		require.Error(t, s.Put(ctx, "job-1", name, "text/plain", strings.NewReader("x"), 1), "name %q", name)
		_, _, err := s.Get(ctx, "job-1", name)
		require.Error(t, err, "get %q", name)
	}
	list, err := s.List(ctx, "job-1")
	require.NoError(t, err)
	require.Empty(t, list)
}

// testAssetDownloadsFolder: a page's downloads are stored as
// downloads/<file>, listed with the job's other assets, apart from another
// owner's of the same file name.
func testAssetDownloadsFolder(t *testing.T, s persistence.AssetStore) {
	ctx := t.Context()
	body := []byte("\x00\x01binary")
	require.NoError(t, s.Put(ctx, "job-1", "downloads/file.bin", "application/octet-stream", bytes.NewReader(body), int64(len(body))))
	require.NoError(t, s.Put(ctx, "job-1", "page.html", "text/html", strings.NewReader("<p>"), 3))
	require.NoError(t, s.Put(ctx, "s-1", "downloads/file.bin", "text/plain", strings.NewReader("other"), 5))
	data, info := getAll(t, s, "job-1", "downloads/file.bin")
	require.Equal(t, body, data)
	require.Equal(t, persistence.AssetInfo{Name: "downloads/file.bin", ContentType: "application/octet-stream", Size: int64(len(body))}, info)
	list, err := s.List(ctx, "job-1")
	require.NoError(t, err)
	require.Equal(t, []persistence.AssetInfo{
		{Name: "downloads/file.bin", ContentType: "application/octet-stream", Size: int64(len(body))},
		{Name: "page.html", ContentType: "text/html", Size: 3},
	}, list)
	list, err = s.List(ctx, "s-1")
	require.NoError(t, err)
	require.Equal(t, []persistence.AssetInfo{{Name: "downloads/file.bin", ContentType: "text/plain", Size: 5}}, list)
}

func testAssetSizeMismatch(t *testing.T, s persistence.AssetStore) {
	ctx := t.Context()
	require.Error(t, s.Put(ctx, "job-1", "short", "text/plain", strings.NewReader("12345"), 10))
	require.Error(t, s.Put(ctx, "job-1", "long", "text/plain", strings.NewReader("12345"), 3))
	for _, name := range []string{"short", "long"} {
		_, _, err := s.Get(ctx, "job-1", name)
		require.ErrorIs(t, err, persistence.ErrNotFound, "nothing stored for %q", name)
	}
}
