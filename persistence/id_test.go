package persistence

// These tests use the standard library only, like the package itself: the
// client SDK imports persistence, and its test graph stays as small.

import (
	"net/url"
	"sort"
	"strings"
	"testing"
)

func TestNewJobID(t *testing.T) {
	t.Parallel()
	const n = 10_000
	ids := make([]string, n)
	seen := make(map[string]bool, n)
	for i := range ids {
		id := NewJobID()
		if len(id) != JobIDLen {
			t.Fatalf("id %q has length %d, want %d", id, len(id), JobIDLen)
		}
		if url.PathEscape(id) != id {
			t.Fatalf("id %q is not URL-safe", id)
		}
		if seen[id] {
			t.Fatalf("duplicate id %s", id)
		}
		seen[id] = true
		ids[i] = id
	}
	if !sort.StringsAreSorted(ids) {
		t.Fatal("ids from one process sort in creation order")
	}
}

func TestEncodeCrockford(t *testing.T) {
	t.Parallel()
	if got := encodeCrockford([16]byte{0x01, 0x56, 0x3E, 0x3A, 0xB5, 0xD3})[:10]; got != "01ARZ3NDEK" {
		t.Fatalf("got %s: the ULID spec's example time 1469922850259 (01ARZ3NDEKTSV4RRFFQ69G5FAV)", got)
	}
	var maxTime [16]byte
	for i := range 6 {
		maxTime[i] = 0xFF
	}
	if id := encodeCrockford(maxTime); id != "7ZZZZZZZZZ0000000000000000" {
		t.Fatalf("got %s: 2^48-1 ms is the last ULID time", id)
	}
	if id := NewJobID(); strings.ContainsAny(id, "ILOU") {
		t.Fatalf("id %s holds a letter Crockford's alphabet leaves out", id)
	}
}

func TestIncrementWraps(t *testing.T) {
	t.Parallel()
	b := [10]byte{9: 0xFE}
	if !increment(&b) {
		t.Fatal("increment of ...FE wrapped")
	}
	if b[9] != 0xFF {
		t.Fatalf("last byte %#x, want 0xff", b[9])
	}
	b = [10]byte{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}
	if increment(&b) {
		t.Fatal("increment of all-FF did not report the wrap")
	}
	if b != ([10]byte{}) {
		t.Fatalf("after the wrap b is %x, want zero", b)
	}
}
