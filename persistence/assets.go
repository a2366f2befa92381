package persistence

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// AssetInfo describes one stored asset.
type AssetInfo struct {
	Name        string `json:"name"`
	ContentType string `json:"content_type"`
	Size        int64  `json:"size"`
}

// AssetStore keeps files jobs produce, keyed by job id and name. Objects are
// streamed in and out, never held in memory whole.
type AssetStore interface {
	// Put stores r (size bytes, -1 if unknown) as jobID/name.
	Put(ctx context.Context, jobID, name, contentType string, r io.Reader, size int64) error
	// Get opens jobID/name; ErrNotFound when absent. The caller closes it.
	Get(ctx context.Context, jobID, name string) (io.ReadCloser, AssetInfo, error)
	// List returns a job's assets by name.
	List(ctx context.Context, jobID string) ([]AssetInfo, error)
	// Delete removes jobID/name; removing an absent asset is no error
	// (a deleted profile's state must not linger: api/profiles.go).
	Delete(ctx context.Context, jobID, name string) error
}

// MaxAssetNameLen bounds job ids and asset names in asset stores; a key
// stays far below S3's 1,024 bytes.
const MaxAssetNameLen = 200

// AssetFolderDownloads is the one folder an asset name may have: the files
// a job's page downloaded are stored as "downloads/<file name>", and a
// session's downloads under the session id likewise. The bare name
// "downloads" is refused, so no store has to hold a file and a folder of
// one name.
const AssetFolderDownloads = "downloads"

// CheckAssetNames validates a job id and an asset name as every AssetStore
// must: the job id a single path element (no separator of any OS, no NUL),
// not starting with a dot (so not "." or ".."), valid UTF-8, at most
// MaxAssetNameLen bytes; the asset name the same, or
// AssetFolderDownloads + "/" + such an element. So an asset of one store
// can be copied to another, and "<jobID>/" lists exactly one job's assets.
func CheckAssetNames(jobID, name string) error {
	if err := CheckAssetName(jobID); err != nil {
		return fmt.Errorf("job id: %w", err)
	}
	if err := CheckAssetPath(name); err != nil {
		return fmt.Errorf("asset name: %w", err)
	}
	return nil
}

// CheckAssetPath validates an asset name: one element (CheckAssetName), or
// one in the folder AssetFolderDownloads.
func CheckAssetPath(n string) error {
	if n == AssetFolderDownloads {
		return fmt.Errorf("%q is a folder, not an asset name", n)
	}
	if rest, ok := strings.CutPrefix(n, AssetFolderDownloads+"/"); ok {
		if len(n) > MaxAssetNameLen {
			return fmt.Errorf("%.20q…: longer than %d bytes", n, MaxAssetNameLen)
		}
		return CheckAssetName(rest)
	}
	return CheckAssetName(n)
}

// SplitAssetPath splits a name CheckAssetPath accepted into its folder
// ("" for none) and its file name.
func SplitAssetPath(n string) (folder, file string) {
	if rest, ok := strings.CutPrefix(n, AssetFolderDownloads+"/"); ok {
		return AssetFolderDownloads, rest
	}
	return "", n
}

// CheckAssetName validates one job id or asset file name (see
// CheckAssetNames).
func CheckAssetName(n string) error {
	switch {
	case n == "":
		return errors.New("empty")
	case len(n) > MaxAssetNameLen:
		return fmt.Errorf("%.20q…: longer than %d bytes", n, MaxAssetNameLen)
	case strings.HasPrefix(n, "."):
		return fmt.Errorf("%q starts with a dot", n)
	case strings.ContainsAny(n, "/\\\x00"):
		return fmt.Errorf("%q is not a single path element", n)
	case !utf8.ValidString(n):
		return fmt.Errorf("%q is not valid UTF-8", n)
	}
	return nil
}
