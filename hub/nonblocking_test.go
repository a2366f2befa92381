package hub

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/actors/grains"
	"github.com/paprika-hub/paprika/actors/supervise"
	"github.com/paprika-hub/paprika/messages"
	"github.com/paprika-hub/paprika/persistence"
)

// silentConn stands for a WorkerConn of a hub that stopped answering: it
// takes every frame and never confirms one.
type silentConn struct{ got chan *messages.ConnSend }

func (s *silentConn) Receive(ctx actor.Context) {
	if m, ok := ctx.Message().(*messages.ConnSend); ok {
		if f, err := messages.DecodeFrame(m.Frame); err == nil && f.Type == messages.TypeLaneSkip {
			return // the grain telling a link it did not accept its skipped lanes (none)
		}
		s.got <- m
	}
}

// A job grain waiting on an unresponsive worker, and the worker grain
// waiting on its link, both go on answering: no actor's turn waits for a
// peer. (Before, the worker grain blocked its mailbox for the link's whole
// confirmation timeout, and the job grain behind it for as long.)
func TestUnresponsiveLinkStallsNoGrain(t *testing.T) {
	h := startTestHub(t, testConfig(t))
	url := h.URL()
	dialRawLink(t, url, "w-slow", 2)
	cl, root := h.member.Cluster, h.member.System.Root

	// The worker grain adopts the newest link that speaks: make that a
	// link that never confirms a frame.
	got := make(chan *messages.ConnSend, 16)
	silent := root.Spawn(actor.PropsFromProducer(func() actor.Actor { return &silentConn{got: got} }))
	hb, err := messages.Frame{Type: messages.TypeHeartbeat, Stats: &messages.Stats{}}.Encode()
	require.NoError(t, err)
	root.Send(cl.Get("w-slow", grains.KindWorker), &messages.WorkerHeartbeat{Conn: &messages.Ref{Address: silent.Address, Id: silent.Id},
		Frame: hb, ConnStartedUnixNs: time.Now().UnixNano()})

	job := submit(t, url, `{"mode":"noop"}`)
	var sent *messages.ConnSend
	select {
	case sent = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("the assignment never reached the link")
	}
	require.True(t, sent.Ack, "an assignment waits for the link's confirmation")
	f, err := messages.DecodeFrame(sent.Frame)
	require.NoError(t, err)
	require.Equal(t, job.ID, f.JobID)

	// Both grains are waiting on the silent link now; each answers at once.
	waiting := time.Now()
	r, err := grains.Call(cl, "w-slow", grains.KindWorker, &messages.WorkerGetInfo{}, 5*time.Second)
	require.NoError(t, err)
	require.True(t, r.Ok, r.Message)
	var w persistence.WorkerInfo
	require.NoError(t, json.Unmarshal(r.Json, &w))
	require.Equal(t, 1, w.InFlight, "the slot is held while the frame is on its way")

	r, err = grains.Call(cl, job.ID, grains.KindJob, &messages.JobEnsure{}, 5*time.Second)
	require.NoError(t, err)
	require.True(t, r.Ok, r.Message)
	var j persistence.Job
	require.NoError(t, json.Unmarshal(r.Json, &j))
	require.Equal(t, persistence.StatusRunning, j.Status, "the claim is made before the worker is asked")
	require.Equal(t, "w-slow", j.WorkerID)
	require.Less(t, time.Since(waiting), grains.ConnAckTimeout/2,
		"a grain waiting on its peer must answer other messages meanwhile")
	require.Zero(t, h.Metrics().Get("paprika_assignments_unconfirmed_total"), "asked while the placement still waited")

	// The GET of the API answers too, and the placement ends as it did:
	// unconfirmed, the claim kept.
	require.Equal(t, persistence.StatusRunning, getJob(t, url, job.ID).Status)
	require.Eventually(t, func() bool { return h.Metrics().Get("paprika_assignments_unconfirmed_total") == 1 },
		grains.ConnAckTimeout+5*time.Second, 20*time.Millisecond)
	require.Equal(t, persistence.StatusRunning, getJob(t, url, job.ID).Status, "an unconfirmed claim stands")
}

// Every timer belongs to an actor incarnation: a restart stops the old
// one's timers, and the new one arms only what its state needs. Without
// that, each restart of a timed actor would leave its timers firing
// (protoactor's are plain time.AfterFunc) and every tick would come twice.
func TestTimersStopWithTheirActor(t *testing.T) {
	cfg := testConfig(t)
	h := startTestHub(t, cfg)
	url := h.URL()
	ctx := context.Background()
	l := dialRawLink(t, url, "w-timed", 2)

	// A job that stays running (the raw worker never finishes it): its
	// grain holds a deadline timer.
	job := submit(t, url, `{"mode":"noop","timeout_s":600}`)
	a := l.next(5 * time.Second)
	require.Equal(t, messages.TypeAssignJob, a.Type)
	l.send(messages.Frame{Type: messages.TypeJobStarted, JobID: job.ID, Attempt: a.Attempt, Lane: "sim://w-timed/lane/0"})
	require.Eventually(t, func() bool { return getJob(t, url, job.ID).Lane != "" }, 5*time.Second, 10*time.Millisecond)

	// A worker away with a job held: its grain holds the lost timer.
	away := dialRawLink(t, url, "w-away", 1)
	held := submit(t, url, `{"mode":"noop","timeout_s":600}`)
	for {
		f := away.next(5 * time.Second)
		if f.Type == messages.TypeAssignJob && f.JobID == held.ID {
			away.send(messages.Frame{Type: messages.TypeJobStarted, JobID: held.ID, Attempt: f.Attempt, Lane: "sim://w-away/lane/0"})
			break
		}
		// The other job may have gone to this worker first: take it back.
		require.NotEqual(t, "", f.Type, "no assignment came")
	}
	require.Eventually(t, func() bool { return getJob(t, url, held.ID).Lane != "" }, 5*time.Second, 10*time.Millisecond)
	require.NoError(t, away.conn.Close())
	require.Eventually(t, func() bool {
		w, err := h.stores.Workers.Get(ctx, "w-away")
		return err == nil && !w.Connected
	}, 5*time.Second, 10*time.Millisecond)

	for _, k := range []struct{ kind, id string }{
		{grains.KindJob, job.ID}, {grains.KindScheduler, ""}, {grains.KindWorker, "w-away"},
		{"reconciler", ""}, {"log_flusher", ""}, {"hub_beat", ""},
	} {
		require.Eventually(t, func() bool { return supervise.LiveTimersIn(h.member.System, k.kind) > 0 }, 5*time.Second, 10*time.Millisecond,
			"%s arms a timer in this state", k.kind)
		before := supervise.LiveTimersIn(h.member.System, k.kind)
		restarts := h.Metrics().Get("paprika_actor_supervision_total", "directive=RestartDirective")
		require.NoError(t, h.InjectPanic(ctx, k.kind, k.id), k.kind)
		require.Eventually(t, func() bool {
			return h.Metrics().Get("paprika_actor_supervision_total", "directive=RestartDirective") > restarts
		}, 5*time.Second, 10*time.Millisecond, "%s restarted", k.kind)
		require.Eventually(t, func() bool { return supervise.LiveTimersIn(h.member.System, k.kind) == before }, 5*time.Second, 10*time.Millisecond,
			"%s: %d timers before the restart, %d after", k.kind, before, supervise.LiveTimersIn(h.member.System, k.kind))
		// Nothing re-armed twice behind it: a duplicated periodic timer
		// would keep the count above before for good, while a one-off
		// (a log write retried on a loaded machine) comes and goes.
		time.Sleep(100 * time.Millisecond)
		require.Eventually(t, func() bool { return supervise.LiveTimersIn(h.member.System, k.kind) == before }, 3*time.Second, 10*time.Millisecond,
			"%s: %d timers before the restart, %d a while after", k.kind, before, supervise.LiveTimersIn(h.member.System, k.kind))
	}
	// The job and the worker's work still end as they should.
	l.send(messages.Frame{Type: messages.TypeJobDone, JobID: job.ID, Attempt: a.Attempt, Result: []byte(`{}`)})
	require.Equal(t, persistence.StatusSucceeded, waitFinal(t, url, job.ID, 10*time.Second).Status)
}

// A new job asks the scheduler for a lane once: its grain's activation
// enqueues it, and the wake-up that activated it does not ask again.
func TestNewJobIsEnqueuedOnce(t *testing.T) {
	h := startTestHub(t, testConfig(t))
	url := h.URL()
	const n = 5
	for i := 0; i < n; i++ {
		submit(t, url, `{"mode":"noop"}`)
	}
	cl := h.member.Cluster
	require.Eventually(t, func() bool {
		r, err := grains.Call(cl, grains.SchedulerID, grains.KindScheduler, &messages.SchedGetStats{}, time.Second)
		var st grains.SchedStats
		return err == nil && r.Ok && json.Unmarshal(r.Json, &st) == nil && st.Queued == n
	}, 5*time.Second, 10*time.Millisecond)
	// Whatever was still on its way has arrived behind the stats request.
	_, err := grains.Call(cl, grains.SchedulerID, grains.KindScheduler, &messages.SchedGetStats{}, time.Second)
	require.NoError(t, err)
	require.Equal(t, int64(n), h.Metrics().Get("paprika_sched_enqueues_total"))
}
