package grains

import (
	"context"
	"io"
	"log/slog"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/actors/supervise"
	"github.com/paprika-hub/paprika/messages"
	"github.com/paprika-hub/paprika/metrics"
	"github.com/paprika-hub/paprika/persistence"
	"github.com/paprika-hub/paprika/persistence/memory"
)

// TestProfileLockOneHolderWaitersInOrder: the first job holds the
// profile, later ones wait in arrival order and go one by one as each
// holder ends; the holder's worker becomes the profile's warm worker.
func TestProfileLockOneHolderWaitersInOrder(t *testing.T) {
	l := newProfileLocks()
	require.True(t, l.acquire(queuedJob{id: "a"}, "p"))
	require.True(t, l.acquire(queuedJob{id: "a"}, "p"), "a holder asking again still holds")
	require.False(t, l.acquire(queuedJob{id: "b"}, "p"))
	require.False(t, l.acquire(queuedJob{id: "c"}, "p"))
	require.False(t, l.acquire(queuedJob{id: "b"}, "p"), "asking again does not queue twice")
	require.True(t, l.acquire(queuedJob{id: "x"}, "other"), "profiles are independent")
	require.Equal(t, map[string]string{"p": "a", "other": "x"}, l.inUse())
	require.Len(t, l.waiters["p"], 2)

	l.placed("a", "w1")
	l.placed("b", "w9") // a waiter's placement is not the holder's
	next, ok := l.release("a", "")
	require.True(t, ok)
	require.Equal(t, "b", next.id)
	require.Equal(t, warmSpot{worker: "w1"}, l.last["p"])
	require.Empty(t, l.holder["p"], "free until the next job takes it")
	require.True(t, l.acquire(next, "p"))

	// A waiter that ends (canceled) leaves the line; nothing is handed on.
	_, ok = l.release("c", "")
	require.False(t, ok)
	require.NotContains(t, l.waiters, "p")
	next, ok = l.release("b", "")
	require.False(t, ok, "no one waits: %v", next)
	require.Equal(t, warmSpot{worker: "w1"}, l.last["p"], "b was never placed: the warm worker stays")
	require.Equal(t, map[string]string{"other": "x"}, l.inUse())
	_, ok = l.release("unknown", "")
	require.False(t, ok)
}

// TestProfileLockReleaseStopsAffinityTimer: a holder that ends while it
// waits for its warm worker stops its affinity timer.
func TestProfileLockReleaseStopsAffinityTimer(t *testing.T) {
	l := newProfileLocks()
	require.True(t, l.acquire(queuedJob{id: "a"}, "p"))
	stopped := false
	l.warm["a"] = warmJob{q: queuedJob{id: "a"}, worker: "w1", stop: func() { stopped = true }}
	_, ok := l.release("a", "")
	require.False(t, ok)
	require.True(t, stopped)
	require.Empty(t, l.warm)
	require.Nil(t, l.inUse())
}

// TestStatsCountProfileWaiting: the jobs the profile lock parks outside
// the queue (waiting for the profile, or for their warm worker) count as
// queued, by mode and by tenant too, and ProfileWaiting says how many of
// them the lock holds; a holder placed or queued is not counted twice.
func TestStatsCountProfileWaiting(t *testing.T) {
	d := &Deps{Now: time.Now}
	s := &schedulerGrain{deps: d, workers: map[string]*Candidate{}, pending: map[string]string{},
		delayed: newDelayedJobs(), book: newTenantBook(), profiles: newProfileLocks()}
	s.queue = s.newQueue()
	s.queue.PushBack(queuedJob{id: "q1", mode: messages.ModeNoop, tenant: "acme"})
	st := s.stats()
	require.Equal(t, 1, st.Queued)
	require.Zero(t, st.ProfileWaiting)

	// "h" holds profile p and is queued; "w1", "w2" wait for p.
	require.True(t, s.profiles.acquire(queuedJob{id: "h", mode: messages.ModeFetch, tenant: "acme"}, "p"))
	s.queue.PushBack(queuedJob{id: "h", mode: messages.ModeFetch, tenant: "acme"})
	require.True(t, s.profileEnqueue(queuedJob{id: "w1", mode: messages.ModeFetch, tenant: "acme"}, "p"))
	require.True(t, s.profileEnqueue(queuedJob{id: "w2", mode: messages.ModeMacro, tenant: "beta"}, "p"))
	// "k" holds profile k and waits for its warm worker, out of the queue.
	require.True(t, s.profiles.acquire(queuedJob{id: "k", mode: messages.ModeFetch}, "k"))
	s.profiles.warm["k"] = warmJob{q: queuedJob{id: "k", mode: messages.ModeFetch}, worker: "w9"}

	st = s.stats()
	require.Equal(t, 3, st.ProfileWaiting, "w1, w2 and k wait outside the queue")
	require.Equal(t, 5, st.Queued, "q1 and h in the queue, and the three parked")
	require.Equal(t, 3, st.QueuedByMode[messages.ModeFetch])
	require.Equal(t, 1, st.QueuedByMode[messages.ModeMacro])
	require.Equal(t, 1, st.QueuedByMode[messages.ModeNoop])
	require.Equal(t, map[string]int{"acme": 3, "beta": 1, "": 1}, st.QueuedByTenant)

	// The holder ends: w1 takes the profile and the queue, w2 still waits.
	s.queue.Remove("h")
	s.profileRelease("h", "")
	st = s.stats()
	require.Equal(t, 2, st.ProfileWaiting, "w2 and k")
	require.Equal(t, 4, st.Queued, "q1, w1, w2, k")
}

// testScheduler is a scheduler grain with what the profile lock and a
// session's pick use, outside an actor (no timers: AffinityWait 0).
func testScheduler(t *testing.T, now time.Time, cands ...*Candidate) *schedulerGrain {
	t.Helper()
	d := &Deps{Now: func() time.Time { return now }, Metrics: metrics.NewMetrics(), Sessions: memory.NewSessionStore(),
		Timing: Timing{AliveWindow: time.Minute}}
	s := &schedulerGrain{deps: d, workers: map[string]*Candidate{}, pending: map[string]string{},
		placingJobs: map[string]queuedJob{}, profiles: newProfileLocks(), book: newTenantBook(), delayed: newDelayedJobs(),
		rng: rand.New(rand.NewPCG(1, 2))}
	s.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	s.rule = PickRule{AliveWindow: time.Minute, DiskExcludePct: 90, Skips: new(HealthSkips)}
	s.queue = s.newQueue()
	for _, c := range cands {
		c.Drivers = []string{"chromium"}
		s.workers[c.ID] = c
		s.cands = append(s.cands, c)
	}
	return s
}

// TestProfileLockSharedByJobsAndSessions: a job and a session never hold
// one profile at once. A session asking for a profile a job holds is
// refused (naming the job) and takes nothing; once free it takes it under
// its slot key; a job then waits for the session and gets the profile
// when the session's SchedRemove releases it; a second session is
// refused while the first holds it. A session prefers the profile's warm
// worker when it has a free lane now, and takes another otherwise.
func TestProfileLockSharedByJobsAndSessions(t *testing.T) {
	now := time.Now()
	w1, w2 := idle("w1", now), idle("w2", now)
	s := testScheduler(t, now, w1, w2)

	require.True(t, s.profiles.acquire(queuedJob{id: "j1"}, "p"))
	c, _, r := s.pickSession(&messages.SchedPickSession{SessionId: "s-a", Profile: "p"})
	require.Nil(t, c)
	require.Equal(t, string(messages.CodeProfileInUse), r.Code)
	require.JSONEq(t, `{"in_use_by":"j1"}`, string(r.Json))
	require.Equal(t, map[string]string{"p": "j1"}, s.profiles.inUse(), "a refused session takes nothing")
	require.Empty(t, s.profiles.waiters, "a session never waits in the scheduler")

	// Another profile, or none, is no obstacle.
	c, _, r = s.pickSession(&messages.SchedPickSession{SessionId: "s-z"})
	require.Nil(t, r)
	require.NotNil(t, c)

	s.profiles.placed("j1", "w2")
	s.profileRelease("j1", "")
	// w2 ran p last: with a free lane it is the session's worker.
	c, _, r = s.pickSession(&messages.SchedPickSession{SessionId: "s-a", Profile: "p"})
	require.Nil(t, r)
	require.Equal(t, "w2", c.ID, "the warm worker")
	require.Equal(t, map[string]string{"p": sessionSlot("s-a")}, s.profiles.inUse())
	_, _, r = s.pickSession(&messages.SchedPickSession{SessionId: "s-a", Profile: "p"})
	require.Nil(t, r, "the holder asking again still holds")

	// A job with p waits for the session, outside the queue.
	require.True(t, s.profileEnqueue(queuedJob{id: "j2", mode: messages.ModeFetch}, "p"))
	require.Equal(t, 0, s.queue.Len())
	_, _, r = s.pickSession(&messages.SchedPickSession{SessionId: "s-b", Profile: "p"})
	require.Equal(t, string(messages.CodeProfileInUse), r.Code)
	require.JSONEq(t, `{"in_use_by":"session:s-a"}`, string(r.Json))

	// The session's end (SchedRemove with its slot) hands p to the job.
	s.profileRelease(sessionSlot("s-a"), "")
	require.Equal(t, map[string]string{"p": "j2"}, s.profiles.inUse())
	require.Equal(t, 1, s.queue.Len(), "the job is queued now")
	require.Equal(t, "w2", s.profiles.last["p"].worker)

	// The warm worker busy: the next session takes the other at once.
	s.profileRelease("j2", "")
	w2.InFlight = w2.MaxConcurrent
	c, _, r = s.pickSession(&messages.SchedPickSession{SessionId: "s-c", Profile: "p"})
	require.Nil(t, r)
	require.Equal(t, "w1", c.ID, "no wait for the warm worker")

	// No worker at all: refused, and the profile stays free.
	s.profileRelease(sessionSlot("s-c"), "")
	w1.Connected, w2.Connected = false, false
	_, _, r = s.pickSession(&messages.SchedPickSession{SessionId: "s-d", Profile: "p"})
	require.Equal(t, string(messages.CodeNoCapacity), r.Code)
	require.Nil(t, s.profiles.inUse())
}

// TestProfileAuditKeepsOpenSessions: the audit keeps the lock of a
// session whose record says it is open, and drops the lock of a session
// whose record is gone at its fourth look (a job's at its second).
func TestProfileAuditKeepsOpenSessions(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	s := testScheduler(t, now, idle("w1", now))
	require.NoError(t, s.deps.Sessions.Put(ctx, persistence.SessionRecord{ID: "s-open", WorkerID: "w1", State: SessionOpen, Profile: "p1"}, time.Minute))
	require.True(t, s.profiles.acquire(queuedJob{id: sessionSlot("s-open")}, "p1"))
	require.True(t, s.profiles.acquire(queuedJob{id: sessionSlot("s-gone")}, "p2"))
	require.True(t, s.profiles.acquire(queuedJob{id: "j-run"}, "p3"))

	audit := func() {
		alive := map[string]string{"j-run": ""}
		require.NoError(t, openSessions(ctx, s.deps.Sessions, []string{"s-open", "s-gone"}, alive))
		s.auditHolders(alive)
	}
	require.True(t, s.profiles.acquire(queuedJob{id: "j-gone"}, "p4"))
	audit()
	require.Len(t, s.profiles.inUse(), 4, "one audit only suspects")
	audit()
	require.Len(t, s.profiles.inUse(), 3, "a job is dropped at the second")
	require.NotContains(t, s.profiles.inUse(), "p4")
	audit()
	audit()
	require.Equal(t, map[string]string{"p1": sessionSlot("s-open"), "p3": "j-run"}, s.profiles.inUse(),
		"a session at the fourth (it may be opening, unrecorded)")
}

// TestLoadSessionHolders: a fresh activation takes the locks of the open
// sessions with a profile, and remembers their workers as warm.
func TestLoadSessionHolders(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	s := testScheduler(t, now)
	for _, r := range []persistence.SessionRecord{
		{ID: "s-1", WorkerID: "w1", State: SessionOpen, Profile: "p"},
		{ID: "s-2", WorkerID: "w2", State: SessionOpen},
	} {
		require.NoError(t, s.deps.Sessions.Put(ctx, r, time.Minute))
	}
	s.loadSessionHolders(ctx)
	require.Equal(t, map[string]string{"p": sessionSlot("s-1")}, s.profiles.inUse())
	require.True(t, s.profileEnqueue(queuedJob{id: "j"}, "p"), "a job waits for the session")
	s.profileRelease(sessionSlot("s-1"), "")
	require.Equal(t, "w1", s.profiles.last["p"].worker)
	require.Equal(t, map[string]string{"p": "j"}, s.profiles.inUse())
}

// testTimers is a timer set owned by a live actor of a fresh system (the
// affinity wait arms one); the actor stops with the test.
func testTimers(t *testing.T) *supervise.Timers {
	t.Helper()
	system := actor.NewActorSystem()
	ready := make(chan *supervise.Timers, 1)
	pid := system.Root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
		if _, ok := ctx.Message().(*actor.Started); ok {
			ready <- supervise.NewTimers(ctx, "test_profiles")
		}
	}))
	ts := <-ready
	t.Cleanup(func() {
		ts.StopAll()
		_ = system.Root.StopFuture(pid).Wait()
	})
	return ts
}

// TestProfileWarmLaneHint: a holder's end names the lane it ran on; the
// profile's next job, placed on the warm worker, is hinted to that lane,
// and so is a session picked there. Off the warm worker (busy, or the
// wait over) nothing is hinted: a lane of one worker means nothing on
// another.
func TestProfileWarmLaneHint(t *testing.T) {
	now := time.Now()
	w1, w2 := idle("w1", now), idle("w2", now)
	s := testScheduler(t, now, w1, w2)
	s.timers = testTimers(t)
	s.deps.Timing.AffinityWait = time.Hour // the test ends it, not the clock
	const lane = "ws://w2.lanes/lane/1"

	require.True(t, s.profiles.acquire(queuedJob{id: "j1"}, "p"))
	s.profiles.placed("j1", "w2")
	s.profileRelease("j1", lane)
	require.Equal(t, warmSpot{worker: "w2", lane: lane}, s.profiles.last["p"])

	// j2 waits for w2, which has a free lane: placed there with the hint.
	require.True(t, s.profileEnqueue(queuedJob{id: "j2", mode: messages.ModeFetch}, "p"), "waits for its warm worker")
	require.Equal(t, 0, s.queue.Len())
	var got []warmJob
	for w := range s.warmReady(now) {
		got = append(got, w)
	}
	require.Len(t, got, 1)
	require.Equal(t, "j2", got[0].q.id)
	require.Equal(t, "w2", got[0].worker)
	require.Equal(t, lane, got[0].lane, "the lane j1 ran on")
	require.Empty(t, s.profiles.warm)

	// j2 ends on another lane (its hint was busy): that lane is warm now.
	s.profiles.placed("j2", "w2")
	s.profileRelease("j2", "ws://w2.lanes/lane/3")
	require.Equal(t, warmSpot{worker: "w2", lane: "ws://w2.lanes/lane/3"}, s.profiles.last["p"])

	// The warm worker full: j3 is not placed warm; its wait over, it goes
	// to the queue, where no lane is hinted (any worker takes it).
	w2.InFlight = w2.MaxConcurrent
	require.True(t, s.profileEnqueue(queuedJob{id: "j3", mode: messages.ModeFetch}, "p"))
	for w := range s.warmReady(now) {
		t.Fatalf("placed warm on a full worker: %+v", w)
	}
	w, ok := s.profiles.warm["j3"]
	require.True(t, ok)
	require.Equal(t, "ws://w2.lanes/lane/3", w.lane)
	w.stop()
	delete(s.profiles.warm, "j3")
	s.enqueue(w.q)
	require.Equal(t, 1, s.queue.Len())

	// Sessions: the warm worker busy, another worker and no hint; free,
	// the warm worker with the lane the last holder ran on.
	s.profileRelease("j3", "") // never ran (never placed): w2's lane stays warm
	require.Equal(t, warmSpot{worker: "w2", lane: "ws://w2.lanes/lane/3"}, s.profiles.last["p"])
	c, hint, r := s.pickSession(&messages.SchedPickSession{SessionId: "s-a", Profile: "p"})
	require.Nil(t, r)
	require.Equal(t, "w1", c.ID)
	require.Empty(t, hint, "no hint off the warm worker")
	s.profileRelease(sessionSlot("s-a"), "ws://w1.lanes/lane/0")
	require.Equal(t, warmSpot{worker: "w1", lane: "ws://w1.lanes/lane/0"}, s.profiles.last["p"])
	c, hint, r = s.pickSession(&messages.SchedPickSession{SessionId: "s-b", Profile: "p"})
	require.Nil(t, r)
	require.Equal(t, "w1", c.ID)
	require.Equal(t, "ws://w1.lanes/lane/0", hint)

	// A session without a profile is never hinted.
	_, hint, r = s.pickSession(&messages.SchedPickSession{SessionId: "s-c"})
	require.Nil(t, r)
	require.Empty(t, hint)
}

// TestProfileSpotsFromStoreAfterMove: a fresh activation reading where
// each profile ran last holds a holder of a profile it knows nothing of
// until the read answers (counted as queued meanwhile), then sends it to
// wait for its warm worker — with the lane the read gave — or, for a
// profile never saved, to the queue; a spot learned from a holder's end
// meanwhile is newer than the read's and stays.
func TestProfileSpotsFromStoreAfterMove(t *testing.T) {
	now := time.Now()
	w1, w2 := idle("w1", now), idle("w2", now)
	s := testScheduler(t, now, w1, w2)
	s.timers = testTimers(t)
	s.deps.Timing.AffinityWait = time.Hour // the test ends it, not the clock
	s.profiles.spotsLoading = true

	require.True(t, s.profileEnqueue(queuedJob{id: "ja", mode: messages.ModeFetch}, "alice"), "waits for the read")
	require.True(t, s.profileEnqueue(queuedJob{id: "jn", mode: messages.ModeFetch}, "new"), "waits for the read")
	for w := range s.warmReady(now) {
		t.Fatalf("placed before the read answered: %+v", w)
	}
	require.Equal(t, 0, s.queue.Len())
	require.Equal(t, 2, s.stats().Queued, "held for the read, counted as queued")

	// carol's holder ended on w1 while the read ran: that is newer.
	require.True(t, s.profiles.acquire(queuedJob{id: "jc"}, "carol"))
	s.profiles.placed("jc", "w1")
	s.profileRelease("jc", "L-new")

	s.spotsLoaded(map[string]persistence.ProfileSpot{
		"alice": {Worker: "w2", Lane: "L2"},
		"carol": {Worker: "w2", Lane: "L-old"},
	}, nil)
	require.False(t, s.profiles.spotsLoading)
	require.Equal(t, warmSpot{worker: "w1", lane: "L-new"}, s.profiles.last["carol"], "the live end is newer")
	require.Equal(t, 1, s.queue.Len(), "the never-saved profile's job goes to the queue")
	require.Contains(t, s.queue.byID, "jn")

	var got []warmJob
	for w := range s.warmReady(now) {
		got = append(got, w)
	}
	require.Len(t, got, 1)
	require.Equal(t, "ja", got[0].q.id)
	require.Equal(t, "w2", got[0].worker, "alice's last worker, from the store")
	require.Equal(t, "L2", got[0].lane)

	// After the read, an unknown profile's holder goes to the queue at once.
	require.False(t, s.profileEnqueue(queuedJob{id: "jz", mode: messages.ModeFetch}, "zed"))
}
