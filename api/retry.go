package api

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/paprika-hub/paprika/persistence"
)

// MaxDelay bounds how far ahead a job may be delayed (run_at, delay_s).
const MaxDelay = 30 * 24 * time.Hour

// checkDelay validates run_at, delay_s and retry_backoff: 400 naming the
// field. A run_at in the past means now.
func checkDelay(req *SubmitRequest, now time.Time) error {
	bad := func(field, format string, args ...any) error {
		return &Error{Status: http.StatusBadRequest, Code: "bad_" + strings.SplitN(field, ".", 2)[0],
			Message: fmt.Sprintf(format, args...), Extra: map[string]any{"field": field}}
	}
	if req.RunAt != nil && req.DelayS != nil {
		return bad("run_at", "give run_at or delay_s, not both")
	}
	if d := req.DelayS; d != nil && (math.IsNaN(*d) || *d < 0 || *d > MaxDelay.Seconds()) {
		return bad("delay_s", "delay_s %v is out of range 0..%d", *d, int(MaxDelay.Seconds()))
	}
	if t := req.RunAt; t != nil && t.Sub(now) > MaxDelay {
		return bad("run_at", "run_at %s is more than %s ahead", t.Format(time.RFC3339), MaxDelay)
	}
	if b := req.RetryBackoff; b != nil {
		if err := b.Check(); err != nil {
			field := "retry_backoff.base_s"
			if strings.Contains(err.Error(), "max_s") {
				field = "retry_backoff.max_s"
			}
			return bad(field, "%v", err)
		}
	}
	return nil
}

// runAt is when the job is due, zero for at once (no delay, or one past).
func (req *SubmitRequest) runAt(now time.Time) time.Time {
	var t time.Time
	switch {
	case req.RunAt != nil:
		t = *req.RunAt
	case req.DelayS != nil:
		t = now.Add(time.Duration(*req.DelayS * float64(time.Second)))
	}
	if !t.After(now) {
		return time.Time{}
	}
	return t.UTC()
}

// statusNames lists the statuses for an error message.
func statusNames() string {
	names := make([]string, len(persistence.Statuses))
	for i, st := range persistence.Statuses {
		names[i] = string(st)
	}
	return strings.Join(names, ", ")
}

// retry is POST /jobs/{id}/retry: a failed job runs again under a new
// attempt; 404 for an unknown job, 409 not_failed for one that is not
// failed.
func (s *Server) retry(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	job, err := s.b.Retry(r.Context(), id)
	if err != nil {
		var apiErr *Error
		if !errors.As(err, &apiErr) {
			err = notFound(err, "job", id)
		}
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, redacted(job))
}
