package assetdir_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/persistence"
	"github.com/paprika-hub/paprika/persistence/assetdir"
	"github.com/paprika-hub/paprika/persistence/storetest"
)

func TestAssetStore(t *testing.T) {
	t.Parallel()
	storetest.RunAssetStore(t, func(t *testing.T) persistence.AssetStore {
		s, err := assetdir.New(filepath.Join(t.TempDir(), "assets"))
		require.NoError(t, err)
		return s
	})
}

// TestLayout checks the files on disk: the asset under its job, its
// sidecar beside it, no temporary file left, nothing outside the root.
func TestLayout(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	dir := filepath.Join(root, "assets")
	s, err := assetdir.New(dir)
	require.NoError(t, err)
	require.NoError(t, s.Put(t.Context(), "job-1", "page.html", "text/html", strings.NewReader("<p>"), 3))
	require.Error(t, s.Put(t.Context(), "job-1", "../escape", "text/plain", strings.NewReader("x"), 1))
	require.Error(t, s.Put(t.Context(), "job-1", "short", "text/plain", strings.NewReader("x"), 2))

	data, err := os.ReadFile(filepath.Join(dir, "job-1", "page.html"))
	require.NoError(t, err)
	require.Equal(t, "<p>", string(data))
	meta, err := os.ReadFile(filepath.Join(dir, "job-1", ".page.html.meta"))
	require.NoError(t, err)
	require.Equal(t, "text/html", string(meta))

	entries, err := os.ReadDir(filepath.Join(dir, "job-1"))
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	// The failed "short" Put left nothing, not even a temporary file.
	require.ElementsMatch(t, []string{"page.html", ".page.html.meta"}, names)

	top, err := os.ReadDir(root)
	require.NoError(t, err)
	require.Len(t, top, 1, "nothing written beside the asset dir")
}
