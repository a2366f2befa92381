package miniostore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/paprika-hub/paprika/persistence"
)

var _ persistence.AssetStore = (*Store)(nil)

// DefaultContentType is stored for an asset put without one.
const DefaultContentType = "application/octet-stream"

// streamPartSize is the multipart part size of a Put of unknown size: the
// one buffer such a Put holds (minio-go reads a part whole before sending
// it), and 1/10,000 of the largest object it can store (160 GiB). Left at
// zero, minio-go would size parts for a 5 TiB object: 537 MiB buffers.
const streamPartSize = 16 << 20

// Store is a persistence.AssetStore on one S3/MinIO bucket. Assets are the
// objects <jobID>/<name>, their content type the object's Content-Type. It
// is safe for concurrent use.
type Store struct {
	client    *minio.Client
	transport *http.Transport // owned: Close drops its idle connections
	bucket    string
}

// New connects to cfg.Endpoint and returns a Store on cfg.Bucket, creating
// the bucket when missing. Hubs starting together may race to create it;
// losing that race is not an error. A server that cannot be reached is
// persistence.ErrUnavailable; minio-go retries most requests for a few
// seconds before giving up, and ctx bounds that.
func New(ctx context.Context, cfg Config) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("minio asset store: %w", err)
	}
	transport, err := minio.DefaultTransport(cfg.Secure)
	if err != nil {
		return nil, fmt.Errorf("minio asset store: transport: %w", err)
	}
	client, err := minio.New(cfg.Endpoint, &minio.Options{
		Creds:     credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, ""),
		Secure:    cfg.Secure,
		Region:    cfg.Region,
		Transport: transport,
	})
	if err != nil {
		return nil, fmt.Errorf("minio asset store %s: %w", cfg.Endpoint, err)
	}
	s := &Store{client: client, transport: transport, bucket: cfg.Bucket}
	if err := s.ensureBucket(ctx, cfg.Region); err != nil {
		s.Close()
		return nil, fmt.Errorf("minio asset store %s: bucket %s: %w", cfg.Endpoint, cfg.Bucket, err)
	}
	return s, nil
}

// ensureBucket creates the bucket unless it exists.
func (s *Store) ensureBucket(ctx context.Context, region string) error {
	ok, err := s.client.BucketExists(ctx, s.bucket)
	if err != nil {
		return classify(err)
	}
	if ok {
		return nil
	}
	err = s.client.MakeBucket(ctx, s.bucket, minio.MakeBucketOptions{Region: region})
	if err == nil {
		return nil
	}
	// Another hub created it between our check and our create. MinIO says
	// BucketAlreadyOwnedByYou; S3 says BucketAlreadyExists when the bucket
	// belongs to someone else, so that case is checked once more: the
	// bucket must be ours to use.
	switch minio.ToErrorResponse(err).Code {
	case minio.BucketAlreadyOwnedByYou:
		return nil
	case minio.BucketAlreadyExists:
		if ok, err2 := s.client.BucketExists(ctx, s.bucket); err2 == nil && ok {
			return nil
		}
	}
	return fmt.Errorf("create: %w", classify(err))
}

// Close drops the Store's idle connections. It is safe to call more than
// once; a Store used after Close opens new connections.
func (s *Store) Close() error {
	s.transport.CloseIdleConnections()
	return nil
}

// Put streams r into jobID/name, replacing any asset of that name. With
// size >= 0, a reader that ends early or runs long is an error and nothing
// is stored: the upload fails before its last byte is sent. With size -1
// the object goes up in parts of 16 MiB (one part buffered at a time).
func (s *Store) Put(ctx context.Context, jobID, name, contentType string, r io.Reader, size int64) error {
	if err := checkNames(jobID, name); err != nil {
		return fmt.Errorf("put asset: %w", err)
	}
	if contentType == "" {
		contentType = DefaultContentType
	}
	opts := minio.PutObjectOptions{ContentType: contentType}
	var body io.Reader
	switch {
	case size < 0:
		body = &ctxReader{ctx: ctx, r: r}
		opts.PartSize = streamPartSize
		size = -1
	case size == 0:
		// Check up front: an empty upload may never read its body.
		if err := requireEOF(r, 0); err != nil {
			return fmt.Errorf("put asset %s/%s: %w", jobID, name, err)
		}
		body = http.NoBody
	default:
		body = &exactReader{ctx: ctx, r: r, size: size}
	}
	if _, err := s.client.PutObject(ctx, s.bucket, key(jobID, name), body, size, opts); err != nil {
		return fmt.Errorf("put asset %s/%s: %w", jobID, name, classify(err))
	}
	return nil
}

// Get opens jobID/name for reading; persistence.ErrNotFound when absent.
// The reader streams from the server, under ctx; the caller closes it.
func (s *Store) Get(ctx context.Context, jobID, name string) (io.ReadCloser, persistence.AssetInfo, error) {
	if err := checkNames(jobID, name); err != nil {
		return nil, persistence.AssetInfo{}, fmt.Errorf("get asset: %w", err)
	}
	obj, err := s.client.GetObject(ctx, s.bucket, key(jobID, name), minio.GetObjectOptions{})
	if err != nil {
		return nil, persistence.AssetInfo{}, fmt.Errorf("get asset %s/%s: %w", jobID, name, classify(err))
	}
	// GetObject sends nothing yet: Stat sends the GET and reads the
	// response headers, so a missing object shows here, and the body that
	// follows is the object Stat described.
	st, err := obj.Stat()
	if err != nil {
		obj.Close()
		return nil, persistence.AssetInfo{}, fmt.Errorf("get asset %s/%s: %w", jobID, name, classify(err))
	}
	return obj, assetInfo(name, st), nil
}

// Delete removes jobID/name; S3 answers an absent key with success too.
func (s *Store) Delete(ctx context.Context, jobID, name string) error {
	if err := checkNames(jobID, name); err != nil {
		return fmt.Errorf("delete asset: %w", err)
	}
	if err := s.client.RemoveObject(ctx, s.bucket, key(jobID, name), minio.RemoveObjectOptions{}); err != nil {
		return fmt.Errorf("delete asset %s/%s: %w", jobID, name, classify(err))
	}
	return nil
}

// List returns jobID's assets sorted by name; none for an unknown job.
func (s *Store) List(ctx context.Context, jobID string) ([]persistence.AssetInfo, error) {
	if err := checkName(jobID); err != nil {
		return nil, fmt.Errorf("list assets: job id: %w", err)
	}
	// Cancelling stops the lister's goroutine if we return early.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	prefix := jobID + "/"
	out := []persistence.AssetInfo{}
	// Recursive: a downloads/<file> asset is listed, not folded into a
	// common prefix. WithMetadata is a MinIO extension that puts the content type in the
	// listing; other servers leave it out and each object is asked.
	for obj := range s.client.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true, WithMetadata: true}) {
		if obj.Err != nil {
			return nil, fmt.Errorf("list assets of job %s: %w", jobID, classify(obj.Err))
		}
		name := strings.TrimPrefix(obj.Key, prefix)
		if persistence.CheckAssetPath(name) != nil {
			continue // not written by a Store: a foreign key
		}
		if listedContentType(obj) == "" {
			st, err := s.client.StatObject(ctx, s.bucket, obj.Key, minio.StatObjectOptions{})
			if minio.ToErrorResponse(err).Code == minio.NoSuchKey {
				continue // removed since the listing
			}
			if err != nil {
				return nil, fmt.Errorf("list assets of job %s: %s: %w", jobID, name, classify(err))
			}
			obj = st
		}
		out = append(out, assetInfo(name, obj))
	}
	slices.SortFunc(out, func(a, b persistence.AssetInfo) int { return cmp.Compare(a.Name, b.Name) })
	return out, nil
}

// key is the object key of jobID/name.
func key(jobID, name string) string { return jobID + "/" + name }

// assetInfo describes the object of asset name.
func assetInfo(name string, obj minio.ObjectInfo) persistence.AssetInfo {
	ct := listedContentType(obj)
	if ct == "" {
		ct = DefaultContentType
	}
	return persistence.AssetInfo{Name: name, ContentType: ct, Size: obj.Size}
}

// listedContentType is obj's content type: ContentType after a Stat or a
// Get, the "content-type" entry of the metadata a MinIO listing carries.
func listedContentType(obj minio.ObjectInfo) string {
	if obj.ContentType != "" {
		return obj.ContentType
	}
	for k, v := range obj.UserMetadata {
		if strings.EqualFold(k, "content-type") {
			return v
		}
	}
	return ""
}

// classify marks err with the persistence error callers branch on: a
// missing object is persistence.ErrNotFound; a server that cannot be
// reached, times out or says it is unavailable is
// persistence.ErrUnavailable. A cancelled context and an error of the
// caller's reader are neither.
func classify(err error) error {
	var src *sourceError
	if errors.As(err, &src) || errors.Is(err, context.Canceled) {
		return err
	}
	var resp minio.ErrorResponse
	if errors.As(err, &resp) {
		switch {
		case resp.Code == minio.NoSuchKey:
			return fmt.Errorf("%w: %w", persistence.ErrNotFound, err)
		case resp.StatusCode == http.StatusServiceUnavailable,
			resp.Code == "SlowDown", resp.Code == "ServiceUnavailable",
			resp.Code == "XMinioServerNotInitialized":
			return fmt.Errorf("%w: %w", persistence.ErrUnavailable, err)
		}
		return err
	}
	if minio.IsNetworkOrHostDown(err, false) {
		return fmt.Errorf("%w: %w", persistence.ErrUnavailable, err)
	}
	return err
}
