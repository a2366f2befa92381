package api

import (
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/paprika-hub/paprika/messages"
	"github.com/paprika-hub/paprika/persistence"
)

// listFilters reads GET /jobs's mode, worker, label and reason parameters
// into lq; a bad value is a 400 whose "parameter" names it. label is
// k=v, repeated for several (a job must carry all of them).
func (s *Server) listFilters(q url.Values, lq *persistence.ListQuery) error {
	bad := func(param, code, format string, args ...any) error {
		e := Errorf(http.StatusBadRequest, code, format, args...)
		e.Extra = map[string]any{"parameter": param}
		return e
	}
	if m := q.Get("mode"); m != "" {
		if !messages.ValidModeName(m) {
			return bad("mode", "bad_mode", "mode %.80q is not a mode name: 1-%d of a-z 0-9 . _ - starting with a letter or digit",
				m, messages.MaxModeNameBytes)
		}
		lq.Mode = m
	}
	if w := q.Get("worker"); w != "" {
		if !validID(w) {
			return bad("worker", "bad_worker", "worker %.80q is not a worker id: use 1-64 of A-Z a-z 0-9 _ -", w)
		}
		lq.WorkerID = w
	}
	if r := q.Get("reason"); r != "" {
		if !slices.Contains(persistence.Reasons, r) {
			return bad("reason", "bad_reason", "reason %.80q is not one of %s", r, strings.Join(persistence.Reasons, ", "))
		}
		lq.Reason = r
	}
	labels := q["label"]
	if len(labels) > s.limits.MaxLabels {
		return bad("label", "bad_label", "%d label filters, more than a job may carry (limits.max_labels %d)", len(labels), s.limits.MaxLabels)
	}
	for _, kv := range labels {
		k, v, ok := strings.Cut(kv, "=")
		switch {
		case !ok || k == "":
			return bad("label", "bad_label", "label %.80q: use key=value", kv)
		case len(k) > s.limits.MaxLabelKeyBytes || len(v) > s.limits.MaxLabelValueBytes:
			return bad("label", "bad_label", "label %.80q is longer than any label a job may carry (limits.max_label_key_bytes, limits.max_label_value_bytes)", kv)
		}
		if lq.Labels == nil {
			lq.Labels = map[string]string{}
		}
		if old, dup := lq.Labels[k]; dup && old != v {
			return bad("label", "bad_label", "label %q is asked for with two values, %q and %q: no job matches both", k, old, v)
		}
		lq.Labels[k] = v
	}
	return nil
}
