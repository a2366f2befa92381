package api

import (
	"net/http"

	"github.com/paprika-hub/paprika/ui"
)

// uiHandler serves the operator console (package ui): static files only,
// with its own CSP and no framing; the console reads the JSON API with
// the token the operator gives it.
var uiHandler = ui.Handler("/ui/")

func (s *Server) ui(w http.ResponseWriter, r *http.Request) { uiHandler.ServeHTTP(w, r) }

// queryTokenAuth is auth that also takes ?token= (GET routes only): an
// EventSource, an <img> or a WebSocket from the console cannot send an
// Authorization header.
func (s *Server) queryTokenAuth(next http.HandlerFunc) http.Handler {
	return s.limitRate(s.cdpAuth(next))
}
