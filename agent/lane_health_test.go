package agent

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/messages"
)

type fakeHealth struct{ h DriverHealth }

func (f *fakeHealth) Health() DriverHealth { return f.h }

// TestHealthReportSendsOnlyNews: hello carries the first reading; a
// heartbeat carries lane_health only when a count changed or a lane's RSS
// moved by a step, and shm_free_mb always; nothing when the driver has no
// health.
func TestHealthReportSendsOnlyNews(t *testing.T) {
	shm := int64(500)
	d := &fakeHealth{h: DriverHealth{Lanes: []messages.LaneHealth{{RSSMB: 300}, {RSSMB: 200}}, ShmFreeMB: &shm}}
	r := &healthReport{d: d, latest: d.Health()}
	hello := messages.Frame{Type: messages.TypeHello, Stats: &messages.Stats{}}
	r.hello(&hello)
	require.Equal(t, d.h.Lanes, hello.LaneHealth)
	require.EqualValues(t, 500, *hello.Stats.ShmFreeMB)

	beat := func() messages.Frame {
		f := messages.Frame{Type: messages.TypeHeartbeat, Stats: &messages.Stats{}}
		r.attach(&f)
		r.reported(&f)
		return f
	}
	d.h.Lanes = []messages.LaneHealth{{RSSMB: 300 + healthRSSStepMB - 1}, {RSSMB: 200}}
	require.False(t, r.sample(), "RSS moved by less than a step")
	f := beat()
	require.Nil(t, f.LaneHealth)
	require.EqualValues(t, 500, *f.Stats.ShmFreeMB, "stats always carry shm")

	d.h.Lanes = []messages.LaneHealth{{RSSMB: 300 + healthRSSStepMB}, {RSSMB: 200}}
	require.True(t, r.sample(), "RSS moved by a step")
	require.Equal(t, d.h.Lanes, beat().LaneHealth)
	require.False(t, r.sample(), "reported: no longer news")

	d.h.Lanes = []messages.LaneHealth{{RSSMB: 332}, {RSSMB: 200, Restarts10m: 1}}
	require.True(t, r.sample(), "a restart is news")
	require.Equal(t, d.h.Lanes, beat().LaneHealth)

	low := int64(500 - healthShmStepMB)
	d.h.ShmFreeMB = &low
	require.True(t, r.sample(), "shm moved by a step")
	require.Nil(t, beat().LaneHealth, "lanes unchanged")
	require.False(t, r.sample())

	var none *healthReport // a driver without health
	f = messages.Frame{Type: messages.TypeHeartbeat, Stats: &messages.Stats{}}
	none.attach(&f)
	none.reported(&f)
	none.hello(&f)
	require.Nil(t, f.LaneHealth)
	require.Nil(t, f.Stats.ShmFreeMB)
	require.Nil(t, none.due())
}

// TestSimulatedDriverReportsNoHealth: the simulated driver measures no
// browser, so its worker sends neither lane_health nor shm_free_mb.
func TestSimulatedDriverReportsNoHealth(t *testing.T) {
	a, err := New(Config{HubURLs: []string{"http://127.0.0.1:1"}, Lanes: 2})
	require.NoError(t, err)
	require.Nil(t, a.newHealthReport())
}
