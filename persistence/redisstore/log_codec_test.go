package redisstore

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/persistence"
)

func TestEventRoundTrip(t *testing.T) {
	t.Parallel()
	for _, b := range []persistence.LogBatch{
		{JobID: "j"},
		{JobID: "j", Done: true},
		{JobID: "j", From: 1 << 40, Lines: []string{"a", "", "b\nc"}},
		{JobID: "j", From: 127, Lines: []string{strings.Repeat("x", 300)}, Done: true},
	} {
		p := encodeEvent(&b)
		require.Len(t, p, eventSize(&b))
		ev, err := decodeEvent("j", p)
		require.NoError(t, err)
		require.Equal(t, b, ev)
	}
}

func TestEventDecodeRejects(t *testing.T) {
	t.Parallel()
	good := encodeEvent(&persistence.LogBatch{JobID: "j", From: 3, Lines: []string{"ab", "c"}})
	for name, p := range map[string]string{
		"empty":       "",
		"version":     "\x02\x00\x00\x00",
		"truncated":   good[:len(good)-1],
		"trailing":    good + "x",
		"huge count":  "\x01\x00\x00\xff\xff\xff\xff\x0f",
		"huge length": "\x01\x00\x00\x01\xff\xff\xff\xff\x0f",
		"varint":      "\x01\x00\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff",
	} {
		_, err := decodeEvent("j", p)
		require.ErrorIs(t, err, errBadEvent, name)
	}
}

// FuzzDecodeEvent: no payload panics the decoder, and whatever it accepts
// encodes and decodes back to the same batch.
func FuzzDecodeEvent(f *testing.F) {
	f.Add(encodeEvent(&persistence.LogBatch{From: 5, Lines: []string{"a", "bc"}, Done: true}))
	f.Add("\x01\x00\x00\x00")
	f.Add("")
	f.Fuzz(func(t *testing.T, p string) {
		ev, err := decodeEvent("j", p)
		if err != nil {
			return
		}
		again, err := decodeEvent("j", encodeEvent(&ev))
		require.NoError(t, err)
		require.Equal(t, ev, again)
	})
}
