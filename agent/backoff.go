package agent

import (
	"math/rand/v2"
	"time"
)

// Reconnect backoff: 200ms doubling to 5s, each delay drawn at random from
// its upper half so a fleet that lost the same hub does not redial in step.
const (
	backoffMin = 200 * time.Millisecond
	backoffMax = 5 * time.Second
)

// backoff yields the delays between reconnect attempts. Not safe for
// concurrent use; the connect loop owns it.
type backoff struct {
	min, max time.Duration
	failures int
}

// next returns the delay before the next attempt and counts a failure.
func (b *backoff) next() time.Duration {
	d := b.min
	for i := 0; i < b.failures && d < b.max; i++ {
		d *= 2
	}
	d = min(d, b.max)
	b.failures++
	half := d / 2
	return half + rand.N(half+1)
}

// reset starts over after a link that worked.
func (b *backoff) reset() { b.failures = 0 }
