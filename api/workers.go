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

func (s *Server) patchWorker(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	var body struct {
		Status string `json:"status"`
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096))
	dec.DisallowUnknownFields()
	if err := decodeBody(dec, &body); err != nil {
		writeError(w, Errorf(http.StatusBadRequest, "bad_json", "body must be {\"status\": ...}: %v", err))
		return
	}
	if !persistence.ValidWorkerStatus(body.Status) {
		writeError(w, Errorf(http.StatusBadRequest, "bad_status", "status %q is not one of %s", body.Status, strings.Join(persistence.WorkerStatuses, ", ")))
		return
	}
	info, err := s.b.SetWorkerStatus(r.Context(), id, body.Status)
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
