package persistence

// MatchesFilters reports whether j passes q's mode, worker, reason and
// label filters (not its status, which stores use as an index). Stores
// that filter while scanning (the embedded ones) call it; MariaDB says
// the same in SQL.
func (q ListQuery) MatchesFilters(j *Job) bool {
	if q.Mode != "" && j.Mode != q.Mode {
		return false
	}
	if q.WorkerID != "" && j.WorkerID != q.WorkerID {
		return false
	}
	if q.Reason != "" && j.Reason != q.Reason {
		return false
	}
	for k, v := range q.Labels {
		if got, ok := j.Labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}
