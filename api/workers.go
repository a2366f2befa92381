package api

import (
	"encoding/json"
	"io"
	"net/http"
	"sort"
	"strings"

	"github.com/paprika-hub/paprika/persistence"
)

var ioCopy = io.Copy

func (s *Server) workers(w http.ResponseWriter, r *http.Request) {
	ws, err := s.b.Workers(r.Context())
	if err != nil {
		writeError(w, err)
		return
	}
	sort.Slice(ws, func(i, j int) bool { return ws[i].ID < ws[j].ID })
	out := make([]any, 0, len(ws))
	for _, w := range ws {
		out = append(out, w)
	}
	writeJSON(w, http.StatusOK, map[string]any{"workers": out})
}

// WorkerPatch is the body of PATCH /workers/{id}: what an operator may
// change of a worker. Absent fields stay as they are.
type WorkerPatch struct {
	// Status is active, drain or standby; "" keeps it. With
	// auth.worker_approval, active approves a pending worker and pending
	// revokes an approval.
	Status string `json:"status,omitempty"`
	// MaxConcurrent caps the worker's slots (0 removes the cap); never
	// above what the worker reports. nil keeps it.
	MaxConcurrent *int `json:"max_concurrent,omitempty"`
}

func (s *Server) patchWorker(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	var body WorkerPatch
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096))
	dec.DisallowUnknownFields()
	if err := decodeBody(dec, &body); err != nil {
		writeError(w, Errorf(http.StatusBadRequest, "bad_json", "body must be {\"status\": ..., \"max_concurrent\": ...}: %v", err))
		return
	}
	if body.Status == "" && body.MaxConcurrent == nil {
		writeError(w, Errorf(http.StatusBadRequest, "bad_json", "body must set status, max_concurrent or both"))
		return
	}
	if body.Status != "" && !persistence.ValidWorkerStatus(body.Status) {
		writeError(w, Errorf(http.StatusBadRequest, "bad_status", "status %q is not one of %s", body.Status, strings.Join(persistence.WorkerStatuses, ", ")))
		return
	}
	if body.MaxConcurrent != nil && *body.MaxConcurrent < 0 {
		writeError(w, Errorf(http.StatusBadRequest, "out_of_range", "max_concurrent %d: must be 0 (no cap) or more", *body.MaxConcurrent))
		return
	}
	info, err := s.b.PatchWorker(r.Context(), id, body)
	if err != nil {
		writeError(w, notFound(err, "worker", id))
		return
	}
	writeJSON(w, http.StatusOK, info)
}

func (s *Server) hubs(w http.ResponseWriter, r *http.Request) {
	hs, err := s.b.Hubs(r.Context())
	if err != nil {
		writeError(w, err)
		return
	}
	sort.Slice(hs, func(i, j int) bool { return hs[i].ID < hs[j].ID })
	writeJSON(w, http.StatusOK, map[string]any{"hubs": hs})
}
