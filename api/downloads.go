package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/paprika-hub/paprika/messages"
	"github.com/paprika-hub/paprika/persistence"
)

// A session's downloads are kept in the asset store under the session id,
// as "downloads/<file>": the same store, bounds and serving rules as a
// job's assets, in a namespace no job id can reach (isSessionID). They
// outlive the session, so that a client may fetch them after closing it.

// downloadPrefix is the folder of a session's files in the asset store.
const downloadPrefix = persistence.AssetFolderDownloads + "/"

// isSessionID reports whether id is a session's (messages.SessionIDPrefix).
func isSessionID(id string) bool {
	return strings.HasPrefix(id, messages.SessionIDPrefix) && validID(id)
}

// sessionPathID reads {id} of a session route: 404 for an id no session
// could have.
func sessionPathID(w http.ResponseWriter, r *http.Request) (string, bool) {
	id := r.PathValue("id")
	if !isSessionID(id) {
		writeError(w, Errorf(http.StatusNotFound, "not_found", "no session %q", id))
		return "", false
	}
	return id, true
}

// downloadName reads {name} of a download route: one file name.
func downloadName(w http.ResponseWriter, r *http.Request) (string, bool) {
	name := r.PathValue("name")
	if err := persistence.CheckAssetName(name); err != nil {
		writeError(w, Errorf(http.StatusBadRequest, "bad_asset_name", "download name: %v", err))
		return "", false
	}
	return name, true
}

// sessionDownload is one entry of GET /sessions/{id}/downloads.
type sessionDownload struct {
	Name  string `json:"name"`
	Bytes int64  `json:"bytes"`
	URL   string `json:"url"` // the path that serves it, on any hub
}

// sessionDownloads answers GET /sessions/{id}/downloads: the session's
// files by name, {"downloads": [{"name", "bytes", "url"}]}.
func (s *Server) sessionDownloads(w http.ResponseWriter, r *http.Request) {
	id, ok := sessionPathID(w, r)
	if !ok {
		return
	}
	infos, err := s.b.Assets().List(r.Context(), id)
	if err != nil && !errors.Is(err, persistence.ErrNotFound) {
		writeError(w, fmt.Errorf("list downloads of session %s: %w", id, err))
		return
	}
	out := []sessionDownload{}
	for _, a := range infos {
		name, ok := strings.CutPrefix(a.Name, downloadPrefix)
		if !ok {
			continue
		}
		out = append(out, sessionDownload{Name: name, Bytes: a.Size,
			URL: "/sessions/" + url.PathEscape(id) + "/downloads/" + url.PathEscape(name)})
	}
	writeJSON(w, http.StatusOK, map[string]any{"downloads": out})
}

// sessionDownload serves GET /sessions/{id}/downloads/{name}, always as an
// attachment, with the asset headers (nosniff, CSP sandbox).
func (s *Server) sessionDownload(w http.ResponseWriter, r *http.Request) {
	id, ok := sessionPathID(w, r)
	if !ok {
		return
	}
	name, ok := downloadName(w, r)
	if !ok {
		return
	}
	rc, info, err := s.b.Assets().Get(r.Context(), id, downloadPrefix+name)
	if err != nil {
		writeError(w, notFound(err, "download", id+"/"+name))
		return
	}
	defer rc.Close()
	setAssetHeaders(w.Header(), info.ContentType, downloadPrefix+name)
	if info.Size >= 0 {
		w.Header().Set("Content-Length", strconv.FormatInt(info.Size, 10))
	}
	_, _ = ioCopy(w, rc)
}

// putSessionDownload stores a file a session's page downloaded: PUT
// /sessions/{id}/downloads/{name} from the worker. With per-worker
// credentials only the worker holding the open session may (the session
// grain says which, as the job store does for a job's assets); the count
// is bounded by limits.max_session_downloads and the bytes, together, by
// limits.max_asset_bytes.
func (s *Server) putSessionDownload(w http.ResponseWriter, r *http.Request, workerID string) {
	id, ok := sessionPathID(w, r)
	if !ok {
		return
	}
	name, ok := downloadName(w, r)
	if !ok {
		return
	}
	if r.ContentLength > maxAssetBytes {
		writeError(w, Errorf(http.StatusRequestEntityTooLarge, "asset_too_large", "a download may have at most %d bytes", maxAssetBytes))
		return
	}
	if workerID != "" {
		if err := s.sessionHolder(r.Context(), id, workerID); err != nil {
			writeError(w, err)
			return
		}
	}
	key := downloadPrefix + name
	infos, err := s.b.Assets().List(r.Context(), id)
	if err != nil && !errors.Is(err, persistence.ErrNotFound) {
		writeError(w, fmt.Errorf("list downloads of session %s: %w", id, err))
		return
	}
	var used int64
	n := 0
	for _, a := range infos {
		if a.Name != key {
			used += max(a.Size, 0)
			n++
		}
	}
	if n >= s.limits.MaxSessionDownloads {
		writeError(w, limitError(http.StatusRequestEntityTooLarge, "session_downloads_full", "limits.max_session_downloads",
			s.limits.MaxSessionDownloads, "session %s keeps %d downloads already", id, n))
		return
	}
	room := max(s.limits.MaxAssetBytes-used, 0)
	full := func() {
		e := Errorf(http.StatusRequestEntityTooLarge, "session_downloads_too_large",
			"the session's downloads may take %d bytes more (limits.max_asset_bytes is %d)", room, s.limits.MaxAssetBytes)
		e.Extra = map[string]any{"limit": "limits.max_asset_bytes", "max": s.limits.MaxAssetBytes, "room": room}
		writeError(w, e)
	}
	if r.ContentLength > room {
		full()
		return
	}
	body := http.MaxBytesReader(w, r.Body, min(maxAssetBytes, room))
	if err := s.b.Assets().Put(r.Context(), id, key, r.Header.Get("Content-Type"), body, r.ContentLength); err != nil {
		var tooBig *http.MaxBytesError
		switch {
		case errors.As(err, &tooBig) && room < maxAssetBytes:
			full()
		case errors.As(err, &tooBig):
			writeError(w, Errorf(http.StatusRequestEntityTooLarge, "asset_too_large", "a download may have at most %d bytes", maxAssetBytes))
		case errors.Is(err, persistence.ErrUnavailable):
			writeError(w, err)
		default:
			writeError(w, Errorf(http.StatusBadRequest, "bad_asset", "store download %s/%s: %v", id, name, err))
		}
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// sessionHolder asks the session grain whether workerID holds session id
// now: 403 not_holder if not (another worker, or a session no longer open),
// 404 for a session the hub does not know.
func (s *Server) sessionHolder(ctx context.Context, id, workerID string) error {
	raw, err := s.b.Session(ctx, id)
	if err != nil {
		return err
	}
	var sess struct {
		WorkerID string `json:"worker_id"`
		Status   string `json:"status"`
	}
	if err := json.Unmarshal(raw, &sess); err != nil {
		return fmt.Errorf("session %s: decode: %w", id, err)
	}
	if sess.Status != persistence.SessionOpen || sess.WorkerID != workerID {
		return Errorf(http.StatusForbidden, "not_holder", "worker %s does not hold session %s", workerID, id)
	}
	return nil
}
