package bolt

// Commits is how many transactions s's group committer has committed.
func Commits(s *JobStore) int64 { return s.group.commits.Load() }
