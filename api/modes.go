package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"

	"github.com/paprika-hub/paprika/messages"
	"github.com/paprika-hub/paprika/persistence"
)

// ModesBackend is what GET /modes and a custom mode's params check need of
// the hub: the modes the fleet's alive workers run now, each with the
// schemas its workers declare, from the fleet-wide registry (so any hub
// answers the same), cached briefly.
type ModesBackend interface {
	Modes(ctx context.Context) ([]persistence.ModeInfo, error)
}

// modes is GET /modes: {"modes": [...]}, by name.
func (s *Server) modes(w http.ResponseWriter, r *http.Request) {
	ms, err := s.b.Modes(r.Context())
	if err != nil {
		writeError(w, fmt.Errorf("read the fleet's modes: %w: %w", persistence.ErrUnavailable, err))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"modes": ms})
}

// validateModeParams checks a submission's mode and params: a built-in
// mode's params as ValidateParams always has; a custom mode (any
// messages.ValidModeName) against the JSON Schemas its alive workers
// declare, valid when any of them accepts the params. A custom mode no
// alive worker declares has nothing to check against: it is taken, and
// waits for such a worker (waiting_for).
func (s *Server) validateModeParams(ctx context.Context, mode string, params json.RawMessage) error {
	if mode == "" || slices.Contains(messages.Modes, mode) {
		return ValidateParams(mode, params)
	}
	if !messages.ValidModeName(mode) {
		return &Error{Status: http.StatusBadRequest, Code: "bad_mode",
			Message: fmt.Sprintf("mode %.80q is not a mode name: use %s, or 1-%d of a-z 0-9 . _ - starting with a letter or digit (a mode a worker declares)",
				mode, joinModes(), messages.MaxModeNameBytes),
			Extra: map[string]any{"field": "mode"}}
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(params, &obj); err != nil || obj == nil {
		return badParamsField("params", "params of mode %s must be a JSON object", mode)
	}
	ms, err := s.b.Modes(ctx)
	if err != nil {
		return fmt.Errorf("check params of mode %s: read the fleet's modes: %w: %w", mode, persistence.ErrUnavailable, err)
	}
	i := slices.IndexFunc(ms, func(m persistence.ModeInfo) bool { return m.Name == mode })
	if i < 0 {
		return nil
	}
	m := ms[i]
	schemas := m.Schemas
	if len(schemas) == 0 && len(m.Schema) > 0 && string(m.Schema) != "null" {
		schemas = []json.RawMessage{m.Schema}
	}
	if m.Unchecked || len(schemas) == 0 {
		return nil // a worker declares it without a schema: it takes any object
	}
	doc, err := decodeInstance(params)
	if err != nil {
		return badParamsField("params", "params of mode %s: %v", mode, err)
	}
	var first error
	for _, raw := range schemas {
		sch, err := s.schemas.get(raw)
		if err == nil {
			if err = sch.Validate(doc); err == nil {
				return nil
			}
		} else {
			err = fmt.Errorf("the schema its worker declared does not compile: %w", err)
		}
		if first == nil {
			first = err
		}
	}
	field, msg := schemaFault(first)
	return badParamsField(field, "%s of mode %s: %s", field, mode, msg)
}

func badParamsField(field, format string, args ...any) *Error {
	e := Errorf(http.StatusBadRequest, "bad_params", format, args...)
	e.Extra = map[string]any{"field": field}
	return e
}

func joinModes() string {
	out := ""
	for i, m := range messages.Modes {
		if i > 0 {
			out += ", "
		}
		out += m
	}
	return out
}
