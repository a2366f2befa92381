package agent

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func strs(bs [][]byte) []string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = string(b)
	}
	return out
}

func TestOutboxKeepsUntilAckAndResendsInOrder(t *testing.T) {
	t.Parallel()
	o := newOutbox(100)
	a, b := jobKey{"a", 1}, jobKey{"b", 1}

	// Disconnected: kept, nothing pending, producers never wait.
	o.add(a, []byte("a0"), false)
	o.add(b, []byte("b0"), false)
	o.add(a, []byte("a1"), false)
	require.Nil(t, o.roomCh())

	ready := make(chan struct{}, 1)
	o.attach(ready)
	require.Len(t, ready, 1, "attach wakes the writer")
	require.Equal(t, []string{"a0", "a1", "b0"}, strs(o.take(ready, 10)), "job by job, in creation order")
	require.Nil(t, o.take(ready, 10))

	o.add(a, []byte("a2"), true)
	require.Equal(t, []string{"a2"}, strs(o.take(ready, 10)))
	require.False(t, o.ack("b", 1), "b has not sent its final frame")
	require.True(t, o.ack("a", 1))
	n, _ := o.kept()
	require.Equal(t, 1, n)

	// A new link gets only what is still kept.
	o.detach(ready)
	ready2 := make(chan struct{}, 1)
	o.attach(ready2)
	require.Nil(t, o.take(ready, 10), "the old link gets nothing")
	require.Equal(t, []string{"b0"}, strs(o.take(ready2, 10)))
}

func TestOutboxSkipsFramesAckedWhilePending(t *testing.T) {
	t.Parallel()
	o := newOutbox(100)
	k := jobKey{"a", 1}
	o.add(k, []byte("a0"), false)
	o.add(k, []byte("a1"), true)
	o.add(jobKey{"b", 1}, []byte("b0"), false)
	ready := make(chan struct{}, 1)
	o.attach(ready)
	require.True(t, o.ack("a", 0), "attempt 0 releases every attempt")
	require.Equal(t, []string{"b0"}, strs(o.take(ready, 10)))
	require.True(t, o.has(jobKey{"b", 1}))
	require.False(t, o.has(k))
}

func TestOutboxBackpressureOnLiveLinkOnly(t *testing.T) {
	t.Parallel()
	o := newOutbox(2)
	k := jobKey{"a", 1}
	ready := make(chan struct{}, 1)
	o.attach(ready)
	o.add(k, []byte("0"), false)
	o.add(k, []byte("1"), false)
	room := o.roomCh()
	require.NotNil(t, room, "two frames unsent on a live link: wait")
	require.Equal(t, []string{"0"}, strs(o.take(ready, 1)))
	<-room // woken by take
	require.Nil(t, o.roomCh())

	o.add(k, []byte("2"), false)
	room = o.roomCh()
	require.NotNil(t, room)
	o.detach(ready)
	<-room // woken by detach
	require.Nil(t, o.roomCh(), "disconnected: keep without limit")
}
