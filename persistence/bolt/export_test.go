package bolt

import bbolt "go.etcd.io/bbolt"

// Commits is how many transactions s's group committer has committed.
func Commits(s *JobStore) int64 { return s.Commits() }

// LazyWaiting is how many lazy writes (a Finish, a SetLane) wait in s's
// group committer for a commit to ride.
func LazyWaiting(s *JobStore) int { return int(s.group.waiting.Load()) }

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

// HoldWriter takes bbolt's writer lock until release is called, as a disk
// that stopped answering would hold a commit: the store's writes queue.
// It returns once the lock is held.
func HoldWriter(s *JobStore) (release func()) {
	held, done := make(chan struct{}), make(chan struct{})
	go func() {
		_ = s.db.Update(func(*bbolt.Tx) error {
			close(held)
			<-done
			return nil
		})
	}()
	<-held
	return func() { close(done) }
}
