package grains

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A worker grain's state pushes go by mailbox rounds: an idle grain's
// change at once; a busy grain's changes of one round in one push at its
// tick, which opens the next round; a quiet round closes them. A push sent
// for another reason (a heartbeat's publish) carries what waited.
func TestPushRounds(t *testing.T) {
	var r pushRounds
	pushes := 0
	// As the grain does: every push, whatever sends it, goes through
	// pushScheduler, which calls pushed.
	change := func() {
		if r.change() {
			pushes++
			r.pushed()
		}
	}
	tick := func() {
		if r.tick() {
			pushes++
			r.pushed()
		}
	}
	change()
	require.Equal(t, 1, pushes, "an idle grain pushes at once")
	change()
	change()
	require.Equal(t, 1, pushes, "the changes of an open round wait")
	tick()
	require.Equal(t, 2, pushes, "the round's tick pushes both, once")
	change()
	require.Equal(t, 2, pushes, "the next round is open: this change waits too")
	tick()
	require.Equal(t, 3, pushes)
	tick()
	require.Equal(t, 3, pushes, "a round with no change pushes nothing and closes the rounds")
	change()
	require.Equal(t, 4, pushes, "idle again: at once")

	change()
	r.pushed() // a heartbeat's publish carried it
	tick()
	require.Equal(t, 4, pushes, "nothing waits: no second push")
	change()
	require.Equal(t, 5, pushes, "the quiet tick closed the rounds")
}
