package persistence

import (
	"context"
	"io"
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
}
