package messages

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// JobAckFrame is the frame Encode renders, byte for byte, for ids that
// need escaping too.
func TestJobAckFrameIsEncodes(t *testing.T) {
	for _, c := range []struct {
		id      string
		attempt int
	}{{"j-abc_123", 1}, {"", 0}, {"j", 0}, {"", 3}, {`a"b\c<d>&e`, 2}, {"é\x00\n\u2028", -1}} {
		want, err := Frame{Type: TypeJobAck, JobID: c.id, Attempt: c.attempt}.Encode()
		require.NoError(t, err)
		require.Equal(t, string(want), string(JobAckFrame(c.id, c.attempt)), "%q %d", c.id, c.attempt)
	}
}
