// Package arrivals keeps the pace of a stream of events: a moving mean of
// the gaps between them. The job stores' group commits read it to decide
// whether a write that would go alone is worth holding for company.
package arrivals

import "time"

// Gaps is a moving mean (weight 1/8) of the time between noted events.
// Not safe for concurrent use: its owner serializes Note and Faster.
type Gaps struct {
	mean time.Duration
	last time.Time
}

// NewGaps starts the mean at start, so the first events count as coming
// that far apart.
func NewGaps(start time.Duration) Gaps { return Gaps{mean: start} }

// Note records an event at now.
func (g *Gaps) Note(now time.Time) {
	if !g.last.IsZero() {
		g.mean += (now.Sub(g.last) - g.mean) / 8
	}
	g.last = now
}

// Faster: events come more often than one per d.
func (g *Gaps) Faster(d time.Duration) bool { return g.mean < d }
