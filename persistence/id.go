package persistence

import (
	"crypto/rand"
	"sync"
	"time"
)

// crockford is Crockford's base32 alphabet: URL-safe, no I, L, O or U, and
// its byte order matches its sort order, so ids sort like their timestamps.
const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// JobIDLen is the length of the ids NewJobID returns.
const JobIDLen = 26

// idGen keeps the last id's time and entropy so ids minted within one
// millisecond still sort in creation order (ULID "monotonic" mode).
var idGen struct {
	mu      sync.Mutex
	lastMS  uint64
	entropy [10]byte
}

// NewJobID returns a new 26-character, URL-safe, time-ordered id in the ULID
// layout: 48 bits of Unix milliseconds, then 80 bits of crypto/rand entropy.
// Within one millisecond the entropy is incremented instead of redrawn, so
// ids from this process sort in the order they were made.
func NewJobID() string {
	return newJobID(time.Now())
}

func newJobID(now time.Time) string {
	ms := uint64(now.UnixMilli())

	idGen.mu.Lock()
	if ms <= idGen.lastMS {
		// Same millisecond (or the wall clock stepped back): keep the
		// previous time and bump the entropy, so ids never go backwards.
		ms = idGen.lastMS
		if !increment(&idGen.entropy) {
			ms++ // 2^80 ids in one millisecond: borrow the next one.
		}
	} else {
		rand.Read(idGen.entropy[:]) // never returns an error (crypto/rand doc)
	}
	idGen.lastMS = ms
	var raw [16]byte
	for i := range 6 {
		raw[i] = byte(ms >> (40 - 8*i))
	}
	copy(raw[6:], idGen.entropy[:])
	idGen.mu.Unlock()

	return encodeCrockford(raw)
}

// increment adds one to b as a big-endian number; false when it wrapped.
func increment(b *[10]byte) bool {
	for i := len(b) - 1; i >= 0; i-- {
		b[i]++
		if b[i] != 0 {
			return true
		}
	}
	return false
}

// encodeCrockford writes 128 bits as 26 base32 digits, most significant
// first (the first digit carries only 3 bits).
func encodeCrockford(raw [16]byte) string {
	var out [JobIDLen]byte
	// Walk the 130-bit string (two leading zero bits) five bits at a time.
	for i := range JobIDLen {
		bit := i*5 - 2 // index of this digit's first bit in raw
		var v byte
		for k := range 5 {
			b := bit + k
			if b < 0 {
				continue
			}
			if raw[b/8]&(0x80>>(b%8)) != 0 {
				v |= 1 << (4 - k)
			}
		}
		out[i] = crockford[v]
	}
	return string(out[:])
}
