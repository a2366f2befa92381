package api

import (
	_ "embed"
	"net/http"
)

//go:embed ui.html
var uiPage []byte

// ui serves the admin page: one static file that reads the JSON API. Its
// CSP (uiCSP) lets only the page's own script run, and it may not be framed:
// the page holds the API token the operator types in.
func (s *Server) ui(w http.ResponseWriter, _ *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", uiCSP)
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write(uiPage)
}
