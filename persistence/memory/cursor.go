package memory

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"

	"github.com/paprika-hub/paprika/persistence"
)

// jobKey is a job's place in listing order: created_at, then id.
type jobKey struct {
	created int64 // Unix nanoseconds
	id      string
}

func (k jobKey) compare(o jobKey) int {
	switch {
	case k.created < o.created:
		return -1
	case k.created > o.created:
		return 1
	case k.id < o.id:
		return -1
	case k.id > o.id:
		return 1
	}
	return 0
}

// encodeCursor makes the opaque cursor of the page after k: base64 of the
// big-endian nanoseconds and the id. A cursor names a position, not an
// offset, so jobs created between page reads shift nothing.
func encodeCursor(k jobKey) string {
	b := make([]byte, 8, 8+len(k.id))
	binary.BigEndian.PutUint64(b, uint64(k.created))
	return base64.RawURLEncoding.EncodeToString(append(b, k.id...))
}

func decodeCursor(c string) (jobKey, error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || len(b) < 9 {
		return jobKey{}, fmt.Errorf("list jobs: malformed cursor %q: %w", c, persistence.ErrBadCursor)
	}
	return jobKey{created: int64(binary.BigEndian.Uint64(b)), id: string(b[8:])}, nil
}
