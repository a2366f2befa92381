package grains

import (
	"context"
	"encoding/json"
	"log/slog"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"

	"github.com/paprika-hub/paprika/actors/supervise"
	"github.com/paprika-hub/paprika/internal/deadline"
	"github.com/paprika-hub/paprika/membership"
	"github.com/paprika-hub/paprika/messages"
	"github.com/paprika-hub/paprika/metrics"
	"github.com/paprika-hub/paprika/persistence"
)

// schedulerGrain is `scheduler/default`: it owns pick_worker and the queue
// of jobs waiting for a lane. Because the queue lives here, a lane that
// frees is filled the moment the worker grain reports it, not on the next
// 3 s sweep; the job store's conditional claim still decides every race.
// After a restart or a move it rebuilds its view from the registry (asking
// each worker grain to report) and its queue from the job store.
type schedulerGrain struct {
	// fixed after construction
	deps *Deps

	// actor-confined state
	grain
	rule         PickRule
	rng          *rand.Rand
	workers      map[string]*Candidate
	cands        []*Candidate // the same candidates, for a cheap scan
	queue        jobQueue
	pending      map[string]string    // job id → worker id, placement in flight
	placingJobs  map[string]queuedJob // job id → the job as queued, placement in flight (re-queued as it was)
	pendingSince map[string]time.Time
	placeStops   map[string]supervise.Stop // job id → its placement timeout
	delayed      delayedJobs               // scheduled jobs until their run_at (delayed.go)
	delayedTimer delayedTimer
	self         *actor.PID
	book         tenantBook            // running jobs per tenant (max_running)
	tenantLabels *metrics.TenantLabels // bounded tenant label of the wait histogram
	// served counts, per mode, the capable candidates that run it
	// (servedModes), so a class of a mode no worker runs is passed over
	// without a pick; serving is each candidate's share of it.
	served  map[string]int
	serving map[string][]string
	// profiles is the profile lock and affinity (profiles.go).
	profiles profileLocks
	// rebuilding: a fresh activation has not rebuilt its view yet
	// (schedRebuild), so nothing is placed — a worker's report or a job's
	// enqueue that came before the rebuild would be placed against tenant
	// counts and profile holders still empty.
	rebuilding bool
}

// placeTimeout fires when a placement got no answer (the job grain moved or
// died): the slot is returned and the job placed again.
type placeTimeout struct{ jobID, workerID string }

// wakeJob re-activates a job whose placement failed on store trouble.
type wakeJob struct{ jobID string }

// ownerCheck fires periodically: is this activation still the one the
// cluster routes scheduler/default to?
type ownerCheck struct{}

// ownerCheckEvery is how often a scheduler activation verifies that it is
// the grain's owner. Two activations of one identity can coexist after a
// topology change (protoactor #799); a stale one would hold jobs it can
// never place, since the worker grains report to the other.
const ownerCheckEvery = 3 * time.Second

// schedRebuild reloads the queue from the store (start, and each re-drive).
type schedRebuild struct{}

// SchedStats is the scheduler's state in numbers (SchedGetStats reply).
// The fleet fields feed /metrics at scrape time (metrics.Fleet).
type SchedStats struct {
	// Queued counts the jobs waiting for a worker: in the queue, and
	// parked by the profile lock (ProfileWaiting of them), so that GET
	// /pressure, the max_queued admission and paprika_queue_depth see
	// every waiting job. QueuedByMode and QueuedByTenant count both too.
	Queued int `json:"queued"`
	// ProfileWaiting counts the queued jobs the profile lock holds out of
	// the queue: waiting for their profile's holder to end, or for the
	// worker that ran the profile last (profiles.go).
	ProfileWaiting int `json:"profile_waiting"`
	// Scheduled counts the jobs held until their run_at (not queued yet).
	Scheduled int `json:"scheduled"`
	Pending   int `json:"pending"`
	Workers   int `json:"workers"`

	QueuedByMode map[string]int `json:"queued_by_mode,omitempty"`
	WorkersAlive int            `json:"workers_alive"`
	LanesBusy    int            `json:"lanes_busy"`
	LanesFree    int            `json:"lanes_free"`
	// InFlight holds the alive workers' counts, at most
	// metrics.MaxWorkerSeries of them; Dropped counts the rest.
	InFlight map[string]int `json:"in_flight,omitempty"`
	Dropped  int            `json:"dropped,omitempty"`

	// Per tenant (tenant_book.go): queued, and being placed or running;
	// TenantNames are the tenants the config names.
	QueuedByTenant  map[string]int `json:"queued_by_tenant,omitempty"`
	RunningByTenant map[string]int `json:"running_by_tenant,omitempty"`
	TenantNames     []string       `json:"tenant_names,omitempty"`

	// ProfilesInUse maps each profile held to its job (profiles.go).
	ProfilesInUse map[string]string `json:"profiles_in_use,omitempty"`
}

// NewSchedulerKind registers the scheduler grain.
func NewSchedulerKind(d *Deps) *cluster.Kind {
	return newKind(d, KindScheduler, func() actor.Actor { return &schedulerGrain{deps: d} })
}

func (s *schedulerGrain) Receive(ctx actor.Context) {
	if s.common(ctx) {
		return
	}
	switch msg := ctx.Message().(type) {
	case *cluster.ClusterInit:
		s.init(ctx, msg)
	case *schedRebuild:
		s.rebuild(ctx)
		s.rebuilding = false
		s.place(ctx)
	case *messages.SchedWorkerState:
		for _, id := range msg.Placed {
			// As a SchedPlaced each, before the state that counts them.
			s.settle(id, msg.WorkerId)
			s.profiles.placed(id, msg.WorkerId)
		}
		for _, r := range msg.Removed {
			s.ended(r) // as a SchedRemove each, before the freed slots
		}
		s.workerState(msg)
		s.place(ctx)
	case *messages.SchedEnqueue:
		s.deps.Metrics.SchedEnqueues.Inc()
		if msg.RunAtUnixMs == 0 {
			// Placed soon: JobPlace goes straight to the grain. A held job's
			// grain passivates meanwhile; its wake looks it up afresh.
			RememberPID(s.cl, msg.JobId, KindJob, msg.Job)
		}
		prio := persistence.DefaultPriority
		if msg.Priority != nil {
			prio = int(*msg.Priority)
		}
		if msg.RunAtUnixMs > 0 {
			s.holdUntil(msg.JobId, time.UnixMilli(msg.RunAtUnixMs))
			return
		}
		s.delayed.Remove(msg.JobId)
		q := queuedJob{id: msg.JobId, mode: msg.Mode, created: time.UnixMilli(msg.CreatedUnixMs), priority: prio, tenant: msg.Tenant,
			near: msg.Job.GetAddress()}
		if msg.Profile == "" || !s.profileEnqueue(q, msg.Profile) {
			s.enqueue(q)
		}
		s.place(ctx)
	case *delayedDue:
		s.wakeDue(ctx)
	case *messages.SchedPlaced:
		s.settle(msg.JobId, msg.WorkerId)
		s.profiles.placed(msg.JobId, msg.WorkerId)
	case *affinityDue:
		s.affinityExpired(ctx, msg.jobID)
	case *profileAudit:
		s.auditProfiles(ctx)
	case *messages.SchedPlaceFailed:
		s.placeFailed(ctx, msg)
		s.place(ctx)
	case *placeTimeout:
		delete(s.placeStops, msg.jobID)
		if w, ok := s.pending[msg.jobID]; ok && w == msg.workerID {
			s.deps.Metrics.SchedPlaceTimeouts.Inc()
			// The job grain did not answer: its cached PID may be of an
			// activation that is gone; look it up afresh next time.
			s.cl.PidCache.Remove(msg.jobID, KindJob)
			s.placeFailed(ctx, &messages.SchedPlaceFailed{JobId: msg.jobID, WorkerId: msg.workerID, Requeue: true})
			s.place(ctx)
		}
	case *supervise.InjectPanic:
		panic("injected panic in scheduler")
	case *ownerCheck:
		s.checkOwner(ctx)
	case *membership.Moved:
		// A topology change gave the grain to another member, whose
		// placement stops this activation next: the jobs go over now, so
		// they are not placed meanwhile on a view the workers no longer
		// report to, and each enqueues with its own grain's hub.
		s.handOver(ctx, msg.Owner)
	case *wakeJob:
		Send(ctx, s.cl, msg.jobID, KindJob, &messages.JobEnsure{})
	case *messages.SchedRemove:
		s.ended(msg)
		s.place(ctx) // its tenant may be under max_running now
	case *tenantResync:
		s.resyncTenants(ctx)
	case *messages.SchedPickSession:
		c, lane, refused := s.pickSession(msg) // profiles.go
		s.flushHealthSkips()
		if refused != nil {
			reply(ctx, refused)
			return
		}
		slot := sessionSlot(msg.SessionId)
		c.placing++
		c.InFlight = c.reported + c.placing
		s.pending[slot], s.pendingSince[slot] = c.ID, s.deps.Clock()
		s.armPlaceTimeout(slot, c.ID)
		b, _ := json.Marshal(sessionPick{WorkerID: c.ID, Lane: lane})
		reply(ctx, ok(b))
	case *messages.SchedGetStats:
		b, _ := json.Marshal(s.stats())
		reply(ctx, ok(b))
	}
}

func (s *schedulerGrain) init(ctx actor.Context, msg *cluster.ClusterInit) {
	s.begin(ctx, s.deps, msg, KindScheduler, "")
	s.log = s.deps.Log.With(slog.String("actor", "scheduler"))
	s.rule = PickRule{AliveWindow: s.deps.Timing.AliveWindow, DiskExcludePct: s.deps.Timing.DiskExcludePct, Skips: new(HealthSkips)}
	s.initHealthSkips()
	s.rng = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	s.workers = map[string]*Candidate{}
	s.queue = s.newQueue()
	s.book = newTenantBook()
	s.pending = map[string]string{}
	s.placingJobs = map[string]queuedJob{}
	s.pendingSince = map[string]time.Time{}
	s.placeStops = map[string]supervise.Stop{}
	s.delayed = newDelayedJobs()
	s.served, s.serving = map[string]int{}, map[string][]string{}
	s.profiles = newProfileLocks()
	s.self = ctx.Self()
	s.rebuilding = true
	ctx.Send(ctx.Self(), &schedRebuild{})
	s.loadProfileSpots(ctx) // answered after the rebuild: its holders wait for it
	every := s.deps.Timing.OwnerCheckEvery
	if every <= 0 {
		every = ownerCheckEvery
	}
	s.timers.Every(every, &ownerCheck{})
	s.timers.Every(tenantResyncEvery, &tenantResync{})
	s.timers.Every(profileAuditEvery, &profileAudit{})
}

// rebuild asks every known worker grain for its state and queues every
// queued job of the store: what a fresh activation cannot remember.
func (s *schedulerGrain) rebuild(ctx actor.Context) {
	rctx := deadline.Within(s.deps.Timing.FleetReadTimeout)
	ws, err := s.deps.Workers.List(rctx)
	if err != nil {
		s.log.Warn("scheduler rebuild: registry read failed; waiting for worker reports", slog.Any("err", err))
	}
	for _, w := range ws {
		if w.Connected {
			Send(ctx, s.cl, w.ID, KindWorker, &messages.WorkerSync{})
		}
	}
	s.loadProfileHolders() // before the queued jobs: running ones hold their profiles
	n := s.loadQueued()
	d := s.loadScheduled()
	s.loadRunning()
	s.log.Info("scheduler view rebuilt", slog.Int("workers", len(ws)), slog.Int("queued", n), slog.Int("scheduled", d))
}

func (s *schedulerGrain) loadQueued() int {
	n := 0
	// The job grain's hub, as PickWorkerNear wants it: the job's own
	// enqueue, which carries it, finds the job queued already.
	near := func(string) string { return "" }
	if o, ok := s.cl.Config.IdentityLookup.(owner); ok {
		near = func(id string) string { return o.OwnerOf(id, KindJob) }
	}
	q := persistence.ListQuery{Status: persistence.StatusQueued, Limit: sweepPage, OldestFirst: true}
	for j, err := range persistence.AllJobs(context.Background(), s.deps.Jobs, q,
		persistence.PageTimeout(sweepPageTimeout), persistence.MaxPages(100)) {
		if err != nil {
			s.log.Warn("scheduler: queued jobs read failed; re-drive will retry", slog.Any("err", err))
			return n
		}
		if j.WorkerID == "" {
			q := queuedJob{id: j.ID, mode: j.Mode, created: j.CreatedAt, priority: j.Priority, tenant: j.Tenant, near: near(j.ID)}
			if p := messages.ProfileOf(j.Params); p == "" || !s.profileEnqueue(q, p) {
				s.enqueue(q)
			}
			n++
		}
	}
	return n
}

// stats is SchedStats now. One pass over the candidates: a scrape every
// few seconds costs the scheduler as much as one placement pass.
func (s *schedulerGrain) stats() SchedStats {
	st := SchedStats{Queued: s.queue.Len(), Scheduled: s.delayed.Len(), Pending: len(s.pending), Workers: len(s.workers),
		QueuedByMode: make(map[string]int, len(messages.Modes)), InFlight: map[string]int{}}
	for _, m := range messages.Modes {
		st.QueuedByMode[m] = 0 // every mode has a series, so a rate or an alert never sees a gap
	}
	for m, n := range s.queue.ByMode() {
		st.QueuedByMode[metricMode(m)] += n
	}
	for q := range s.profiles.parked {
		st.ProfileWaiting++
		st.QueuedByMode[metricMode(q.mode)]++
	}
	st.Queued += st.ProfileWaiting
	s.tenantStats(&st)
	st.ProfilesInUse = s.profiles.inUse()
	now := s.deps.Clock()
	for _, c := range s.cands {
		if !c.Connected || now.Sub(c.LastSeen) > s.rule.AliveWindow {
			continue
		}
		st.WorkersAlive++
		busy := min(c.InFlight, c.MaxConcurrent)
		st.LanesBusy += busy
		if c.Status == WorkerActive {
			st.LanesFree += max(c.MaxConcurrent-busy-c.UnhealthyLanes, 0) // unhealthy lanes take no work
		}
		if len(st.InFlight) < metrics.MaxWorkerSeries {
			st.InFlight[c.ID] = c.InFlight
		} else {
			st.Dropped++
		}
	}
	return st
}

func (s *schedulerGrain) workerState(m *messages.SchedWorkerState) {
	c, ok := s.workers[m.WorkerId]
	if !ok {
		c = &Candidate{ID: m.WorkerId}
		s.workers[m.WorkerId] = c
		s.cands = append(s.cands, c)
	}
	// A lane freed, or the worker became one placement may pick: jobs
	// waiting for it are placeable from now (placement latency).
	if !ok || int(m.MaxConcurrent)-int(m.InFlight) > c.MaxConcurrent-c.reported ||
		m.Status != c.Status || m.Connected != c.Connected {
		c.freedAt = s.deps.Clock()
	}
	c.Status = m.Status
	c.Connected = m.Connected
	c.LastSeen = time.UnixMilli(m.LastSeenUnixMs)
	c.MaxConcurrent = int(m.MaxConcurrent)
	c.Lanes = int(m.Lanes)
	c.HasBrowser = m.HasBrowser
	c.DiskPct = m.DiskPct
	c.Drivers = m.Drivers
	c.LinkHub = m.LinkAddress
	c.UnhealthyLanes, c.UnhealthyReason, c.ShmLow = int(m.UnhealthyLanes), m.UnhealthyReason, m.ShmLow
	c.unhealthyIdx = healthIndex(m.UnhealthyReason)
	if c.Declares != m.DeclaresModes || !sameModes(c.Modes, m.Modes) {
		c.Declares, c.Modes = m.DeclaresModes, modeSet(m.Modes)
	}
	s.countServed(c)
	// The grain's count is authoritative, but placements it has not seen yet
	// are still on their way to it: keep them counted.
	c.reported = int(m.InFlight)
	c.InFlight = c.reported + c.placing
}

func (s *schedulerGrain) enqueue(j queuedJob) {
	id := j.id
	if w := s.pending[id]; w != "" && s.deps.Clock().Sub(s.pendingSince[id]) > 2*s.deps.Timing.AssignGrace {
		// The job asks again long after its placement: the answer was lost
		// (a hub left mid-way). Forget the placement and place it anew.
		s.deps.Metrics.SchedStalePlacements.Inc()
		s.settle(id, w)
	}
	if s.pending[id] != "" {
		return
	}
	j.enqueued = s.deps.Clock()
	s.book.stop(id)     // queued again (requeued after a lost worker): not running
	s.queue.PushBack(j) // a job it holds already stays where it is
}

func (s *schedulerGrain) remove(id string) { s.queue.Remove(id) }

// ended forgets a job (or a session's slot) that ended for good: out of
// the queue and the delayed set, out of its tenant's count, and its
// profile's next job may go (hinted to m.Lane).
func (s *schedulerGrain) ended(m *messages.SchedRemove) {
	s.remove(m.JobId)
	s.delayed.Remove(m.JobId)
	s.book.stop(m.JobId)
	s.profileRelease(m.JobId, m.Lane)
}

// armPlaceTimeout bounds a placement in flight; settle stops it.
func (s *schedulerGrain) armPlaceTimeout(jobID, workerID string) {
	if stop := s.placeStops[jobID]; stop != nil {
		stop()
	}
	s.placeStops[jobID] = s.timers.After(2*s.deps.Timing.AssignGrace, &placeTimeout{jobID: jobID, workerID: workerID})
}

func (s *schedulerGrain) placeFailed(ctx actor.Context, m *messages.SchedPlaceFailed) {
	j, known := s.placingJobs[m.JobId]
	if w, ok := s.pending[m.JobId]; !ok || w != m.WorkerId {
		known = false // not this placement's answer
	}
	s.settle(m.JobId, m.WorkerId)
	if known {
		s.book.stop(m.JobId) // this placement did not start it
	}
	if m.Requeue && m.RetryAfterMs > 0 {
		// The job grain enqueues itself again (with its mode) when woken.
		s.timers.After(time.Duration(m.RetryAfterMs)*time.Millisecond, &wakeJob{jobID: m.JobId})
		return
	}
	if m.Requeue && !isSessionSlot(m.JobId) {
		if !known {
			// Its mode and priority are unknown here: the job grain
			// enqueues itself again with them when woken.
			Send(ctx, s.cl, m.JobId, KindJob, &messages.JobEnsure{})
			return
		}
		// Back to the front of its priority: it waited longest.
		j.enqueued = s.deps.Clock()
		s.queue.Untake(j)
	}
}

// checkOwner stops this activation when the cluster routes the scheduler
// elsewhere: its queued jobs are woken so they enqueue with the owner.
// With membership's lookup the owner is read from this member's view of
// the topology, locally, as its placement actor reads it; another lookup
// is asked beside the actor and answers to the turn. Either way the turn
// does not wait on an activation.
func (s *schedulerGrain) checkOwner(ctx actor.Context) {
	if o, ok := s.cl.Config.IdentityLookup.(owner); ok {
		if addr := o.OwnerOf(SchedulerID, KindScheduler); addr != "" && addr != s.cl.ActorSystem.Address() {
			s.handOver(ctx, addr)
		}
		return
	}
	system, cl := ctx.ActorSystem(), s.cl
	found := actor.NewFuture(system, ownerCheckEvery) // an answer later than the next check is moot
	go func() {
		cl.PidCache.Remove(SchedulerID, KindScheduler)
		if pid := cl.Get(SchedulerID, KindScheduler); pid != nil {
			system.Root.Send(found.PID(), pid)
		}
	}()
	s.timers.Reenter(ctx, found, func(res interface{}, _ error) {
		if pid, _ := res.(*actor.PID); pid != nil && !samePID(pid, ctx.Self()) {
			s.handOver(ctx, pid.String())
		}
	})
}

// handOver wakes every job this activation holds, so each enqueues with
// the owner, and stops it.
func (s *schedulerGrain) handOver(ctx actor.Context, owner string) {
	s.cl.PidCache.Remove(SchedulerID, KindScheduler)
	s.deps.Metrics.SchedStaleActivations.Inc()
	s.log.Warn("another scheduler activation owns the grain; handing over and stopping",
		slog.String("owner", owner), slog.Int("queued", s.queue.Len()))
	for q := range s.queue.All() {
		Send(ctx, s.cl, q.id, KindJob, &messages.JobEnsure{})
	}
	for id := range s.pending {
		Send(ctx, s.cl, id, KindJob, &messages.JobEnsure{})
	}
	for id := range s.delayed.byID {
		Send(ctx, s.cl, id, KindJob, &messages.JobEnsure{})
	}
	s.profileHandover(ctx) // profiles.go
	s.queue, s.pending, s.placingJobs = s.newQueue(), map[string]string{}, map[string]queuedJob{}
	s.book = newTenantBook()
	ctx.Stop(ctx.Self())
}

// settle ends a placement in flight: the worker grain's next report counts
// it (or not, when it failed).
func (s *schedulerGrain) settle(jobID, workerID string) {
	if w, ok := s.pending[jobID]; !ok || w != workerID {
		return
	}
	delete(s.pending, jobID)
	delete(s.pendingSince, jobID)
	delete(s.placingJobs, jobID)
	if stop := s.placeStops[jobID]; stop != nil {
		stop()
		delete(s.placeStops, jobID)
	}
	if c := s.workers[workerID]; c != nil && c.placing > 0 {
		c.placing--
		c.InFlight = c.reported + c.placing
	}
}

// countServed updates served with c's share as it is now.
func (s *schedulerGrain) countServed(c *Candidate) {
	now := servedModes(c)
	was := s.serving[c.ID]
	if slices.Equal(was, now) {
		return
	}
	for _, m := range was {
		if s.served[m]--; s.served[m] <= 0 {
			delete(s.served, m)
		}
	}
	for _, m := range now {
		s.served[m]++
	}
	s.serving[c.ID] = now
}

// serves: some capable candidate runs mode ("" is noop).
func (s *schedulerGrain) serves(mode string) bool {
	if mode == "" {
		mode = messages.ModeNoop
	}
	return s.served[mode] > 0
}

// place assigns queued jobs, highest effective priority first (oldest
// first within one; jobQueue), while some worker is eligible. A class of
// jobs (those needing one driver) whose best job no worker takes is
// skipped for the rest of the pass: none of its jobs could go either, so
// a backlog of unrunnable jobs costs one pick per pass, not one per job.
func (s *schedulerGrain) place(ctx actor.Context) {
	if s.rebuilding {
		return // the rebuild places what came meanwhile
	}
	now := s.deps.Clock()
	if len(s.profiles.warm) > 0 {
		s.placeWarm(ctx, now) // profiles.go
	}
	if s.queue.Len() == 0 {
		return
	}
	s.queue.BeginPass()
	pick := func(j queuedJob) *Candidate { return s.rule.PickWorkerNear(s.cands, j.mode, now, s.rng, j.near) }
	defer s.flushHealthSkips()
	for {
		q, c, found := s.queue.nextPlacement(now, s.serves, pick)
		if !found {
			return
		}
		s.assign(ctx, q, c, "", now)
	}
}

// assign sends q to c, hinting lane (a warm placement of profiles.go;
// empty: no hint): a step of place, and of the warm placements.
func (s *schedulerGrain) assign(ctx actor.Context, q queuedJob, c *Candidate, lane string, now time.Time) {
	c.placing++ // at once, so the next pick of this pass sees it
	c.InFlight = c.reported + c.placing
	s.queue.Take(q.id)
	s.placedTenant(q, now)
	s.pending[q.id], s.pendingSince[q.id] = c.ID, now
	s.placingJobs[q.id] = q
	s.deps.Metrics.SchedPlacements.Inc()
	s.deps.Metrics.PlacementLatency.Observe(now.Sub(laterOf(q.enqueued, c.freedAt)).Seconds())
	Send(ctx, s.cl, q.id, KindJob, &messages.JobPlace{WorkerId: c.ID, Lane: lane})
	s.armPlaceTimeout(q.id, c.ID)
}

func laterOf(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
