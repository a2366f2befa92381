package hub

import (
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/paprika-hub/paprika/actors/supervise"
)

// supervisor is the parent of the hub's local actors — the links parent,
// the log router, the reconciler, the hub heartbeat — with the hub's
// one-for-one strategy (supervise.Strategy). Grains are children of
// protoactor's partition activator instead, with the same default policy.
type supervisor struct{}

type spawnChild struct {
	props *actor.Props
	name  string
}

func (s *supervisor) Receive(ctx actor.Context) {
	if m, ok := ctx.Message().(*spawnChild); ok {
		pid, err := ctx.SpawnNamed(m.props, m.name)
		if err != nil {
			ctx.Respond(err)
			return
		}
		ctx.Respond(pid)
	}
}

// spawner returns a function that spawns a named child of the supervisor.
func spawner(system *actor.ActorSystem, sup *actor.PID) func(*actor.Props, string) (*actor.PID, error) {
	return func(props *actor.Props, name string) (*actor.PID, error) {
		res, err := system.Root.RequestFuture(sup, &spawnChild{props: props, name: name}, 5*time.Second).Result()
		if err != nil {
			return nil, fmt.Errorf("spawn %s: %w", name, err)
		}
		switch v := res.(type) {
		case *actor.PID:
			return v, nil
		case error:
			return nil, fmt.Errorf("spawn %s: %w", name, v)
		}
		return nil, fmt.Errorf("spawn %s: unexpected reply %T", name, res)
	}
}

func newSupervisorProps() *actor.Props {
	return actor.PropsFromProducer(func() actor.Actor { return &supervisor{} }, actor.WithSupervisor(supervise.Strategy()))
}
