package api

import (
	"net/http"

	"github.com/paprika-hub/paprika/internal/credential"
)

// workerHandler serves a worker's request; workerID is the id its
// credential is bound to, "" when it presented the shared token (or none,
// on an open hub) and so proved no id.
type workerHandler func(w http.ResponseWriter, r *http.Request, workerID string)

// workerAuth admits a worker. With Options.WorkerSecret, only a worker's
// own credential (internal/credential) does, and the handler learns whose
// it is; the shared WorkerToken is then refused, since it would let its
// holder speak for any worker. Without a secret, the shared token (when
// set) admits any worker, as before.
func (s *Server) workerAuth(next workerHandler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, _ := bearerToken(r.Header.Get("Authorization"))
		switch {
		case s.opts.WorkerSecret != "":
			id, ok := credential.WorkerID(s.opts.WorkerSecret, token)
			if !ok {
				writeError(w, Errorf(http.StatusUnauthorized, "unauthorized",
					"a worker credential is required (paprika token worker --id <id>)"))
				return
			}
			next(w, r, id)
			return
		case s.opts.WorkerToken != "":
			if !hasToken(r, s.opts.WorkerToken) {
				writeError(w, Errorf(http.StatusUnauthorized, "unauthorized", "a valid bearer token is required"))
				return
			}
		}
		next(w, r, "")
	})
}
