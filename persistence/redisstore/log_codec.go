package redisstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"github.com/paprika-hub/paprika/persistence"
)

// The PUBLISH payload of one batch (the job id is the channel's):
//
//	version  byte     eventVersion
//	flags    byte     bit 0: done
//	from     uvarint  index of the first line
//	count    uvarint  number of lines
//	count ×  uvarint length, then the line's bytes
//
// Length prefixes instead of a joined text keep lines that hold newlines
// intact; binary instead of JSON avoids escaping every line of the hot path.
const (
	eventVersion  = 1
	eventFlagDone = 1 << 0
	// maxEventLines bounds the line count a decoder trusts before it
	// allocates (a corrupt or hostile payload must not allocate gigabytes).
	maxEventLines = 1 << 20
)

var errBadEvent = errors.New("malformed log event")

// eventSize returns the encoded size of b.
func eventSize(b *persistence.LogBatch) int {
	n := 2 + uvarintLen(uint64(b.From)) + uvarintLen(uint64(len(b.Lines)))
	for _, l := range b.Lines {
		n += uvarintLen(uint64(len(l))) + len(l)
	}
	return n
}

// writeEvent appends the payload of b to sb.
func writeEvent(sb *strings.Builder, b *persistence.LogBatch) {
	var flags byte
	if b.Done {
		flags |= eventFlagDone
	}
	var tmp [2 + 2*binary.MaxVarintLen64]byte
	sb.Write(binary.AppendUvarint(binary.AppendUvarint(append(tmp[:0], eventVersion, flags), uint64(b.From)), uint64(len(b.Lines))))
	for _, l := range b.Lines {
		sb.Write(binary.AppendUvarint(tmp[:0], uint64(len(l))))
		sb.WriteString(l)
	}
}

// encodeEvent returns the payload of b.
func encodeEvent(b *persistence.LogBatch) string {
	var sb strings.Builder
	sb.Grow(eventSize(b))
	writeEvent(&sb, b)
	return sb.String()
}

// decodeEvent parses a payload of jobID's channel.
func decodeEvent(jobID, p string) (persistence.LogEvent, error) {
	ev := persistence.LogEvent{JobID: jobID}
	if len(p) < 2 {
		return ev, fmt.Errorf("%w: %d bytes", errBadEvent, len(p))
	}
	if p[0] != eventVersion {
		return ev, fmt.Errorf("%w: version %d", errBadEvent, p[0])
	}
	ev.Done = p[1]&eventFlagDone != 0
	p = p[2:]
	from, p, err := readUvarint(p)
	if err != nil || from > 1<<62 {
		return ev, fmt.Errorf("%w: bad from", errBadEvent)
	}
	ev.From = int64(from)
	n, p, err := readUvarint(p)
	// Every line takes at least its one-byte length prefix.
	if err != nil || n > maxEventLines || n > uint64(len(p)) {
		return ev, fmt.Errorf("%w: bad line count", errBadEvent)
	}
	if n > 0 {
		ev.Lines = make([]string, n)
	}
	for i := range ev.Lines {
		var l uint64
		l, p, err = readUvarint(p)
		if err != nil || l > uint64(len(p)) {
			return ev, fmt.Errorf("%w: line %d overruns the payload", errBadEvent, i)
		}
		// Substrings share the payload's memory: one allocation per event.
		ev.Lines[i] = p[:l]
		p = p[l:]
	}
	if len(p) != 0 {
		return ev, fmt.Errorf("%w: %d trailing bytes", errBadEvent, len(p))
	}
	return ev, nil
}

// readUvarint reads a uvarint from the start of p.
func readUvarint(p string) (uint64, string, error) {
	var x uint64
	for i := 0; i < len(p) && i < binary.MaxVarintLen64; i++ {
		c := p[i]
		if i == binary.MaxVarintLen64-1 && c > 1 {
			return 0, p, errBadEvent // overflow
		}
		if c < 0x80 {
			return x | uint64(c)<<(7*i), p[i+1:], nil
		}
		x |= uint64(c&0x7f) << (7 * i)
	}
	return 0, p, errBadEvent
}

// uvarintLen is the encoded size of x.
func uvarintLen(x uint64) int {
	n := 1
	for x >= 0x80 {
		x >>= 7
		n++
	}
	return n
}
