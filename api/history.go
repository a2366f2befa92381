package api

import (
	"encoding/json"
	"net/http"
)

// HistorySource is what GET /stats/history serves: the hub's last hour of
// fleet samples and each worker's recent heartbeats (hub/history.go). It
// is already JSON so the API need not know its shape.
type HistorySource interface {
	// StatsHistory encodes the samples; workers adds the heartbeat rings.
	StatsHistory(workers bool) (json.RawMessage, error)
}

// statsHistory answers GET /stats/history[?workers=0]: the console's
// charts and sparklines. Each hub samples the whole fleet, so any hub can
// answer; a hub that just started has a short history.
func (s *Server) statsHistory(w http.ResponseWriter, r *http.Request) {
	if s.opts.History == nil {
		writeError(w, Errorf(http.StatusNotFound, "no_history", "this hub keeps no stats history"))
		return
	}
	v := r.URL.Query().Get("workers")
	b, err := s.opts.History.StatsHistory(v != "0" && v != "false")
	if err != nil {
		writeError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(b)
}
