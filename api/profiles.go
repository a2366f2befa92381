package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/paprika-hub/paprika/messages"
	"github.com/paprika-hub/paprika/persistence"
)

// Profiles (README "Profiles and affinity"): the state of profile <name>
// and its metadata are two objects in persistence.ProfilesFolder.

// ProfilesFolder is the asset-store "job id" under which profiles live.
const ProfilesFolder = persistence.ProfilesFolder

// maxProfilesListed bounds GET /profiles (one metadata read each).
const maxProfilesListed = 1000

// ProfilesBackend is what the profile routes need beyond the asset store:
// which job or session holds each profile now (the scheduler's lock).
type ProfilesBackend interface {
	// ProfilesInUse maps each profile in use to the job or session
	// holding it (a job's id, or a session's id).
	ProfilesInUse(ctx context.Context) (map[string]string, error)
}

// ProfileMeta is a profile's metadata: who wrote its state last.
type ProfileMeta = persistence.ProfileMeta

// ProfileInfo is one entry of GET /profiles.
type ProfileInfo struct {
	Name  string `json:"name"`
	Bytes int64  `json:"bytes"`
	ProfileMeta
	InUseBy string `json:"in_use_by,omitempty"`
}

func (s *Server) profileRoutes(api func(string, http.HandlerFunc)) {
	api("GET /profiles", s.listProfiles)
	api("DELETE /profiles/{name}", s.deleteProfile)
	// The worker running a job with a profile reads its state before the
	// page loads and writes it when the job succeeds, fenced by the attempt.
	s.mux.Handle("GET /profiles/{name}/state", s.workerAuth(s.getProfileState))
	s.mux.Handle("PUT /profiles/{name}/state", s.workerAuth(s.putProfileState))
}

func profileName(w http.ResponseWriter, r *http.Request) (string, bool) {
	name := r.PathValue("name")
	if err := messages.CheckProfileName(name); err != nil {
		writeError(w, Errorf(http.StatusBadRequest, "bad_profile", "%v", err))
		return "", false
	}
	return name, true
}

func (s *Server) readProfileMeta(ctx context.Context, name string) (ProfileMeta, error) {
	return persistence.ReadProfileMeta(ctx, s.b.Assets(), name)
}

func (s *Server) listProfiles(w http.ResponseWriter, r *http.Request) {
	saved, err := persistence.SavedProfiles(r.Context(), s.b.Assets(), maxProfilesListed, messages.ValidProfileName)
	if err != nil {
		writeError(w, err)
		return
	}
	inUse, err := s.b.ProfilesInUse(r.Context())
	if err != nil {
		writeError(w, err)
		return
	}
	out := make([]ProfileInfo, 0, len(saved))
	for _, sp := range saved {
		p := ProfileInfo{Name: sp.Name, Bytes: sp.Bytes, InUseBy: inUse[sp.Name]}
		if m, err := s.readProfileMeta(r.Context(), sp.Name); err == nil {
			p.ProfileMeta = m
		}
		out = append(out, p)
	}
	writeJSON(w, http.StatusOK, map[string]any{"profiles": out})
}

func (s *Server) deleteProfile(w http.ResponseWriter, r *http.Request) {
	name, ok := profileName(w, r)
	if !ok {
		return
	}
	inUse, err := s.b.ProfilesInUse(r.Context())
	if err != nil {
		writeError(w, err)
		return
	}
	if by := inUse[name]; by != "" {
		e := Errorf(http.StatusConflict, string(messages.CodeProfileInUse), "profile %s is in use by %s", name, by)
		e.Extra = map[string]any{"in_use_by": by}
		writeError(w, e)
		return
	}
	if _, _, err := s.b.Assets().Get(r.Context(), ProfilesFolder, name+persistence.ProfileStateSuffix); err != nil {
		writeError(w, notFound(err, "profile", name))
		return
	}
	for _, n := range []string{name + persistence.ProfileStateSuffix, name + persistence.ProfileMetaSuffix} {
		if err := s.b.Assets().Delete(r.Context(), ProfilesFolder, n); err != nil {
			writeError(w, err)
			return
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

// profileWriter is who uses a profile's state: the attempt of a job, or
// a session (Session set, Job empty).
type profileWriter struct {
	Worker  string
	Job     string
	Attempt int
	Session string
}

// profileHolder is the fence of a profile's state: the caller must be the
// worker running ?job= under ?attempt=, and that job must name the
// profile; or the worker of ?session=, which holds the profile. A stale
// attempt (the job moved on to another) gets 409 stale.
func (s *Server) profileHolder(w http.ResponseWriter, r *http.Request, workerID, name string) (profileWriter, bool) {
	q := r.URL.Query()
	if q.Has("session") {
		return s.sessionProfileHolder(w, r, workerID, name, q.Get("session"))
	}
	id := q.Get("job")
	attempt, err := strconv.Atoi(q.Get("attempt"))
	if !validID(id) || err != nil || attempt < 1 {
		writeError(w, Errorf(http.StatusBadRequest, "bad_request", "?job=<id>&attempt=<n> (or ?session=<id>) name the attempt using the profile"))
		return profileWriter{}, false
	}
	j, err := s.b.Job(r.Context(), id)
	if errors.Is(err, persistence.ErrNotFound) {
		writeError(w, Errorf(http.StatusForbidden, string(messages.CodeNotHolder), "worker %s does not hold job %s", workerID, id))
		return profileWriter{}, false
	}
	if err != nil {
		writeError(w, err)
		return profileWriter{}, false
	}
	if j.Status != persistence.StatusRunning || (workerID != "" && j.WorkerID != workerID) {
		writeError(w, Errorf(http.StatusForbidden, string(messages.CodeNotHolder), "worker %s does not hold job %s", workerID, id))
		return profileWriter{}, false
	}
	if j.Attempts != attempt {
		writeError(w, Errorf(http.StatusConflict, string(messages.CodeStale), "attempt %d of job %s is not current (%d is)", attempt, id, j.Attempts))
		return profileWriter{}, false
	}
	if messages.ProfileOf(j.Params) != name {
		writeError(w, Errorf(http.StatusForbidden, string(messages.CodeNotHolder), "job %s does not use profile %s", id, name))
		return profileWriter{}, false
	}
	return profileWriter{Worker: j.WorkerID, Job: j.ID, Attempt: j.Attempts}, true
}

// sessionProfileHolder is the session form of the fence: session id is on
// the calling worker and names the profile (403 otherwise), and the
// scheduler's lock of the profile is still the session's — it is from
// the session's pick until its close is confirmed, after the save — so a
// closed session's late read or write gets 409 stale.
func (s *Server) sessionProfileHolder(w http.ResponseWriter, r *http.Request, workerID, name, id string) (profileWriter, bool) {
	if !validID(id) {
		writeError(w, Errorf(http.StatusBadRequest, "bad_request", "?session=<id> names the session using the profile"))
		return profileWriter{}, false
	}
	notHolder := func() (profileWriter, bool) {
		writeError(w, Errorf(http.StatusForbidden, string(messages.CodeNotHolder), "worker %s does not hold session %s with profile %s", workerID, id, name))
		return profileWriter{}, false
	}
	raw, err := s.b.Session(r.Context(), id)
	var ae *Error
	if errors.As(err, &ae) && ae.Status == http.StatusNotFound {
		return notHolder()
	}
	if err != nil {
		writeError(w, err)
		return profileWriter{}, false
	}
	var sess struct {
		WorkerID string `json:"worker_id"`
		Profile  string `json:"profile"`
	}
	if err := json.Unmarshal(raw, &sess); err != nil {
		writeError(w, fmt.Errorf("session %s: %w", id, err))
		return profileWriter{}, false
	}
	if sess.Profile != name || (workerID != "" && sess.WorkerID != workerID) {
		return notHolder()
	}
	inUse, err := s.b.ProfilesInUse(r.Context())
	if err != nil {
		writeError(w, err)
		return profileWriter{}, false
	}
	if inUse[name] != id {
		writeError(w, Errorf(http.StatusConflict, string(messages.CodeStale), "session %s no longer holds profile %s", id, name))
		return profileWriter{}, false
	}
	return profileWriter{Worker: sess.WorkerID, Session: id}, true
}

func (s *Server) getProfileState(w http.ResponseWriter, r *http.Request, workerID string) {
	name, ok := profileName(w, r)
	if !ok {
		return
	}
	if _, ok := s.profileHolder(w, r, workerID, name); !ok {
		return
	}
	rc, info, err := s.b.Assets().Get(r.Context(), ProfilesFolder, name+persistence.ProfileStateSuffix)
	if err != nil {
		writeError(w, notFound(err, "profile", name)) // 404: a new profile starts empty
		return
	}
	defer rc.Close()
	w.Header().Set("Content-Type", "application/json")
	if info.Size >= 0 {
		w.Header().Set("Content-Length", strconv.FormatInt(info.Size, 10))
	}
	_, _ = io.Copy(w, io.LimitReader(rc, messages.MaxProfileStateBytes))
}

func (s *Server) putProfileState(w http.ResponseWriter, r *http.Request, workerID string) {
	name, ok := profileName(w, r)
	if !ok {
		return
	}
	j, ok := s.profileHolder(w, r, workerID, name)
	if !ok {
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, messages.MaxProfileStateBytes))
	if err != nil {
		writeError(w, Errorf(http.StatusRequestEntityTooLarge, "profile_too_large", "a profile state may have at most %d bytes", messages.MaxProfileStateBytes))
		return
	}
	if _, err := messages.ParseProfileState(body); err != nil {
		writeError(w, Errorf(http.StatusBadRequest, "bad_profile_state", "%v", err))
		return
	}
	if m, err := s.readProfileMeta(r.Context(), name); err == nil && j.Job != "" && m.Job == j.Job && m.Attempt > j.Attempt {
		// A later attempt of this job saved already: this one is stale.
		writeError(w, Errorf(http.StatusConflict, string(messages.CodeStale), "attempt %d of job %s saved profile %s already", m.Attempt, j.Job, name))
		return
	}
	if err := s.b.Assets().Put(r.Context(), ProfilesFolder, name+persistence.ProfileStateSuffix, "application/json", bytes.NewReader(body), int64(len(body))); err != nil {
		writeError(w, fmt.Errorf("store profile %s: %w", name, err))
		return
	}
	meta, _ := json.Marshal(ProfileMeta{UpdatedAt: time.Now().UTC(), Worker: j.Worker, Job: j.Job, Attempt: j.Attempt, Session: j.Session})
	if err := s.b.Assets().Put(r.Context(), ProfilesFolder, name+persistence.ProfileMetaSuffix, "application/json", bytes.NewReader(meta), int64(len(meta))); err != nil {
		writeError(w, fmt.Errorf("store profile %s metadata: %w", name, err))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// profileWait is a queued job's waiting_for when another job holds its
// profile ("" otherwise, or when the scheduler cannot say).
func (s *Server) profileWait(ctx context.Context, j persistence.Job) string {
	p := messages.ProfileOf(j.Params)
	if p == "" {
		return ""
	}
	inUse, err := s.b.ProfilesInUse(ctx)
	if err != nil || inUse[p] == "" || inUse[p] == j.ID {
		return ""
	}
	return "profile " + p + " in use"
}
