package loadgen

import (
	"math"
	"time"
)

// histogram records durations in logarithmic buckets of 2 % width, so a
// follower can record every line at any rate in constant memory and the
// quantiles stay within 2 % of the true value. The exact maximum is kept
// aside. It is not safe for concurrent use: each follower owns one, and they
// are merged after the followers stopped.
type histogram struct {
	counts []int64
	n      int64
	max    time.Duration
}

// Bucket layout: bucket 0 holds everything under 1 µs; bucket i ≥ 1 holds
// [growth^(i-1), growth^i) µs.
const (
	histGrowth  = 1.02
	histBuckets = 1200 // growth^1199 µs ≈ 5.4 hours: far beyond any latency
)

var histLogGrowth = math.Log(histGrowth)

func newHistogram() *histogram { return &histogram{counts: make([]int64, histBuckets)} }

func (h *histogram) bucket(d time.Duration) int {
	us := float64(d) / float64(time.Microsecond)
	if us < 1 {
		return 0
	}
	i := int(math.Log(us)/histLogGrowth) + 1
	return min(i, histBuckets-1)
}

// record adds one sample; a negative one (clock step) counts as zero.
func (h *histogram) record(d time.Duration) {
	d = max(d, 0)
	h.counts[h.bucket(d)]++
	h.n++
	h.max = max(h.max, d)
}

// merge adds o's samples.
func (h *histogram) merge(o *histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.max = max(h.max, o.max)
}

// quantile returns the upper edge of the bucket holding the q-th sample,
// capped at the exact maximum; 0 without samples.
func (h *histogram) quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := int64(math.Ceil(q * float64(h.n)))
	rank = min(max(rank, 1), h.n)
	var seen int64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			upper := time.Microsecond
			if i > 0 {
				upper = time.Duration(math.Pow(histGrowth, float64(i)) * float64(time.Microsecond))
			}
			return min(upper, h.max)
		}
	}
	return h.max
}
