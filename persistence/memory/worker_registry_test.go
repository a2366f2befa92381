package memory_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/persistence"
	"github.com/paprika-hub/paprika/persistence/memory"
)

func fourLanes() persistence.WorkerInfo {
	shm := int64(512)
	return persistence.WorkerInfo{ID: "w1", Hub: "h1", MaxConcurrent: 4, ShmFreeMB: &shm,
		Lanes: []persistence.LaneStatus{{Lane: 0, State: "idle", Health: &persistence.LaneHealth{RSSMB: 100}},
			{Lane: 1, State: "job"}, {Lane: 2, State: "idle"}, {Lane: 3, State: "idle"}},
		Drivers: []string{"sim"}, Running: []string{"j1"}, Reported: []string{"j1"},
		Modes: []persistence.WorkerMode{{Name: "noop", Schema: []byte(`{}`)}}}
}

// A Put that reuses the stored lists for an unchanged record still shares
// nothing with its caller: what the caller changes afterwards, in place,
// and what a reader changes in its copy, never reach the store.
func TestWorkerRegistryPutSharesNoMemory(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	r := memory.NewWorkerRegistry()
	w := fourLanes()
	require.NoError(t, r.Put(ctx, w, time.Minute))
	require.NoError(t, r.Put(ctx, w, time.Minute)) // equal lists: the stored copies are kept

	w.Lanes[1].State = "idle"
	w.Lanes[0].Health.RSSMB = 9999
	w.Drivers[0], w.Running[0], w.Reported[0], w.Modes[0].Name = "x", "x", "x", "x"
	*w.ShmFreeMB = 1
	got, err := r.Get(ctx, "w1")
	require.NoError(t, err)
	require.Equal(t, fourLanes(), got, "the caller's later writes did not reach the store")

	got.Lanes[2].State = "job"
	got.Lanes[0].Health.RSSMB = 1
	got.Running[0] = "y"
	*got.ShmFreeMB = 2
	again, err := r.Get(ctx, "w1")
	require.NoError(t, err)
	require.Equal(t, fourLanes(), again, "a reader's writes did not reach the store")

	changed := fourLanes()
	changed.Lanes[3].State = "job"
	changed.Running = append(changed.Running, "j2")
	changed.ShmFreeMB = nil
	require.NoError(t, r.Put(ctx, changed, time.Minute))
	got, err = r.Get(ctx, "w1")
	require.NoError(t, err)
	require.Equal(t, changed, got, "a changed list is stored")
}

func BenchmarkWorkerRegistryPut(b *testing.B) {
	ctx := b.Context()
	r := memory.NewWorkerRegistry()
	w := fourLanes()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		w.Running = []string{"j" + string(rune('a'+i%26))}
		if err := r.Put(ctx, w, time.Minute); err != nil {
			b.Fatal(err)
		}
	}
}
