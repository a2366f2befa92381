package loadgen

import (
	"sync/atomic"
	"time"
)

// stallCounter counts socket writes that had to wait for room in the
// kernel's send buffer: the hub was not reading fast enough, so the worker
// was slowed through its socket (backpressure). Updated by the one writer
// goroutine of a link, read by snapshots.
type stallCounter struct {
	stalls    atomic.Int64 // writes that waited at least once
	waitNanos atomic.Int64 // total time those writes waited
	maxNanos  atomic.Int64 // the longest single wait
}

func (s *stallCounter) record(d time.Duration) {
	s.stalls.Add(1)
	s.waitNanos.Add(int64(d))
	for {
		cur := s.maxNanos.Load()
		if int64(d) <= cur || s.maxNanos.CompareAndSwap(cur, int64(d)) {
			return
		}
	}
}
