package supervise

import (
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/paprika-hub/paprika/messages"
	"github.com/paprika-hub/paprika/metrics"
)

// Restart policy of every parent in the hub: one-for-one, up to 10 restarts
// in 10 s, then the child is stopped (a grain is re-activated by its next
// message; a WorkerConn's worker reconnects). Restarting rebuilds the actor
// from its store, so a panic costs the failing message, never owned state.
const (
	maxRestarts    = 10
	restartsWithin = 10 * time.Second
)

// Strategy is the supervisor strategy of the hub's parents.
func Strategy() actor.SupervisorStrategy {
	return actor.NewOneForOneStrategy(maxRestarts, restartsWithin, actor.DefaultDecider)
}

// Recover logs a panic with its stack, counts it, answers the
// caller with an error Reply (a panicking grain otherwise never replies and
// its caller waits out its whole timeout), then re-panics so the supervisor
// restarts the actor with fresh state.
func Recover(kind string, log *slog.Logger, m *metrics.Metrics) actor.ReceiverMiddleware {
	return func(next actor.ReceiverFunc) actor.ReceiverFunc {
		return func(c actor.ReceiverContext, env *actor.MessageEnvelope) {
			defer func() {
				r := recover()
				if r == nil {
					return
				}
				m.ActorPanics.WithLabelValues(kind).Inc()
				log.Error("actor panicked; restarting it", slog.String("kind", kind),
					slog.String("pid", c.Self().Id), slog.String("message", fmt.Sprintf("%T", env.Message)),
					slog.Any("panic", r), slog.String("stack", string(debug.Stack())))
				if env.Sender != nil {
					c.ActorSystem().Root.Send(env.Sender, &messages.Reply{Ok: false, Code: string(messages.CodeInternal), Message: fmt.Sprintf("%s actor failed: %v", kind, r)})
				}
				panic(r)
			}()
			next(c, env)
		}
	}
}

// CountRestarts subscribes to supervision events and counts them by reason.
func CountRestarts(system *actor.ActorSystem, m *metrics.Metrics) {
	system.EventStream.Subscribe(func(evt interface{}) {
		if e, ok := evt.(*actor.SupervisorEvent); ok {
			m.ActorSupervision.WithLabelValues(e.Directive.String()).Inc()
		}
	})
}

// InjectPanic makes the receiving actor panic: fault injection for the
// supervision tests and the chaos suite. Local only (not protobuf), so no
// other member — and no client — can send it.
type InjectPanic struct{}
