package bolt

import bbolt "go.etcd.io/bbolt"

// Commits is how many transactions s's group committer has committed.
func Commits(s *JobStore) int64 { return s.Commits() }

// LeafFill is how full the leaf pages of bucket name are, in use over
// allocated.
func LeafFill(s *JobStore, name string) (fill float64, err error) {
	err = s.db.View(func(tx *bbolt.Tx) error {
		st := tx.Bucket([]byte(name)).Stats()
		fill = float64(st.LeafInuse) / float64(st.LeafAlloc)
		return nil
	})
	return fill, err
}
