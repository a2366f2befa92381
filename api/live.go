package api

import (
	"encoding/json"
	"net/http"

	"github.com/paprika-hub/paprika/messages"
	"github.com/paprika-hub/paprika/persistence"
)

// The live view: GET /jobs/{id}/live and GET /sessions/{id}/live are
// WebSockets carrying the lane's screencast through this hub, wherever
// the worker is linked (messages.LiveFrame and the viewer protocol of
// actors/live). Auth and the Origin check are the gateway's; every
// refusal is answered before the upgrade.

// LiveOpen is what a viewer asks for.
type LiveOpen struct {
	// Kind is messages.LiveKindJob or LiveKindSession; ID the job's or
	// session's id; WorkerID the worker running it (the API read it).
	Kind, ID, WorkerID string
	// Control lets the viewer send mouse and key events (sessions only).
	Control bool
}

// liveRoutes adds the live view's routes.
func (s *Server) liveRoutes() {
	live := func(pattern string, h http.HandlerFunc) {
		s.mux.Handle(pattern, s.limitRate(s.cdpAuth(h)))
	}
	live("GET /jobs/{id}/live", s.jobLive)
	live("GET /sessions/{id}/live", s.sessionLive)
	s.mux.Handle("GET /workers/{id}/live/{live}", s.workerAuth(s.workerLive))
}

// liveUpgradable answers what refuses any live request before it is
// looked up: a foreign Origin, a request that is no WebSocket.
func liveUpgradable(w http.ResponseWriter, r *http.Request) bool {
	if err := checkOrigin(r); err != nil {
		writeError(w, err)
		return false
	}
	if !websocketRequest(r) {
		writeError(w, Errorf(http.StatusBadRequest, "not_websocket", "%s is a WebSocket (the live view)", r.URL.Path))
		return false
	}
	return true
}

func wantsControl(r *http.Request) bool {
	v := r.URL.Query().Get("control")
	return v == "1" || v == "true"
}

func (s *Server) jobLive(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r)
	if !ok || !liveUpgradable(w, r) {
		return
	}
	if wantsControl(r) {
		writeError(w, Errorf(http.StatusBadRequest, "control_not_allowed",
			"a job's live view is view-only: control=1 is for sessions (GET /sessions/{id}/live?control=1)"))
		return
	}
	job, err := s.b.Job(r.Context(), id)
	if err != nil {
		writeError(w, notFound(err, "job", id))
		return
	}
	if messages.ModeDriver(job.Mode) != messages.DriverChromium {
		writeError(w, Errorf(http.StatusConflict, "no_live_view", "job %s is of mode %s, which runs no browser", id, job.Mode))
		return
	}
	if job.Status != persistence.StatusRunning || job.WorkerID == "" {
		writeError(w, Errorf(http.StatusConflict, "job_not_running", "job %s is %s: only a running job has a live view", id, job.Status))
		return
	}
	s.serveLive(w, r, LiveOpen{Kind: messages.LiveKindJob, ID: id, WorkerID: job.WorkerID})
}

func (s *Server) sessionLive(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r)
	if !ok || !liveUpgradable(w, r) {
		return
	}
	raw, err := s.b.Session(r.Context(), id)
	if err != nil {
		writeError(w, err)
		return
	}
	var sess struct {
		Status   string `json:"status"`
		Reason   string `json:"reason"`
		WorkerID string `json:"worker_id"`
	}
	_ = json.Unmarshal(raw, &sess)
	if sess.Status != persistence.SessionOpen || sess.WorkerID == "" {
		writeError(w, Errorf(http.StatusGone, "session_closed", "session %s is %s: %s", id, sess.Status, sess.Reason))
		return
	}
	s.serveLive(w, r, LiveOpen{Kind: messages.LiveKindSession, ID: id, WorkerID: sess.WorkerID, Control: wantsControl(r)})
}

func (s *Server) serveLive(w http.ResponseWriter, r *http.Request, o LiveOpen) {
	t, err := s.b.OpenLive(r.Context(), o)
	if err != nil {
		writeError(w, err)
		return
	}
	t.Serve(w, r)
}

// workerLive is a worker's dedicated screencast socket.
func (s *Server) workerLive(w http.ResponseWriter, r *http.Request, workerID string) {
	s.workerSocket(w, r, workerID, "live", s.b.AttachLive)
}
