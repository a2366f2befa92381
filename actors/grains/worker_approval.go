package grains

import (
	"context"
	"log/slog"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/paprika-hub/paprika/internal/deadline"
	"github.com/paprika-hub/paprika/messages"
)

// approvalState is what a worker grain knows of its worker's approval
// (auth.worker_approval; Deps.Approvals set).
type approvalState uint8

const (
	// approvalUnknown: not read yet, or the read failed. The worker gets no
	// work meanwhile (shown pending): the store is asked again at the next
	// hello or heartbeat.
	approvalUnknown approvalState = iota
	approvalGranted
	approvalWithheld
)

// status is the worker's status as placement, the registry and the API see
// it: pending while approval is on and the worker not approved, else the
// operator's status (info.Status: active, drain, standby).
func (g *workerGrain) status() string {
	if g.deps.Approvals != nil && g.approval != approvalGranted {
		return WorkerPending
	}
	if g.info.Status == "" || g.info.Status == WorkerPending {
		return WorkerActive // pending is the approval's, never the operator's status
	}
	return g.info.Status
}

// readApproval asks the approval store, off the actor's turn, whether the
// worker is approved; the grain keeps linking and reporting meanwhile.
// Each hello asks again, so an activation never runs on a stale copy of
// another's decision. An answer is dropped when the operator decided
// since it was asked (that decision is newer), and a failed read changes
// nothing: a worker not known to be approved stays pending.
func (g *workerGrain) readApproval(ctx actor.Context) {
	if g.deps.Approvals == nil || g.approvalReading {
		return
	}
	g.approvalReading = true
	gen, id, store := g.approvalGen, g.id, g.deps.Approvals
	offTurn(ctx, g.timers, g.deps.storeTimeout(),
		func(rctx context.Context) (bool, error) { return store.Approved(rctx, id) },
		func(approved bool, err error) {
			g.approvalReading = false
			if gen != g.approvalGen {
				return
			}
			if err != nil {
				g.log.Warn("approval store read failed; the worker gets no work until a later read", slog.Any("err", err))
				return
			}
			was := g.status()
			g.approval = approvalWithheld
			if approved {
				g.approval = approvalGranted
			}
			// A grain woken for an id no worker linked under yet (an
			// operator's request) records nothing.
			if now := g.status(); now != was && !g.info.LastSeen.IsZero() {
				g.log.Info("worker approval read", slog.String("status", now))
				g.publish(ctx)
			}
		})
}

// decideApproval records an operator's approval (PATCH status active) or
// revocation (PATCH status pending) in the approval store before it takes
// effect, so that it outlives this activation, the hub and the worker's
// registry record. It is written on the turn, bounded by the store
// timeout like the registry write that follows it: a decision must be
// ordered with the operator's next one, and they are rare. nil when done.
func (g *workerGrain) decideApproval(approve bool) *messages.Reply {
	rctx := deadline.Within(g.deps.storeTimeout())
	var err error
	if approve {
		err = g.deps.Approvals.Approve(rctx, g.id)
	} else {
		err = g.deps.Approvals.Revoke(rctx, g.id)
	}
	if err != nil {
		g.log.Warn("approval store write failed; nothing changed", slog.Bool("approve", approve), slog.Any("err", err))
		return fail(messages.CodeUnavailable, "approval store: %v", err)
	}
	g.approvalGen++ // a read started before this decision is stale
	g.approval = approvalWithheld
	g.info.Status = WorkerActive // what an approval (again) gives
	if approve {
		g.approval = approvalGranted
		g.log.Info("worker approved")
	} else {
		g.log.Warn("worker approval revoked: no new work")
	}
	return nil
}

// approvedNow settles an unknown approval on the turn (bounded by the
// store timeout) for an operator's request that depends on it: drain or
// standby apply to approved workers only.
func (g *workerGrain) approvedNow() (bool, error) {
	if g.approval != approvalUnknown {
		return g.approval == approvalGranted, nil
	}
	rctx := deadline.Within(g.deps.storeTimeout())
	approved, err := g.deps.Approvals.Approved(rctx, g.id)
	if err != nil {
		return false, err
	}
	g.approvalGen++
	g.approval = approvalWithheld
	if approved {
		g.approval = approvalGranted
	}
	return approved, nil
}

// setApprovalStatus applies a PATCH status with approval on: active
// approves, pending revokes, drain and standby need an approved worker.
// nil when the status may be applied as the operator's.
func (g *workerGrain) setApprovalStatus(status string) *messages.Reply {
	switch status {
	case WorkerActive:
		if g.approval != approvalGranted {
			return g.decideApproval(true)
		}
	case WorkerPending:
		return g.decideApproval(false)
	default:
		approved, err := g.approvedNow()
		if err != nil {
			return fail(messages.CodeUnavailable, "approval store: %v", err)
		}
		if !approved {
			return fail(messages.CodeNotApproved, "worker %s awaits approval: approve it with status %q first", g.id, WorkerActive)
		}
	}
	return nil
}
