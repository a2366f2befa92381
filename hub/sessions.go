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
// error codes onto API errors.
func (h *Hub) sessionCall(id string, msg interface{}) (json.RawMessage, error) {
	timeout := h.cfg.Cluster.ForwardTimeout + h.deps.Timing.GrainTimeout
	r, err := actors.Call(h.member.Cluster, id, actors.KindSession, msg, timeout)
	if err != nil {
		return nil, fmt.Errorf("session %s: %w: %v", id, persistence.ErrUnavailable, err)
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
func (h *Hub) OpenSession(_ context.Context, labels map[string]string, idleTimeoutS int) (json.RawMessage, error) {
	return h.sessionCall("s-"+randomHex(10), &messages.SessionOpen{IdleTimeoutS: int32(idleTimeoutS), Labels: labels})
}

// Session implements api.Backend.
func (h *Hub) Session(_ context.Context, id string) (json.RawMessage, error) {
	return h.sessionCall(id, &messages.SessionGet{})
}

// SessionCommand implements api.Backend.
func (h *Hub) SessionCommand(_ context.Context, id string, command json.RawMessage) (json.RawMessage, error) {
	return h.sessionCall(id, &messages.SessionCommand{Command: command})
}

// CloseSession implements api.Backend.
func (h *Hub) CloseSession(_ context.Context, id string) (json.RawMessage, error) {
	return h.sessionCall(id, &messages.SessionClose{})
}
