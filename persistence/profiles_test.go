package persistence_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/persistence"
	"github.com/paprika-hub/paprika/persistence/assetdir"
	"github.com/paprika-hub/paprika/persistence/memory"
)

// TestLastProfileSpots: each saved profile's last worker comes from its
// metadata, and the lane from its job's record when that record is the
// attempt that saved on that worker; a session's save gives the worker
// alone; a state without metadata, a name the rules refuse and the
// profiles past the bound are left out.
func TestLastProfileSpots(t *testing.T) {
	ctx := context.Background()
	assets, err := assetdir.New(t.TempDir())
	require.NoError(t, err)
	jobs := memory.NewJobStore()
	put := func(name, body string) {
		require.NoError(t, assets.Put(ctx, persistence.ProfilesFolder, name, "application/json", strings.NewReader(body), int64(len(body))))
	}
	meta := func(name string, m persistence.ProfileMeta) {
		b, err := json.Marshal(m)
		require.NoError(t, err)
		put(name+persistence.ProfileStateSuffix, `{}`)
		put(name+persistence.ProfileMetaSuffix, string(b))
	}
	// j1 ran attempt 1 on w1, lane L1; j2 is at attempt 2 on w3.
	run := func(id, worker, lane string, attempts int) {
		_, _, err := jobs.Create(ctx, persistence.Job{ID: id, Mode: "fetch", Status: persistence.StatusQueued, CreatedAt: time.Now()})
		require.NoError(t, err)
		for i := range attempts {
			_, err := jobs.Claim(ctx, id, worker, time.Now())
			require.NoError(t, err)
			if i+1 < attempts {
				require.NoError(t, jobs.Requeue(ctx, id, i+1))
			}
		}
		require.NoError(t, jobs.SetLane(ctx, id, attempts, lane))
	}
	run("j1", "w1", "L1", 1)
	run("j2", "w3", "L3", 2)

	meta("alice", persistence.ProfileMeta{Worker: "w1", Job: "j1", Attempt: 1})
	meta("bob", persistence.ProfileMeta{Worker: "w2", Session: "s1"})
	meta("carol", persistence.ProfileMeta{Worker: "w3", Job: "j2", Attempt: 1}) // attempt 2 is current: no lane
	meta("dave", persistence.ProfileMeta{Worker: "w4", Job: "gone", Attempt: 1})
	put("erin"+persistence.ProfileStateSuffix, `{}`) // never saved through the API: no metadata
	meta("Bad Name", persistence.ProfileMeta{Worker: "w5"})

	valid := func(name string) bool { return !strings.Contains(name, " ") }
	spots, err := persistence.LastProfileSpots(ctx, assets, jobs, 100, valid)
	require.NoError(t, err)
	require.Equal(t, map[string]persistence.ProfileSpot{
		"alice": {Worker: "w1", Lane: "L1"},
		"bob":   {Worker: "w2"},
		"carol": {Worker: "w3"},
		"dave":  {Worker: "w4"},
	}, spots)

	spots, err = persistence.LastProfileSpots(ctx, assets, jobs, 2, valid)
	require.NoError(t, err)
	require.Equal(t, map[string]persistence.ProfileSpot{"alice": {Worker: "w1", Lane: "L1"}, "bob": {Worker: "w2"}}, spots,
		"the first two by name")

	canceled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = persistence.LastProfileSpots(canceled, assets, jobs, 100, valid)
	require.Error(t, err)
}
