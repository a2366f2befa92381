package hub

import (
	"context"
	"fmt"
	"strings"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/paprika-hub/paprika/actors/grains"
	"github.com/paprika-hub/paprika/actors/supervise"
)

// InjectPanic makes one actor of this hub panic, to prove supervision: kind
// is worker, job, scheduler, session, worker_conn, log_stream or
// reconciler; id names the worker (worker, worker_conn), job (job,
// log_stream) or session where the kind needs one. supervise.InjectPanic is
// not protobuf, so a grain or link that another hub holds never gets it.
// Used by tests and, over HTTP, by the chaos suite: api routes POST
// /debug/panic?kind=&id= here when debug.fault_injection is set (never in
// production).
func (h *Hub) InjectPanic(ctx context.Context, kind, id string) error {
	root := h.member.System.Root
	var pid *actor.PID
	switch kind {
	case grains.KindWorker, grains.KindJob, grains.KindSession:
		pid = h.member.Cluster.Get(id, kind)
	case grains.KindScheduler:
		pid = h.member.Cluster.Get(grains.SchedulerID, kind)
	case "worker_conn":
		w, err := h.stores.Workers.Get(ctx, id)
		if err != nil {
			return fmt.Errorf("inject panic: worker %s: %w", id, err)
		}
		addr, pidID, ok := strings.Cut(w.Link, "/")
		if !ok {
			return fmt.Errorf("inject panic: worker %s has no link", id)
		}
		pid = actor.NewPID(addr, pidID)
	case "log_stream":
		var err error
		if pid, err = h.logs.Stream(id); err != nil {
			return fmt.Errorf("inject panic: %w", err)
		}
	case "reconciler":
		pid = h.reconciler
	case "hub_beat":
		pid = h.beat
	case "log_flusher":
		h.logs.InjectFlusherPanic()
		return nil
	default:
		return fmt.Errorf("inject panic: unknown actor kind %q", kind)
	}
	if pid == nil {
		return fmt.Errorf("inject panic: no %s actor %q", kind, id)
	}
	root.Send(pid, &supervise.InjectPanic{})
	return nil
}
