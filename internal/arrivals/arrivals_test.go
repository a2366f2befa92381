package arrivals

import (
	"testing"
	"time"
)

// TestGaps: the mean starts where it is told, follows a steady pace down
// and rises again after a quiet spell.
func TestGaps(t *testing.T) {
	g := NewGaps(time.Millisecond)
	if g.Faster(time.Millisecond) {
		t.Fatal("the start counts as one per millisecond, not faster")
	}
	now := time.Unix(0, 0)
	for range 40 {
		now = now.Add(100 * time.Microsecond)
		g.Note(now)
	}
	if !g.Faster(time.Millisecond) {
		t.Fatalf("events 100 µs apart: mean %v", g.mean)
	}
	g.Note(now.Add(time.Second))
	if g.Faster(time.Millisecond) {
		t.Fatalf("after a second's quiet: mean %v", g.mean)
	}
}
