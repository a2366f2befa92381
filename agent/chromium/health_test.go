package chromium

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestHealthReportsRSSAndRestarts, with real Chromium: a lane with no
// browser yet reports nothing; a running browser's process tree has RSS;
// a lane restart shows in restarts_10m (and ages out of the window);
// /dev/shm's free space is read.
func TestHealthReportsRSSAndRestarts(t *testing.T) {
	s := newSite(t)
	d, _ := newDriver(t, 2)
	h := d.Health()
	require.Len(t, h.Lanes, 2)
	require.Zero(t, h.Lanes[0].RSSMB, "no browser started yet")
	require.NotNil(t, h.ShmFreeMB, "/dev/shm not measured")
	require.Positive(t, *h.ShmFreeMB)

	sess := openSession(t, d, "s-health")
	h = d.Health()
	t.Logf("lane 0 browser RSS %d MiB, /dev/shm free %d MiB", h.Lanes[0].RSSMB, *h.ShmFreeMB)
	require.Greater(t, h.Lanes[0].RSSMB, int64(0), "a running browser has resident memory")
	require.Zero(t, h.Lanes[1].RSSMB, "the other lane's browser is not counted in this one")
	require.Zero(t, h.Lanes[0].Restarts10m)

	d.lanes[0].markSuspect("test: health")
	require.NoError(t, sess.Close())
	r := runJob(t, d, 0, "j-after-restart", "fetch", map[string]any{"url": s.URL + "/static", "screenshot": false}, 0)
	require.NoError(t, r.err)
	require.Equal(t, int64(1), d.Hygiene().Restarts)
	h = d.Health()
	require.Equal(t, 1, h.Lanes[0].Restarts10m, "the restart is counted")
	require.Zero(t, h.Lanes[1].Restarts10m)
	require.Greater(t, h.Lanes[0].RSSMB, int64(0), "the new browser is measured")

	// Outside the window it no longer counts.
	_, restarts := d.lanes[0].events.counts(time.Now().Add(healthWindow + time.Second))
	require.Zero(t, restarts)
}

// TestLaneEventsBounded: a lane keeps at most maxHealthEvents of a kind.
func TestLaneEventsBounded(t *testing.T) {
	var e laneEvents
	for i := 0; i < maxHealthEvents+50; i++ {
		e.crash()
	}
	e.restart()
	crashes, restarts := e.counts(time.Now())
	require.Equal(t, maxHealthEvents, crashes)
	require.Equal(t, 1, restarts)
}
