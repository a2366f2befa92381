package agent

import (
	"time"

	"github.com/paprika-hub/paprika/internal/backoff"
)

// Reconnect backoff: 200ms doubling to 5s, each delay drawn at random from
// its upper half so a fleet that lost the same hub does not redial in step.
const (
	backoffMin = 200 * time.Millisecond
	backoffMax = 5 * time.Second
)

// reconnectBackoff is the pause before redial number failures+1.
var reconnectBackoff = backoff.Policy{Base: backoffMin, Max: backoffMax, Jitter: 0.5}
