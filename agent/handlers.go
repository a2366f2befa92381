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
	var why string
	lane := -1
	switch {
	case a.stopping:
		why = "worker is stopping"
	case a.localDrain || a.hubDrain:
		why = "worker is draining"
	default:
		var ok bool
		if lane, ok = a.lanes.acquire(f.Lane); !ok {
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
			Reason: ReasonRejected, Error: why,
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
	go rj.run()
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
func (a *Agent) finish(rj *runningJob) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.jobs[rj.key.id] == rj {
		delete(a.jobs, rj.key.id)
		a.jobsRun.Add(1)
	}
	a.lanes.release(rj.lane)
	if len(a.jobs) == 0 && (a.localDrain || a.hubDrain) && !a.stopping {
		a.lg().Info("drained: no job running")
	}
}
