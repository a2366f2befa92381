package tunnel

import (
	"log/slog"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/paprika-hub/paprika/actors/supervise"
	"github.com/paprika-hub/paprika/messages"
	"github.com/paprika-hub/paprika/metrics"
)

// Ends is a hub's handle on its tunnel ends: the parent actor of every end
// on this hub, which closes them all with 1001 (the peer learns why) when
// the hub stops (Stop).
type Ends struct{ *supervise.Children }

// ErrStopping refuses a new end on a hub that is shutting down.
var ErrStopping = supervise.ErrStopping

// Start spawns the ends' parent with spawn (under the hub's supervisor).
func Start(system *actor.ActorSystem, log *slog.Logger, m *metrics.Metrics, spawn func(*actor.Props, string) (*actor.PID, error)) (*Ends, error) {
	c, err := supervise.StartChildren(system, supervise.ChildrenConfig{Name: "tunnels", Kind: "tunnel_ends", What: "tunnel end",
		Close: func() any { return &messages.TunnelClose{Code: messages.CloseGoingAway, Reason: ReasonShutdown} },
		Log:   log, Metrics: m}, spawn)
	if err != nil {
		return nil, err
	}
	return &Ends{Children: c}, nil
}

// Spawn starts an end on this hub (from outside the actors: an HTTP
// handler's goroutine waits at most a few seconds).
func (e *Ends) Spawn(cfg Config) (*actor.PID, error) {
	return e.Children.Spawn(Props(cfg), "t-"+cfg.TunnelID+"-"+string(cfg.Role))
}
