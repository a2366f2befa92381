package miniostore

import (
	"errors"
	"fmt"
	"strings"

	"github.com/minio/minio-go/v7/pkg/s3utils"
)

// Config says where the Store keeps assets. The hub fills it from the
// "minio" section of its configuration.
type Config struct {
	// Endpoint is the host:port of the S3/MinIO server, without a scheme
	// (e.g. "127.0.0.1:9000"). Required.
	Endpoint string
	// AccessKey is the access key id. Default "" (anonymous requests).
	AccessKey string
	// SecretKey is the secret key. Default "". Comes from the environment
	// in production.
	SecretKey string
	// Bucket is the bucket assets go to; New creates it when missing.
	// Required.
	Bucket string
	// Secure selects https to the endpoint. Default false (http).
	Secure bool
	// Region is the bucket's region, used to sign requests and to create
	// the bucket. Default "" (asked of the server once, and us-east-1 for
	// a new bucket — what MinIO uses unless configured otherwise).
	Region string
}

// Validate reports every problem of c at once, each naming its field.
func (c Config) Validate() error {
	var errs []error
	switch {
	case c.Endpoint == "":
		errs = append(errs, errors.New("endpoint: required"))
	case strings.Contains(c.Endpoint, "://"):
		errs = append(errs, fmt.Errorf("endpoint: %q: give host:port without a scheme (set Secure for https)", c.Endpoint))
	case strings.ContainsAny(c.Endpoint, "/?#"):
		errs = append(errs, fmt.Errorf("endpoint: %q: give host:port without a path", c.Endpoint))
	}
	if (c.AccessKey == "") != (c.SecretKey == "") {
		errs = append(errs, errors.New("access key and secret key: give both or neither"))
	}
	if err := s3utils.CheckValidBucketNameStrict(c.Bucket); err != nil {
		errs = append(errs, fmt.Errorf("bucket: %q: %w", c.Bucket, err))
	}
	return errors.Join(errs...)
}
