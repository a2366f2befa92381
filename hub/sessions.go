package hub

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/paprika-hub/paprika/actors"
	"github.com/paprika-hub/paprika/api"
	"github.com/paprika-hub/paprika/messages"
	"github.com/paprika-hub/paprika/persistence"
)

// sessionCall asks the session grain, wherever it lives, and maps its
// error codes onto API errors. ctx is the request's: a client that goes
// away stops the wait (the grain still finishes what it was sent).
func (h *Hub) sessionCall(ctx context.Context, id string, msg interface{}) (json.RawMessage, error) {
	timeout := h.cfg.Cluster.ForwardTimeout + h.deps.Timing.GrainTimeout
	r, err := actors.CallContext(ctx, h.member.Cluster, id, actors.KindSession, msg, timeout)
	if err != nil {
		// Still a 503 to the client; errors.Is tells an ended ctx apart.
		return nil, fmt.Errorf("session %s: %w: %w", id, persistence.ErrUnavailable, err)
	}
	if r.Ok {
		return r.Json, nil
	}
	switch r.Code {
	case "not_found":
		return nil, api.Errorf(http.StatusNotFound, "not_found", "%s", r.Message)
	case "closed":
		return nil, api.Errorf(http.StatusGone, "session_closed", "%s", r.Message)
	case "no_capacity":
		return nil, api.Errorf(http.StatusServiceUnavailable, "no_capacity", "%s", r.Message)
	case "command_failed":
		return nil, api.Errorf(http.StatusUnprocessableEntity, "command_failed", "%s", r.Message)
	case "timeout":
		return nil, api.Errorf(http.StatusGatewayTimeout, "timeout", "%s", r.Message)
	case "unavailable":
		// The session store could not be read: whether the session exists
		// is unknown, so neither 404 nor 410.
		return nil, fmt.Errorf("%s: %w", r.Message, persistence.ErrUnavailable)
	}
	return nil, api.Errorf(http.StatusBadGateway, r.Code, "%s", r.Message)
}

// OpenSession implements api.Backend.
func (h *Hub) OpenSession(ctx context.Context, labels map[string]string, idleTimeoutS int) (json.RawMessage, error) {
	return h.sessionCall(ctx, "s-"+randomHex(10), &messages.SessionOpen{IdleTimeoutS: int32(idleTimeoutS), Labels: labels})
}

// Session implements api.Backend.
func (h *Hub) Session(ctx context.Context, id string) (json.RawMessage, error) {
	return h.sessionCall(ctx, id, &messages.SessionGet{})
}

// SessionCommand implements api.Backend.
func (h *Hub) SessionCommand(ctx context.Context, id string, command json.RawMessage) (json.RawMessage, error) {
	return h.sessionCall(ctx, id, &messages.SessionCommand{Command: command})
}

// CloseSession implements api.Backend.
func (h *Hub) CloseSession(ctx context.Context, id string) (json.RawMessage, error) {
	return h.sessionCall(ctx, id, &messages.SessionClose{})
}
