// Package miniostore is the clustered AssetStore: the files jobs produce,
// in one S3/MinIO bucket that every hub shares (github.com/minio/minio-go
// client; the MinIO server runs as its own process, never linked in).
//
// Layout: the object <jobID>/<name> holds an asset's bytes and its
// Content-Type the asset's content type. Job ids and names follow the
// local-dir store's rules (package assetdir): single path elements, not
// starting with a dot, so listing the prefix "<jobID>/" finds exactly one
// job's assets.
//
// Objects stream in and out. A Put of known size is one PUT (up to 16 MiB)
// or a multipart upload of 16 MiB parts; a Put of unknown size is a
// multipart upload whose parts minio-go buffers one at a time. Either way
// S3 makes the object visible only once it is complete: a reader sees the
// old asset or the new one, and a failed Put stores nothing. Get streams
// the object's body under the caller's context.
//
// Errors callers branch on: persistence.ErrNotFound for a missing asset,
// persistence.ErrUnavailable when the server cannot be reached (minio-go
// has already retried idempotent requests by then).
package miniostore
