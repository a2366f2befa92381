package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// APIError is an error answer of the hub: a 4xx or 5xx status with
// {"error": {"code": "snake_case", "message": "..."}}. Client methods return
// it wrapped with the request; use errors.As (or AsAPIError) to branch on
// Status or Code.
type APIError struct {
	// Status is the HTTP status code.
	Status int
	// Code is the hub's snake_case error code; "" when the body was not the
	// hub's error JSON (e.g. a proxy's HTML page).
	Code string
	// Message is the hub's message, or the start of the body, or the status
	// text.
	Message string
}

// Error renders "404 not_found: no job j1".
func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d", e.Status)
	if e.Code != "" {
		b.WriteString(" " + e.Code)
	}
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	return b.String()
}

// AsAPIError returns the *APIError inside err, if there is one.
func AsAPIError(err error) (*APIError, bool) {
	return errors.AsType[*APIError](err)
}

// IsStatus reports whether err carries an APIError with that HTTP status.
func IsStatus(err error, status int) bool {
	e, ok := AsAPIError(err)
	return ok && e.Status == status
}

// maxErrorBody bounds how much of an error body is read.
const maxErrorBody = 64 << 10

// decodeAPIError reads an error answer; it does not close the body.
func decodeAPIError(resp *http.Response) *APIError {
	e := &APIError{Status: resp.StatusCode}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	var wire struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &wire) == nil && (wire.Error.Code != "" || wire.Error.Message != "") {
		e.Code, e.Message = wire.Error.Code, wire.Error.Message
		return e
	}
	msg := strings.TrimSpace(string(body))
	if len(msg) > 200 || strings.HasPrefix(msg, "<") {
		msg = "" // an HTML error page says nothing useful on one line
	}
	if msg == "" {
		msg = strings.ToLower(http.StatusText(resp.StatusCode))
	}
	e.Message = msg
	return e
}
