package mysql

import (
	"encoding/json"
	"fmt"

	"github.com/paprika-hub/paprika/persistence"
)

// filterWhere is ListQuery's mode, worker, reason and label filters as
// SQL conditions (persistence.ListQuery.MatchesFilters). The labels are
// one JSON_CONTAINS of an object built by encoding/json, so no label key
// or value is ever spliced into a JSON path or the query text.
func filterWhere(q persistence.ListQuery) ([]string, []any, error) {
	var (
		where []string
		args  []any
	)
	if q.Mode != "" {
		where, args = append(where, "mode = ?"), append(args, q.Mode)
	}
	if q.WorkerID != "" {
		where, args = append(where, "worker_id = ?"), append(args, q.WorkerID)
	}
	if q.Reason != "" {
		where, args = append(where, "reason = ?"), append(args, q.Reason)
	}
	if len(q.Labels) > 0 {
		want, err := json.Marshal(q.Labels)
		if err != nil {
			return nil, nil, fmt.Errorf("list jobs: encode the label filter: %w", err)
		}
		where, args = append(where, "labels IS NOT NULL AND JSON_CONTAINS(labels, ?)"), append(args, string(want))
	}
	return where, args, nil
}
