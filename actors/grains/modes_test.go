package grains

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/messages"
	"github.com/paprika-hub/paprika/persistence"
)

func TestRunsMode(t *testing.T) {
	chromium := []string{messages.DriverChromium}
	sim := []string{messages.DriverSimulated}
	declared := modeSet([]string{"pdf-diff", messages.ModeNoop})
	cases := []struct {
		name     string
		declares bool
		drivers  []string
		mode     string
		want     bool
	}{
		{"undeclared: noop anywhere", false, sim, messages.ModeNoop, true},
		{"undeclared: empty mode is noop", false, sim, "", true},
		{"undeclared: fetch needs chromium", false, sim, messages.ModeFetch, false},
		{"undeclared: fetch on chromium", false, chromium, messages.ModeFetch, true},
		{"undeclared: a custom mode never", false, chromium, "pdf-diff", false},
		{"declared: its custom mode", true, sim, "pdf-diff", true},
		{"declared: its noop", true, sim, messages.ModeNoop, true},
		{"declared: empty mode is its noop", true, sim, "", true},
		{"declared: a built-in it did not declare", true, chromium, messages.ModeFetch, false},
		{"declared: another custom mode", true, chromium, "http-check", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, runsMode(tc.declares, declared, tc.drivers, tc.mode))
		})
	}
}

// TestPickWorkerDeclaredModes: a job goes only to a worker that runs its
// mode, and ties among those still break at random.
func TestPickWorkerDeclaredModes(t *testing.T) {
	now := time.Now()
	plain := idle("plain", now) // declares nothing: built-in modes only
	plain.Drivers = []string{messages.DriverChromium}
	a, b := idle("a", now), idle("b", now)
	for _, c := range []*Candidate{a, b} {
		c.Declares, c.Modes = true, modeSet([]string{"pdf-diff"})
	}
	cands := []*Candidate{plain, a, b}
	rng := rand.New(rand.NewPCG(1, 2))
	seen := map[string]int{}
	for range 400 {
		c := testRule.PickWorker(cands, "pdf-diff", now, rng)
		require.NotNil(t, c)
		seen[c.ID]++
	}
	require.Zero(t, seen["plain"], "a worker that does not declare the mode never gets it")
	require.Greater(t, seen["a"], 100)
	require.Greater(t, seen["b"], 100)
	require.Equal(t, "plain", testRule.PickWorker(cands, messages.ModeFetch, now, rng).ID,
		"declaring workers run only what they declare")
	require.Nil(t, testRule.PickWorker(cands, "http-check", now, rng))
}

func TestDeclaredModesBound(t *testing.T) {
	got, err := declaredModes([]messages.ModeDecl{{Name: "x", Schema: json.RawMessage(`{ "type" : "object" }`)}, {Name: "y"}})
	require.NoError(t, err)
	require.Equal(t, []persistence.WorkerMode{{Name: "x", Schema: json.RawMessage(`{"type":"object"}`)}, {Name: "y"}}, got)

	big := json.RawMessage(`{"description":"` + strings.Repeat("a", 40<<10) + `"}`)
	_, err = declaredModes([]messages.ModeDecl{{Name: "x", Schema: big}, {Name: "y", Schema: big}})
	require.ErrorContains(t, err, "limit 65536")

	none, err := declaredModes(nil)
	require.NoError(t, err)
	require.Nil(t, none)
}

func TestFleetModes(t *testing.T) {
	now := time.Now()
	w := func(id string, drivers []string, slots int, modes ...persistence.WorkerMode) persistence.WorkerInfo {
		return persistence.WorkerInfo{ID: id, Status: WorkerActive, Connected: true, LastSeen: now,
			MaxConcurrent: slots, Lanes: make([]persistence.LaneStatus, slots), Drivers: drivers, Modes: modes}
	}
	s1, s2 := json.RawMessage(`{"required":["a"]}`), json.RawMessage(`{"required":["b"]}`)
	ws := []persistence.WorkerInfo{
		w("plain", []string{messages.DriverSimulated}, 2),
		w("c1", []string{messages.DriverChromium}, 4,
			persistence.WorkerMode{Name: "pdf-diff", Lane: messages.LaneNeedChromium, Schema: s1},
			persistence.WorkerMode{Name: "http-check"}),
		w("c2", []string{messages.DriverChromium}, 3,
			persistence.WorkerMode{Name: "pdf-diff", Lane: messages.LaneNeedChromium, Schema: s1}),
		w("c3", []string{messages.DriverChromium}, 1,
			persistence.WorkerMode{Name: "pdf-diff", Lane: messages.LaneNeedChromium, Schema: s2}),
		// Declares a chromium mode without a chromium lane: cannot run it.
		w("nolane", []string{messages.DriverSimulated}, 5,
			persistence.WorkerMode{Name: "pdf-diff", Lane: messages.LaneNeedChromium, Schema: s2}),
		func() persistence.WorkerInfo { // gone: not counted
			x := w("gone", []string{messages.DriverChromium}, 9, persistence.WorkerMode{Name: "ghost"})
			x.Connected = false
			return x
		}(),
	}
	got := fleetModes(ws, time.Minute, now)
	names := make([]string, len(got))
	for i, m := range got {
		names[i] = m.Name
	}
	require.Equal(t, []string{"http-check", "noop", "pdf-diff"}, names)
	require.Equal(t, persistence.ModeInfo{Name: "http-check", Workers: 1, Lanes: 4, Unchecked: true}, got[0])
	require.Equal(t, persistence.ModeInfo{Name: "noop", Workers: 1, Lanes: 2}, got[1])
	pdf := got[2]
	require.Equal(t, messages.LaneNeedChromium, pdf.Lane)
	require.Equal(t, 3, pdf.Workers)
	require.Equal(t, 8, pdf.Lanes)
	require.JSONEq(t, string(s1), string(pdf.Schema), "the schema most workers declare")
	require.Len(t, pdf.Schemas, 2)
}

// TestJobQueueSkipsUnservedModes: a class of a mode no worker runs costs
// no pick, and the classes of one-off modes do not pile up.
func TestJobQueueSkipsUnservedModes(t *testing.T) {
	q := newJobQueue(0)
	q.PushBack(queuedJob{id: "c", mode: "pdf-diff", created: t0, priority: 9})
	q.PushBack(queuedJob{id: "n", mode: messages.ModeNoop, created: t0.Add(time.Second)})
	picks := 0
	pick := func(queuedJob) *Candidate { picks++; return &Candidate{ID: "w"} }
	q.BeginPass()
	j, _, ok := q.nextPlacement(t0, func(m string) bool { return m == messages.ModeNoop }, pick)
	require.True(t, ok)
	require.Equal(t, "n", j.id)
	require.Equal(t, 1, picks, "the unserved mode's class was passed over without a pick")

	for i := range 100 {
		id := "one-off-" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		q.PushBack(queuedJob{id: id, mode: id})
		q.Remove(id)
	}
	require.LessOrEqual(t, len(q.classes), maxIdleClasses+1)
	require.Equal(t, map[string]int{"pdf-diff": 1, messages.ModeNoop: 1}, q.ByMode())
}

func TestMetricMode(t *testing.T) {
	require.Equal(t, messages.ModeNoop, metricMode(""))
	require.Equal(t, messages.ModeFetch, metricMode(messages.ModeFetch))
	require.Equal(t, MetricModeCustom, metricMode("pdf-diff"))
}
