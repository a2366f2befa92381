package assetdir

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/paprika-hub/paprika/persistence"
)

var _ persistence.AssetStore = (*Store)(nil)

// DefaultDir is where the embedded hub keeps assets (config key
// assets.dir).
const DefaultDir = "./data/assets"

// DefaultContentType is returned for an asset stored without one.
const DefaultContentType = "application/octet-stream"

// metaSuffix ends the name of a content-type sidecar: .<name>.meta.
const metaSuffix = ".meta"

// Store is a persistence.AssetStore on a local directory. It holds no
// state beside the path and is safe for concurrent use; concurrent Puts of
// one name end with one of them, whole.
type Store struct {
	dir string
}

// New returns a Store rooted at dir, creating the directory.
func New(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("open asset dir %s: %w", dir, err)
	}
	return &Store{dir: dir}, nil
}

// Put streams r into jobID/name. With size >= 0, a reader that ends early
// or runs long is an error and nothing is stored.
func (s *Store) Put(ctx context.Context, jobID, name, contentType string, r io.Reader, size int64) error {
	if err := checkNames(jobID, name); err != nil {
		return fmt.Errorf("put asset: %w", err)
	}
	// A name in a folder (downloads/<file>) lives in a subdirectory.
	folder, file := persistence.SplitAssetPath(name)
	jobDir := filepath.Join(s.dir, jobID, folder)
	if err := os.MkdirAll(jobDir, 0o750); err != nil {
		return fmt.Errorf("put asset %s/%s: %w", jobID, name, err)
	}
	if contentType == "" {
		contentType = DefaultContentType
	}
	// The bytes go to a temporary file first, then the sidecar, then the
	// rename: a failed copy leaves nothing, and once the asset appears its
	// type is in place.
	tmp, err := writeTemp(ctx, jobDir, r, size)
	if err != nil {
		return fmt.Errorf("put asset %s/%s: %w", jobID, name, err)
	}
	if err := writeAtomic(ctx, jobDir, metaName(file), []byte(contentType)); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("put asset %s/%s: content type: %w", jobID, name, err)
	}
	if err := os.Rename(tmp, filepath.Join(jobDir, file)); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("put asset %s/%s: %w", jobID, name, err)
	}
	return nil
}

// Get opens jobID/name for reading; persistence.ErrNotFound when absent.
// The caller closes the reader.
func (s *Store) Get(ctx context.Context, jobID, name string) (io.ReadCloser, persistence.AssetInfo, error) {
	if err := checkNames(jobID, name); err != nil {
		return nil, persistence.AssetInfo{}, fmt.Errorf("get asset: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, persistence.AssetInfo{}, fmt.Errorf("get asset %s/%s: %w", jobID, name, err)
	}
	folder, file := persistence.SplitAssetPath(name)
	jobDir := filepath.Join(s.dir, jobID, folder)
	f, err := os.Open(filepath.Join(jobDir, file))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, persistence.AssetInfo{}, fmt.Errorf("get asset %s/%s: %w", jobID, name, persistence.ErrNotFound)
	}
	if err != nil {
		return nil, persistence.AssetInfo{}, fmt.Errorf("get asset %s/%s: %w", jobID, name, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, persistence.AssetInfo{}, fmt.Errorf("get asset %s/%s: %w", jobID, name, err)
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, persistence.AssetInfo{}, fmt.Errorf("get asset %s/%s: %w", jobID, name, persistence.ErrNotFound)
	}
	info := persistence.AssetInfo{Name: name, ContentType: readContentType(jobDir, file), Size: st.Size()}
	return f, info, nil
}

// Delete removes jobID/name and its content-type sidecar; an absent asset
// is no error.
func (s *Store) Delete(ctx context.Context, jobID, name string) error {
	if err := checkNames(jobID, name); err != nil {
		return fmt.Errorf("delete asset: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("delete asset %s/%s: %w", jobID, name, err)
	}
	folder, file := persistence.SplitAssetPath(name)
	jobDir := filepath.Join(s.dir, jobID, folder)
	if err := os.Remove(filepath.Join(jobDir, file)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("delete asset %s/%s: %w", jobID, name, err)
	}
	if err := os.Remove(filepath.Join(jobDir, metaName(file))); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("delete asset %s/%s: content type: %w", jobID, name, err)
	}
	return nil
}

// List returns jobID's assets sorted by name; none for an unknown job.
func (s *Store) List(ctx context.Context, jobID string) ([]persistence.AssetInfo, error) {
	if err := checkName(jobID); err != nil {
		return nil, fmt.Errorf("list assets: job id: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("list assets of job %s: %w", jobID, err)
	}
	jobDir := filepath.Join(s.dir, jobID)
	out, err := listDir(jobDir, "", true)
	if err != nil {
		return nil, fmt.Errorf("list assets of job %s: %w", jobID, err)
	}
	slices.SortFunc(out, func(a, b persistence.AssetInfo) int { return cmp.Compare(a.Name, b.Name) })
	return out, nil
}

// listDir lists the assets in dir, their names prefixed with folder + "/"
// when folder is set; top also lists the folder AssetFolderDownloads.
func listDir(dir, folder string, top bool) ([]persistence.AssetInfo, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return []persistence.AssetInfo{}, nil
	}
	if err != nil {
		return nil, err
	}
	out := make([]persistence.AssetInfo, 0, len(entries))
	for _, e := range entries {
		if top && e.IsDir() && e.Name() == persistence.AssetFolderDownloads {
			sub, err := listDir(filepath.Join(dir, e.Name()), e.Name(), false)
			if err != nil {
				return nil, err
			}
			out = append(out, sub...)
			continue
		}
		// Dot files are sidecars and temporary files.
		if strings.HasPrefix(e.Name(), ".") || !e.Type().IsRegular() {
			continue
		}
		fi, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue // replaced or removed since ReadDir
		}
		if err != nil {
			return nil, err
		}
		name := e.Name()
		if folder != "" {
			name = folder + "/" + name
		}
		out = append(out, persistence.AssetInfo{Name: name, ContentType: readContentType(dir, e.Name()), Size: fi.Size()})
	}
	return out, nil
}

// checkNames and checkName are the asset-name rule every store shares.
func checkNames(jobID, name string) error { return persistence.CheckAssetNames(jobID, name) }

func checkName(n string) error { return persistence.CheckAssetName(n) }

// metaName is the sidecar of file (a file name without folder).
func metaName(name string) string { return "." + name + metaSuffix }

// readContentType reads file name's sidecar in dir; DefaultContentType when missing.
func readContentType(jobDir, name string) string {
	b, err := os.ReadFile(filepath.Join(jobDir, metaName(name)))
	if err != nil || len(b) == 0 {
		return DefaultContentType
	}
	return string(b)
}

// writeAtomic writes data to dir/name through a temporary file and a
// rename.
func writeAtomic(ctx context.Context, dir, name string, data []byte) error {
	tmp, err := writeTemp(ctx, dir, bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// writeTemp copies r into a new synced temporary file in dir (a dot file,
// so List skips it) and returns its path. With size >= 0 the copy must be
// exactly size bytes. On error no file is left.
func writeTemp(ctx context.Context, dir string, r io.Reader, size int64) (path string, err error) {
	tmp, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return "", err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	src := &ctxReader{ctx: ctx, r: r}
	if size >= 0 {
		// Read one byte past size to catch a reader that runs long.
		n, err := io.Copy(tmp, io.LimitReader(src, size+1))
		if err != nil {
			return "", err
		}
		switch {
		case n < size:
			return "", fmt.Errorf("reader ended after %d of %d bytes", n, size)
		case n > size:
			return "", fmt.Errorf("reader has more than the %d bytes announced", size)
		}
	} else if _, err := io.Copy(tmp, src); err != nil {
		return "", err
	}
	if err := tmp.Sync(); err != nil {
		return "", err
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	return tmp.Name(), nil
}

// ctxReader stops a copy when its context ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
