package api

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/paprika-hub/paprika/messages"
	"github.com/paprika-hub/paprika/persistence"
)

// Session limits.
const (
	defaultIdleTimeoutS = 300
	maxIdleTimeoutS     = 24 * 3600
)

func (s *Server) openSession(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Labels       map[string]string `json:"labels"`
		IdleTimeoutS *int              `json:"idle_timeout_s"`
		messages.BrowserOptions
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10))
	dec.DisallowUnknownFields()
	// An empty body (io.EOF) opens a session with the defaults.
	if err := decodeBody(dec, &body); err != nil && !errors.Is(err, io.EOF) {
		writeError(w, Errorf(http.StatusBadRequest, "bad_json", "body must be {\"labels\": {...}, \"idle_timeout_s\": N, browser options...}: %v", err))
		return
	}
	if err := s.limits.checkLabels(body.Labels); err != nil {
		writeError(w, err)
		return
	}
	idle := defaultIdleTimeoutS
	if body.IdleTimeoutS != nil {
		idle = *body.IdleTimeoutS
	}
	if idle < 1 || idle > maxIdleTimeoutS {
		writeError(w, Errorf(http.StatusBadRequest, "bad_idle_timeout", "idle_timeout_s %d is out of range 1..%d", idle, maxIdleTimeoutS))
		return
	}
	if err := checkOptions(body.BrowserOptions, ""); err != nil {
		writeError(w, err)
		return
	}
	sess, err := s.b.OpenSession(r.Context(), body.Labels, idle, body.BrowserOptions)
	if err != nil {
		writeError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_, _ = w.Write(s.withCDPURL(r, sess))
}

// listSessions is GET /sessions: a page of the open sessions in id order,
// ?limit (1..1000, default 50) and ?cursor as GET /jobs takes them.
func (s *Server) listSessions(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	lq := persistence.SessionListQuery{Cursor: q.Get("cursor"), Limit: persistence.DefaultSessionListLimit}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > persistence.MaxSessionListLimit {
			writeError(w, Errorf(http.StatusBadRequest, "bad_limit", "limit %q is not an integer in 1..%d", v, persistence.MaxSessionListLimit))
			return
		}
		lq.Limit = n
	}
	// The cursor is the last id of a page; anything else was not handed
	// out by a hub.
	if lq.Cursor != "" && !validID(lq.Cursor) {
		writeError(w, Errorf(http.StatusBadRequest, "bad_cursor", "cursor %q is not one this hub handed out", lq.Cursor))
		return
	}
	sessions, next, err := s.b.ListSessions(r.Context(), lq)
	if err != nil {
		writeError(w, err)
		return
	}
	if sessions == nil {
		sessions = []json.RawMessage{}
	}
	for i := range sessions { // each as GET /sessions/{id} answers it
		sessions[i] = s.withCDPURL(r, sessions[i])
	}
	writeJSON(w, http.StatusOK, map[string]any{"sessions": sessions, "next_cursor": next})
}

func (s *Server) getSession(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	sess, err := s.b.Session(r.Context(), id)
	if err != nil {
		writeError(w, err)
		return
	}
	writeRaw(w, http.StatusOK, s.withCDPURL(r, sess))
}

func (s *Server) closeSession(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	sess, err := s.b.CloseSession(r.Context(), id)
	if err != nil {
		writeError(w, err)
		return
	}
	writeRaw(w, http.StatusOK, sess)
}

func (s *Server) sessionCommand(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	var cmd map[string]any
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err := decodeBody(dec, &cmd); err != nil {
		writeError(w, Errorf(http.StatusBadRequest, "bad_json", "body must be a command {\"op\": ...}: %v", err))
		return
	}
	op, _ := cmd["op"].(string)
	if !messages.IsStepOp(op) {
		writeError(w, Errorf(http.StatusBadRequest, "bad_op", "op %q is not one of %s", op, strings.Join(messages.StepOps, ", ")))
		return
	}
	raw, _ := json.Marshal(cmd)
	res, err := s.b.SessionCommand(r.Context(), id, raw)
	if err != nil {
		writeError(w, err)
		return
	}
	if len(res) == 0 {
		res = json.RawMessage("null")
	}
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "result": res})
}

func writeRaw(w http.ResponseWriter, status int, b []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
