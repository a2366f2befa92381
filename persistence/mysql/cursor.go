package mysql

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/paprika-hub/paprika/persistence"
)

// The list cursor has the layout of package memory's (which does not
// export it): base64url of created_at as big-endian Unix nanoseconds, then
// the id. It names a position in (created_at, id) order, not an offset, so
// jobs created between page reads shift nothing.

func encodeCursor(createdAt time.Time, id string) string {
	b := make([]byte, 8, 8+len(id))
	binary.BigEndian.PutUint64(b, uint64(createdAt.UnixNano()))
	return base64.RawURLEncoding.EncodeToString(append(b, id...))
}

func decodeCursor(c string) (time.Time, string, error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || len(b) < 9 {
		return time.Time{}, "", fmt.Errorf("list jobs: malformed cursor %q: %w", c, persistence.ErrBadCursor)
	}
	return time.Unix(0, int64(binary.BigEndian.Uint64(b))).UTC(), string(b[8:]), nil
}
