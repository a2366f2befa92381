package agent

import (
	"context"
	"fmt"
	"time"

	"github.com/paprika-hub/paprika/messages"
)

// handleFrame acts on one frame from the hub. It runs on the link's reader
// goroutine and never blocks: jobs run on goroutines of their own.
func (a *Agent) handleFrame(l *link, f messages.Frame) {
	switch f.Type {
	case messages.TypeWelcome:
		a.onWelcome(f)
		l.handshake(f)
	case messages.TypeRelink:
		l.handshake(f)
	case messages.TypeError:
		if f.Code == CodeIDTaken {
			l.handshake(f)
			return
		}
		a.lg().Warn("hub reported an error", "code", f.Code, "message", f.Message)
	case messages.TypeAssignJob:
		a.handleAssign(l, f)
	case messages.TypeCancelJob:
		a.handleCancel(f)
	case messages.TypeJobAck:
		if !a.box.ack(f.JobID, f.Attempt) {
			a.lg().Debug("job_ack for no finished job", "job_id", f.JobID, "attempt", f.Attempt)
		}
	case messages.TypeDrain:
		a.mu.Lock()
		a.hubDrain = true
		running := len(a.jobs)
		a.mu.Unlock()
		a.lg().Info("hub asked to drain: no new jobs", "running", running)
	case messages.TypeSessionCommand:
		a.handleSessionCommand(l, f)
	case messages.TypeJobQuery:
		a.handleJobQuery(l, f)
	case messages.TypeTunnelOpen:
		a.handleTunnelOpen(f)
	case messages.TypeLiveOpen:
		a.handleLiveOpen(f)
	case messages.TypeLaneSkip:
		a.onLaneSkip(f.SkipLanes)
	case messages.TypeLeaveAck:
		l.leaveAcked()
	default:
		a.lg().Warn("unexpected frame from hub", "type", f.Type)
	}
}

// onWelcome applies the hub's welcome: its heartbeat interval, its accepted
// worker id, and a fresh drain state (a hub that still wants this worker
// drained says so again on the new link).
func (a *Agent) onWelcome(f messages.Frame) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if f.HeartbeatIntervalMS > 0 {
		a.hbInterval = time.Duration(f.HeartbeatIntervalMS) * time.Millisecond
	}
	a.hubDrain = false
	if f.WorkerID != "" && f.WorkerID != a.id {
		a.lg().Warn("hub accepted the worker under another id; adopting it", "hub_worker_id", f.WorkerID)
		a.setIDLocked(f.WorkerID)
	}
}

// onLaneSkip takes the hub's set of skipped lanes (validated by
// DecodeFrame) for the lane pool's choice.
func (a *Agent) onLaneSkip(skips []messages.LaneSkip) {
	a.mu.Lock()
	changed, ignored := a.lanes.setSkips(skips)
	lanes, size := a.lanes.skipped(), a.lanes.size()
	a.mu.Unlock()
	if ignored > 0 {
		a.lg().Warn("lane_skip names lanes this worker does not have; those ignored", "ignored", ignored, "lanes", size)
	}
	if changed {
		a.lg().Info("hub skips lanes for their health; new work goes to the others first", "skipped", lanes)
	}
}

// clearLaneSkips forgets the hub's skipped lanes: each link starts with
// none, and its hub says which it skips (README, "Health-aware placement").
func (a *Agent) clearLaneSkips() {
	a.mu.Lock()
	changed, _ := a.lanes.setSkips(nil)
	a.mu.Unlock()
	if changed {
		a.lg().Debug("new link: no lane skipped until its hub says so")
	}
}

// handleAssign starts a job on a free lane, or answers job_failed rejected.
// The lane choice and the job's registration happen under one lock, so no
// more than Lanes jobs ever run.
func (a *Agent) handleAssign(l *link, f messages.Frame) {
	key := jobKey{id: f.JobID, attempt: f.Attempt}
	a.mu.Lock()
	if _, running := a.jobs[f.JobID]; running || a.box.has(key) {
		// A repeat of an assignment this worker already runs or ran: its
		// frames are kept and re-sent, so running it again would only run
		// the job twice.
		a.mu.Unlock()
		a.lg().Warn("duplicate assign_job ignored", "job_id", f.JobID, "attempt", f.Attempt)
		return
	}
	if a.ran.has(key) {
		// The attempt ran here and ended (its result maybe acknowledged and
		// forgotten by the outbox): a copy of its assignment that a hub
		// sent late (one frozen past the member timeout, say) must not run
		// it a second time.
		a.mu.Unlock()
		a.lg().Warn("assign_job for an attempt this worker already ran; ignored", "job_id", f.JobID, "attempt", f.Attempt)
		return
	}
	if a.refused.has(key) {
		// This worker told the hub it did not hold the attempt, and the hub
		// gave the job to another: this is a late copy of the assignment.
		a.mu.Unlock()
		a.lg().Warn("assign_job for an attempt already disowned; ignored", "job_id", f.JobID, "attempt", f.Attempt)
		return
	}
	var why, skipped string
	lane := -1
	switch {
	case a.stopping:
		why = "worker is stopping"
	case a.localDrain || a.hubDrain:
		why = "worker is draining"
	default:
		var ok bool
		if lane, skipped, ok = a.lanes.acquire(f.Lane, messages.LaneJob, a.laneStater()); !ok {
			why = fmt.Sprintf("no free lane (%d of %d busy)", a.lanes.inUse(), a.lanes.size())
		}
	}
	if why != "" {
		a.mu.Unlock()
		a.lg().Info("job rejected", "job_id", f.JobID, "attempt", f.Attempt, "why", why)
		// Not kept for re-sending: a rejection is an answer to this link's
		// assignment, and the hub's assign grace covers it being lost.
		l.send(messages.Frame{
			Type: messages.TypeJobFailed, JobID: f.JobID, Attempt: f.Attempt,
			Reason: ReasonRejected, Error: messages.TruncateError(why),
		})
		return
	}
	ctx, cancel := context.WithCancelCause(a.jobsCtx)
	rj := &runningJob{
		a:       a,
		key:     key,
		lane:    lane,
		laneURL: a.lanes.urls[lane],
		ctx:     ctx,
		cancel:  cancel,
		execLog: a.execLog,
		job: Job{
			ID: f.JobID, Attempt: f.Attempt, Mode: f.Mode, Params: f.Params,
		},
	}
	if f.Deadline > 0 {
		rj.job.Deadline = time.UnixMilli(f.Deadline)
	}
	a.jobs[f.JobID] = rj
	a.jobWG.Add(1) // under mu, ordered before stop's Wait by the stopping flag
	a.mu.Unlock()
	if skipped != "" {
		a.lg().Info("no healthy lane free; job runs on a lane the hub skips", "job_id", f.JobID, "lane", lane, "skipped", skipped)
	}
	go rj.run()
}

// handleJobQuery answers whether this worker holds an assignment. The
// answer is final: an attempt it does not hold is refused from now on, so a
// copy of its assign_job still on the way can never run it after the hub
// gave the job to another worker. It runs under mu, like handleAssign, so
// the two cannot interleave.
func (a *Agent) handleJobQuery(l *link, f messages.Frame) {
	key := jobKey{id: f.JobID, attempt: f.Attempt}
	state := messages.JobStateUnknown
	a.mu.Lock()
	// A job is in jobs from assign until its lane is free, and its frames
	// are kept from job_started (queued before the lane is freed) until
	// job_ack: together they cover its whole life here.
	if rj := a.jobs[f.JobID]; (rj != nil && rj.key == key) || a.box.has(key) {
		state = messages.JobStateRunning
	} else {
		a.refused.add(key)
	}
	a.mu.Unlock()
	a.lg().Info("hub asked about an assignment", "job_id", f.JobID, "attempt", f.Attempt, "state", state)
	l.send(messages.Frame{Type: messages.TypeJobStatus, JobID: f.JobID, Attempt: f.Attempt, State: state,
		UptimeMS: max(time.Since(a.bootTime).Milliseconds(), 1)})
}

// attemptSet remembers the newest keep attempts of a kind (disowned, or
// run here): a late assign_job comes seconds after the first, not hours,
// so a bounded memory is enough. keep 0 means refusedKeep.
type attemptSet struct {
	keep  int
	keys  map[jobKey]struct{}
	order []jobKey
}

// refusedKeep bounds the disowned attempts remembered; ranKeep the attempts
// run here (a worker runs many more of those: 16,384 is minutes of short
// jobs on a large worker, ~2 MB).
const (
	refusedKeep = 4096
	ranKeep     = 16384
)

func (r *attemptSet) has(k jobKey) bool {
	_, ok := r.keys[k]
	return ok
}

func (r *attemptSet) add(k jobKey) {
	if r.keys == nil {
		r.keys = make(map[jobKey]struct{})
	}
	if _, ok := r.keys[k]; ok {
		return
	}
	r.keys[k] = struct{}{}
	r.order = append(r.order, k)
	keep := r.keep
	if keep == 0 {
		keep = refusedKeep
	}
	if len(r.order) > keep {
		delete(r.keys, r.order[0])
		r.order = r.order[1:]
	}
}

// handleCancel cancels a running job; it reports job_failed canceled.
func (a *Agent) handleCancel(f messages.Frame) {
	a.mu.Lock()
	rj := a.jobs[f.JobID]
	a.mu.Unlock()
	if rj == nil || (f.Attempt != 0 && f.Attempt != rj.key.attempt) {
		a.lg().Debug("cancel_job for no running job", "job_id", f.JobID, "attempt", f.Attempt)
		return
	}
	a.lg().Info("job cancel requested by hub", "job_id", f.JobID, "attempt", rj.key.attempt)
	rj.cancel(errCanceledByHub)
}

// finish unregisters a job and frees its lane. It runs before the job's final
// frame is queued, so the hub, reacting to that frame with a new assignment,
// always finds the lane free.
// An abandoned job's lane (hold non-nil) stays taken until hold is closed.
func (a *Agent) finish(rj *runningJob, hold <-chan struct{}) {
	if hold != nil {
		a.holdLane(rj, hold)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.jobs[rj.key.id] == rj {
		delete(a.jobs, rj.key.id)
		a.ran.add(rj.key) // before its final frame is kept: no gap for a copy of the assignment
		a.jobsRun.Add(1)
	}
	if hold == nil {
		a.lanes.release(rj.lane)
	}
	if len(a.jobs) == 0 && (a.localDrain || a.hubDrain) && !a.stopping {
		a.lg().Info("drained: no job running")
	}
}
