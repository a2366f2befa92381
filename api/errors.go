package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/paprika-hub/paprika/persistence"
)

// Error is an API error with its HTTP status and snake_case code; a backend
// may return one to choose the answer.
type Error struct {
	Status  int
	Code    string
	Message string
	// Extra adds fields to the error object beside code and message (a
	// limit's key and value, a queue depth); nil adds none.
	Extra map[string]any
	// RetryAfter, when set, is sent as the Retry-After header in seconds
	// (a 503 without it gets retryAfterSeconds).
	RetryAfter string
}

func (e *Error) Error() string { return fmt.Sprintf("%s: %s", e.Code, e.Message) }

// Errorf builds an Error.
func Errorf(status int, code, format string, args ...any) *Error {
	return &Error{Status: status, Code: code, Message: fmt.Sprintf(format, args...)}
}

// retryAfterSeconds is what a 503 asks the client to wait.
const retryAfterSeconds = "2"

// writeError maps err to a status and the error body of API.md.
func writeError(w http.ResponseWriter, err error) {
	var e *Error
	switch {
	case errors.As(err, &e):
	case errors.Is(err, persistence.ErrNotFound):
		e = Errorf(http.StatusNotFound, "not_found", "%v", err)
	case errors.Is(err, persistence.ErrConflict):
		e = Errorf(http.StatusConflict, "conflict", "%v", err)
	case errors.Is(err, persistence.ErrUnavailable):
		e = Errorf(http.StatusServiceUnavailable, "unavailable", "%v", err)
	default:
		e = Errorf(http.StatusInternalServerError, "internal", "%v", err)
	}
	switch {
	case e.RetryAfter != "":
		w.Header().Set("Retry-After", e.RetryAfter)
	case e.Status == http.StatusServiceUnavailable:
		w.Header().Set("Retry-After", retryAfterSeconds)
	}
	body := map[string]any{}
	for k, v := range e.Extra {
		body[k] = v
	}
	body["code"], body["message"] = e.Code, e.Message // never overridden by Extra
	writeJSON(w, e.Status, map[string]any{"error": body})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	_ = enc.Encode(v)
}
