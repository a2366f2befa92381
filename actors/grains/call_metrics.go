package grains

import (
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/extensions"

	"github.com/paprika-hub/paprika/metrics"
)

// metricsExtensionID finds a hub's Metrics from its actor system: grain
// calls (Ask, Call) take a cluster or an actor context, never the Deps, and
// one process may run several hubs, each counting its own calls.
var metricsExtensionID = extensions.NextExtensionID()

type metricsExtension struct{ m *metrics.Metrics }

func (*metricsExtension) ExtensionID() extensions.ExtensionID { return metricsExtensionID }

// RegisterMetrics makes system's grain calls observe into m
// (paprika_grain_request_duration_seconds). Call it before the actors
// start; a system without it observes nothing.
func RegisterMetrics(system *actor.ActorSystem, m *metrics.Metrics) {
	system.Extensions.Register(&metricsExtension{m: m})
}

// observeCall records one grain request's round trip.
func observeCall(system *actor.ActorSystem, kind string, began time.Time) {
	if system == nil || system.Extensions == nil {
		return
	}
	if e, ok := system.Extensions.Get(metricsExtensionID).(*metricsExtension); ok && e.m != nil {
		e.m.GrainRequest.WithLabelValues(kind).Observe(time.Since(began).Seconds())
	}
}

// Ops of paprika_grain_messages_total, and where a message went.
const (
	opSend    = "send"
	opRequest = "request"
	opLookup  = "lookup"
	toLocal   = "local"
	toRemote  = "remote"
	// kindLink stands for a worker's link (a WorkerConn, on the hub that
	// holds its socket) among the grain kinds.
	kindLink = "link"
)

// countMessage counts one message of op to kind's grain at pid.
func countMessage(system *actor.ActorSystem, kind, op string, pid *actor.PID) {
	if system == nil || system.Extensions == nil || pid == nil {
		return
	}
	e, ok := system.Extensions.Get(metricsExtensionID).(*metricsExtension)
	if !ok || e.m == nil {
		return
	}
	to := toRemote
	if pid.Address == system.Address() {
		to = toLocal
	}
	e.m.GrainMessages.WithLabelValues(kind, op, to).Inc()
}
