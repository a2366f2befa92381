package grains

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"slices"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/paprika-hub/paprika/actors/supervise"
	"github.com/paprika-hub/paprika/messages"
	"github.com/paprika-hub/paprika/persistence"
)

// Profiles in the scheduler (README "Profiles and affinity"). The
// scheduler is one grain per fleet, so its lock is the fleet's: at most
// one job holds a profile, from its enqueue to its SchedRemove (final),
// retries included; the others wait, parked here and not in the queue,
// and the oldest goes when the holder ends. A holder whose profile a
// worker used before first waits up to Timing.AffinityWait for that
// worker (its lane's browser process kept the profile's cache and
// connections warm), then goes to the queue like any job. Placed on its
// warm worker, it is hinted to the warm lane itself (the one its last
// holder ran on, told by that holder's SchedRemove): each lane is its own
// browser process, and what is warm is that process. The lane is a
// preference, not a wait: the worker takes another free lane when that
// one is busy (or skipped for health).
//
// A session with a profile holds the same lock under its slot key
// ("session:<id>"), from its pick (SchedPickSession) to the SchedRemove
// its grain sends once the worker confirmed the close (after the save).
// It never waits here: its grain retries the pick on a timer
// (Timing.SessionProfileWait), and it takes its warm worker only when
// that worker has a free lane at once — a person is waiting for it.

// profileLocks is the bookkeeping of the lock and of affinity, without
// the actor (unit tests drive it directly).
type profileLocks struct {
	holder  map[string]string      // profile → the job holding it
	of      map[string]string      // job → the profile it holds or waits for
	waiters map[string][]queuedJob // profile → jobs waiting for it, in arrival order
	last    map[string]warmSpot    // profile → where its last holder ran
	ranOn   map[string]string      // holding job → the worker it was placed on
	warm    map[string]warmJob     // holding job → waiting for its warm worker
	// suspect: holders the last audits found neither running nor
	// waiting, and in how many audits in a row.
	suspect  map[string]int
	auditing bool
	// spotsLoading: a fresh activation is reading where each profile ran
	// last (loadProfileSpots); a holder of a profile it knows nothing of
	// yet waits for that read, within its affinity wait.
	spotsLoading bool
}

// warmSpot is where a profile's last holder ran: its worker, and the
// lane on it (empty when the holder never reported one).
type warmSpot struct {
	worker, lane string
}

// warmJob is a holder waiting for the worker that ran its profile last
// (worker empty: for the read that says which, spotsLoading).
type warmJob struct {
	q      queuedJob
	worker string
	lane   string // the hint it is placed with on worker
	stop   supervise.Stop
}

// affinityDue ends a job's wait for its warm worker.
type affinityDue struct{ jobID string }

func newProfileLocks() profileLocks {
	return profileLocks{holder: map[string]string{}, of: map[string]string{}, waiters: map[string][]queuedJob{},
		last: map[string]warmSpot{}, ranOn: map[string]string{}, warm: map[string]warmJob{}}
}

// acquire makes q's job the holder of p when p is free (true; also when
// it holds p already), else it waits for p (false; queued once).
func (l *profileLocks) acquire(q queuedJob, p string) bool {
	l.of[q.id] = p
	switch h := l.holder[p]; h {
	case "", q.id:
		l.holder[p] = q.id
		return true
	}
	if !slices.ContainsFunc(l.waiters[p], func(w queuedJob) bool { return w.id == q.id }) {
		l.waiters[p] = append(l.waiters[p], q)
	}
	return false
}

// release forgets job id: a holder frees its profile (remembering the
// worker it ran on, and lane, the lane there its SchedRemove named) and
// hands back the oldest waiter, if any; a waiter leaves the line.
func (l *profileLocks) release(id, lane string) (next queuedJob, ok bool) {
	p := l.of[id]
	if p == "" {
		return next, false
	}
	delete(l.of, id)
	if w, ok := l.warm[id]; ok {
		if w.stop != nil {
			w.stop()
		}
		delete(l.warm, id)
	}
	if l.holder[p] != id {
		l.waiters[p] = slices.DeleteFunc(l.waiters[p], func(w queuedJob) bool { return w.id == id })
		if len(l.waiters[p]) == 0 {
			delete(l.waiters, p)
		}
		return next, false
	}
	delete(l.holder, p)
	if w := l.ranOn[id]; w != "" {
		l.last[p] = warmSpot{worker: w, lane: lane}
	}
	delete(l.ranOn, id)
	ws := l.waiters[p]
	if len(ws) == 0 {
		return next, false
	}
	next, ws = ws[0], ws[1:]
	if len(ws) == 0 {
		delete(l.waiters, p)
	} else {
		l.waiters[p] = ws
	}
	return next, true
}

// placed records the worker a holder was placed on.
func (l *profileLocks) placed(id, worker string) {
	if p := l.of[id]; p != "" && l.holder[p] == id {
		l.ranOn[id] = worker
	}
}

// parked yields the jobs the lock holds outside the queue: waiting for a
// profile in use, or for their warm worker. They wait like queued jobs, so
// SchedStats counts them as queued (and in ProfileWaiting).
func (l *profileLocks) parked(yield func(queuedJob) bool) {
	for _, ws := range l.waiters {
		for _, w := range ws {
			if !yield(w) {
				return
			}
		}
	}
	for _, w := range l.warm {
		if !yield(w.q) {
			return
		}
	}
}

// inUse maps each held profile to its holder (a copy, for SchedStats).
func (l *profileLocks) inUse() map[string]string {
	if len(l.holder) == 0 {
		return nil
	}
	out := make(map[string]string, len(l.holder))
	for p, h := range l.holder {
		out[p] = h
	}
	return out
}

// profileEnqueue takes a job with profile p off the normal enqueue when
// the lock parks it (p in use) or it waits for its warm worker; false:
// the caller queues it as usual.
func (s *schedulerGrain) profileEnqueue(q queuedJob, p string) bool {
	if s.pending[q.id] != "" {
		return false // its placement is in flight: enqueue decides
	}
	if _, queued := s.queue.byID[q.id]; queued {
		return false
	}
	if _, waiting := s.profiles.warm[q.id]; waiting {
		return true
	}
	if !s.profiles.acquire(q, p) {
		return true
	}
	if s.deps.Timing.AffinityWait <= 0 {
		return false
	}
	w, known := s.profiles.last[p]
	switch {
	case !known && s.profiles.spotsLoading:
		// Where p ran last is being read: wait for it (spotsLoaded).
	case w.worker == "" || s.workers[w.worker] == nil:
		return false
	}
	q.enqueued = s.deps.Clock()
	s.profiles.warm[q.id] = warmJob{q: q, worker: w.worker, lane: w.lane,
		stop: s.timers.After(s.deps.Timing.AffinityWait, &affinityDue{jobID: q.id})}
	return true
}

// maxProfileSpots bounds the profiles a fresh activation reads the last
// spot of (two reads each: the metadata, the job for its lane), and
// profileSpotsTimeout the whole read.
const (
	maxProfileSpots     = 1000
	profileSpotsTimeout = 5 * time.Second
)

// loadProfileSpots starts a fresh activation's affinity memory from the
// profiles' metadata (where each ran last; the previous activation's
// memory is gone with it), read off the turn. Meanwhile a holder whose
// profile the memory lacks waits for the read, within its affinity wait.
func (s *schedulerGrain) loadProfileSpots(ctx actor.Context) {
	if s.deps.Assets == nil || s.deps.Timing.AffinityWait <= 0 {
		return
	}
	s.profiles.spotsLoading = true
	assets, jobs := s.deps.Assets, s.deps.Jobs
	offTurn(ctx, s.timers, profileSpotsTimeout, func(rctx context.Context) (map[string]persistence.ProfileSpot, error) {
		return persistence.LastProfileSpots(rctx, assets, jobs, maxProfileSpots, messages.ValidProfileName)
	}, func(spots map[string]persistence.ProfileSpot, err error) {
		s.spotsLoaded(spots, err)
		s.place(ctx)
	})
}

// spotsLoaded takes the profiles' last spots into the memory (a spot
// learned since, from a holder's end, is newer and stays) and lets the
// holders that waited for the read go: to their warm worker's wait, the
// rest of their affinity wait, or to the queue.
func (s *schedulerGrain) spotsLoaded(spots map[string]persistence.ProfileSpot, err error) {
	s.profiles.spotsLoading = false
	if err != nil {
		s.log.Warn("scheduler: profiles' last workers read failed; their jobs go anywhere until one ends",
			slog.Int("read", len(spots)), slog.Any("err", err))
	}
	for p, sp := range spots {
		if _, ok := s.profiles.last[p]; !ok {
			s.profiles.last[p] = warmSpot{worker: sp.Worker, lane: sp.Lane}
		}
	}
	for id, w := range s.profiles.warm {
		if w.worker != "" {
			continue
		}
		if sp := s.profiles.last[s.profiles.of[id]]; sp.worker != "" {
			w.worker, w.lane = sp.worker, sp.lane
			s.profiles.warm[id] = w
			continue
		}
		if w.stop != nil {
			w.stop()
		}
		delete(s.profiles.warm, id)
		s.enqueue(w.q)
	}
}

// placeWarm places the jobs waiting for their warm worker whose worker
// can take them now (place calls it first: they waited longest for it),
// hinted to their warm lane.
func (s *schedulerGrain) placeWarm(ctx actor.Context, now time.Time) {
	for w := range s.warmReady(now) {
		s.assign(ctx, w.q, s.workers[w.worker], w.lane, now)
	}
}

// warmReady takes out of the warm set, one at a time, the jobs whose warm
// worker can take them now (their timers stopped): a lazy sequence, since
// each assignment fills its worker a little before the next is checked.
func (s *schedulerGrain) warmReady(now time.Time) iter.Seq[warmJob] {
	return func(yield func(warmJob) bool) {
		for id, w := range s.profiles.warm {
			c := s.workers[w.worker]
			if c == nil || !s.rule.Eligible(c, w.q.mode, now) || (s.queue.tenants.capped != nil && s.queue.tenants.capped(w.q.tenant)) {
				continue
			}
			if w.stop != nil {
				w.stop()
			}
			delete(s.profiles.warm, id)
			s.deps.Metrics.SchedAffinityHits.Inc()
			if !yield(w) {
				return
			}
		}
	}
}

// affinityExpired sends a job that waited AffinityWait for its warm
// worker to the queue: any worker may take it now.
func (s *schedulerGrain) affinityExpired(ctx actor.Context, id string) {
	w, ok := s.profiles.warm[id]
	if !ok {
		return
	}
	delete(s.profiles.warm, id)
	s.enqueue(w.q) // no lane hint from here: any worker, any lane
	s.place(ctx)
}

// pickSession picks a session's worker (and, on its profile's warm
// worker, the warm lane to hint) and takes its profile's lock for the
// session's slot; a refusal (profile in use, no capacity) takes nothing.
func (s *schedulerGrain) pickSession(m *messages.SchedPickSession) (*Candidate, string, *messages.Reply) {
	slot := sessionSlot(m.SessionId)
	if m.Profile != "" {
		if h := s.profiles.holder[m.Profile]; h != "" && h != slot {
			r := fail(messages.CodeProfileInUse, "profile %s is in use by %s", m.Profile, holderName(h))
			r.Json, _ = json.Marshal(map[string]string{"in_use_by": h})
			return nil, "", r
		}
	}
	c, lane := s.sessionWorker(m.Profile)
	if c == nil {
		return nil, "", fail(messages.CodeNoCapacity, "no worker has a free chromium lane")
	}
	if m.Profile != "" {
		s.profiles.acquire(queuedJob{id: slot, mode: messages.ModeMacro, created: s.deps.Clock()}, m.Profile)
		s.profiles.placed(slot, c.ID)
	}
	return c, lane, nil
}

// sessionPick is the scheduler's answer to SchedPickSession (Reply.json).
type sessionPick struct {
	WorkerID string `json:"worker_id"`
	// Lane is the profile's warm lane on WorkerID, the open's hint.
	Lane    string `json:"lane,omitempty"`
	InUseBy string `json:"in_use_by,omitempty"`
}

// sessionWorker picks the worker for a session: the one that ran its
// profile last when it has a free chromium lane now (no wait), with the
// lane it ran on as the hint, else any (no hint).
func (s *schedulerGrain) sessionWorker(p string) (*Candidate, string) {
	now := s.deps.Clock()
	if w := s.profiles.last[p]; p != "" && w.worker != "" {
		if c := s.workers[w.worker]; c != nil && s.rule.Eligible(c, messages.ModeMacro, now) {
			s.deps.Metrics.SchedAffinityHits.Inc()
			return c, w.lane
		}
	}
	return s.rule.PickWorker(s.cands, messages.ModeMacro, now, s.rng), ""
}

// profileHandover wakes the jobs the profile lock holds outside the
// queue (a stale activation stopping): they enqueue with the owner.
func (s *schedulerGrain) profileHandover(ctx actor.Context) {
	for id := range s.profiles.warm {
		Send(ctx, s.cl, id, KindJob, &messages.JobEnsure{})
	}
	for _, ws := range s.profiles.waiters {
		for _, w := range ws {
			Send(ctx, s.cl, w.id, KindJob, &messages.JobEnsure{})
		}
	}
	s.profiles = newProfileLocks()
}

// profileRelease frees a finished job's profile (lane: where it ran, as
// its SchedRemove says) and lets its next job go.
func (s *schedulerGrain) profileRelease(id, lane string) {
	next, ok := s.profiles.release(id, lane)
	if !ok {
		return
	}
	if p := s.profiles.of[next.id]; !s.profileEnqueue(next, p) {
		s.enqueue(next)
	}
}

// loadProfileHolders takes the locks of running jobs and open sessions
// with a profile (a fresh activation's rebuild, before the queued jobs
// load: the running ones hold their profile until they end).
func (s *schedulerGrain) loadProfileHolders() {
	rctx, cancel := context.WithTimeout(context.Background(), 2*sweepPageTimeout)
	defer cancel()
	s.loadSessionHolders(rctx)
	running := map[string]bool{}
	q := persistence.ListQuery{Status: persistence.StatusRunning, Limit: sweepPage, OldestFirst: true}
	for j, err := range persistence.AllJobs(rctx, s.deps.Jobs, q, persistence.PageTimeout(sweepPageTimeout), persistence.MaxPages(100)) {
		if err != nil {
			s.log.Warn("scheduler: running jobs read failed; profile locks kept as they are", slog.Any("err", err))
			return
		}
		p := messages.ProfileOf(j.Params)
		if p == "" {
			continue
		}
		running[j.ID] = true
		if s.profiles.acquire(queuedJob{id: j.ID, mode: j.Mode, created: j.CreatedAt, priority: j.Priority, tenant: j.Tenant}, p) && j.WorkerID != "" {
			s.profiles.placed(j.ID, j.WorkerID)
		}
	}
}

// loadSessionHolders takes the locks of the open sessions with a profile
// (their records; a session that closes deletes its record).
func (s *schedulerGrain) loadSessionHolders(ctx context.Context) {
	if s.deps.Sessions == nil {
		return
	}
	q := persistence.SessionListQuery{Limit: persistence.MaxSessionListLimit}
	for range 100 {
		pctx, cancel := context.WithTimeout(ctx, sweepPageTimeout)
		recs, next, err := s.deps.Sessions.List(pctx, q)
		cancel()
		if err != nil {
			s.log.Warn("scheduler: open sessions read failed; their profile locks are not taken", slog.Any("err", err))
			return
		}
		for _, r := range recs {
			if r.Profile == "" || messages.CheckProfileName(r.Profile) != nil {
				continue
			}
			slot := sessionSlot(r.ID)
			if s.profiles.acquire(queuedJob{id: slot, mode: messages.ModeMacro, created: r.CreatedAt}, r.Profile) && r.WorkerID != "" {
				s.profiles.placed(slot, r.WorkerID)
			}
		}
		if next == "" {
			return
		}
		q.Cursor = next
	}
}

// profileAudit fires periodically: drop the locks of holders that ended
// unheard.
type profileAudit struct{}

// profileAuditEvery is how often the holders are checked against the
// store. A holder's SchedRemove is a plain send: when it is lost (the
// scheduler moving at that moment) the lock would be held forever.
const profileAuditEvery = 30 * time.Second

// holdsHere: the job is waiting in this activation (queued, being placed,
// waiting for its warm worker, or held until its run_at).
func (s *schedulerGrain) holdsHere(id string) bool {
	_, queued := s.queue.byID[id]
	_, warm := s.profiles.warm[id]
	_, held := s.delayed.byID[id]
	return queued || warm || held || s.pending[id] != ""
}

// auditProfiles reads the running jobs (and the records of the sessions
// holding a profile) off the turn and frees the profile of a holder seen
// neither running (open) nor waiting here in two audits in a row (one
// could fall between its placement and its claim, or a session between
// its close and its grain's SchedRemove).
func (s *schedulerGrain) auditProfiles(ctx actor.Context) {
	if len(s.profiles.holder) == 0 || s.profiles.auditing {
		return
	}
	s.profiles.auditing = true
	var sessions []string // read on the turn; the lookup runs off it
	for _, h := range s.profiles.holder {
		if id, ok := slotSession(h); ok {
			sessions = append(sessions, id)
		}
	}
	offTurn(ctx, s.timers, 2*sweepPageTimeout, func(rctx context.Context) (map[string]string, error) {
		running, err := readRunning(rctx, s.deps.Jobs)
		if err != nil {
			return running, err
		}
		return running, openSessions(rctx, s.deps.Sessions, sessions, running)
	}, func(running map[string]string, err error) {
		s.profiles.auditing = false
		if err != nil {
			s.log.Warn("scheduler: profile audit read failed", slog.Any("err", err))
			return
		}
		s.auditHolders(running)
		s.place(ctx)
	})
}

// auditMisses is how many audits in a row must miss a holder before its
// lock is dropped: two for a job; four for a session, whose record is
// written only when the worker answered its open (a browser start, up
// to a minute), so an opening session may go unseen for that long.
func auditMisses(holder string) int {
	if isSessionSlot(holder) {
		return 4
	}
	return 2
}

// auditHolders is an audit's decision, given the holders seen alive
// (running jobs, open sessions' slot keys).
func (s *schedulerGrain) auditHolders(running map[string]string) {
	suspect := map[string]int{}
	for p, h := range s.profiles.holder {
		if _, ok := running[h]; ok || s.holdsHere(h) {
			continue
		}
		if n := s.profiles.suspect[h] + 1; n < auditMisses(h) {
			suspect[h] = n
			continue
		}
		s.log.Info("scheduler: profile lock of a job or session that ended unheard dropped", slog.String("profile", p), slog.String("holder", h))
		s.profileRelease(h, "")
	}
	s.profiles.suspect = suspect
}

// openSessions adds to alive the slot key of each of ids whose session
// record exists (the session is open). A failed read is an error: the
// audit must not drop a lock it could not check.
func openSessions(ctx context.Context, store persistence.SessionStore, ids []string, alive map[string]string) error {
	if store == nil {
		return nil
	}
	for _, id := range ids {
		gctx, cancel := context.WithTimeout(ctx, sweepPageTimeout)
		_, err := store.Get(gctx, id)
		cancel()
		switch {
		case err == nil:
			alive[sessionSlot(id)] = ""
		case !errors.Is(err, persistence.ErrNotFound):
			return fmt.Errorf("read session %s: %w", id, err)
		}
	}
	return nil
}
