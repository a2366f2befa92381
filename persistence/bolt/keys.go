package bolt

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/paprika-hub/paprika/persistence"
)

var (
	bucketJobs = []byte("jobs")
	// bucketByCreatedOld is the listing index of older files, dropped at
	// open (dropByCreated).
	bucketByCreatedOld = []byte("by_created")
	bucketByStatus     = []byte("by_status")
	bucketIdempotency  = []byte("idempotency")
)

// indexFill is how full a page of an index bucket is left when it
// splits. Both grow at their right edge — a status's entries are ordered
// by creation and a job changes status soon after it is made; the SDK's
// idempotency keys are time-ordered — so bbolt's default of half leaves
// every page behind the edge half empty: twice the pages, and a fuller
// right-edge page to read into memory on each commit that adds to it.
// Not all the way to full: a key a little out of order (a job finishing
// before an older one, a client's own random key) splits a page that
// has room rather than one that is full.
const indexFill = 0.9

// indexBucket is the index bucket name of a write transaction, set to
// split its pages at indexFill (FillPercent holds for the transaction).
func indexBucket(tx *bbolt.Tx, name []byte) *bbolt.Bucket {
	b := tx.Bucket(name)
	b.FillPercent = indexFill
	return b
}

// tsLen is the length of the encoded created_at.
const tsLen = 8

// appendOrderKey appends ts ‖ id, a job's position in listing order.
func appendOrderKey(k []byte, createdAt time.Time, id string) []byte {
	// Flipping the sign bit makes unsigned byte order match signed time
	// order, for the (unlikely) created_at before 1970.
	k = binary.BigEndian.AppendUint64(k, uint64(createdAt.UnixNano())^(1<<63))
	return append(k, id...)
}

// statusPrefix is the by_status prefix of every key of status s.
func statusPrefix(s persistence.Status) []byte {
	return append([]byte(s), 0)
}

// statusKey is status ‖ 0 ‖ ts ‖ id.
func statusKey(j *persistence.Job) []byte {
	k := make([]byte, 0, len(j.Status)+1+tsLen+len(j.ID))
	return appendOrderKey(append(append(k, j.Status...), 0), j.CreatedAt, j.ID)
}

// encodeCursor makes the opaque cursor that resumes listing after the
// position ord (an orderKey). It names a position, not an offset, so jobs
// created between page reads shift nothing.
func encodeCursor(ord []byte) string {
	return base64.RawURLEncoding.EncodeToString(ord)
}

// decodeCursor returns the orderKey named by c.
func decodeCursor(c string) ([]byte, error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || len(b) <= tsLen {
		return nil, fmt.Errorf("list jobs: malformed cursor %q: %w", c, persistence.ErrBadCursor)
	}
	return b, nil
}

// hasPrefix reports whether k is non-nil and starts with p.
func hasPrefix(k, p []byte) bool {
	return k != nil && bytes.HasPrefix(k, p)
}
