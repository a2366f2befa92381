package bolt

import (
	"sync"

	bbolt "go.etcd.io/bbolt"
	bberrors "go.etcd.io/bbolt/errors"
)

// maxGroup bounds the transitions one commit carries, so one fsync never
// holds a caller behind thousands of others.
const maxGroup = 512

// groupCommitter commits the job store's writes in groups: one goroutine
// takes a write, then every write that queued up meanwhile, and runs them
// all in one bbolt transaction — one fsync for the group instead of one
// each. It adds no wait: a lone write commits at once, and writes group
// only while an earlier commit is on disk. Each caller is answered after
// its group's commit returned, so a transition is still durable before it
// is acknowledged. Unlike bbolt's DB.Batch it has no timer (a 10 ms
// default would be the whole latency budget) and a write's own verdict (a
// refused claim) does not roll the others back: each fn reports a refusal
// through its own closure and returns nil, writing nothing.
type groupCommitter struct {
	db   *bbolt.DB
	reqs chan *commitReq
	quit chan struct{}
	done chan struct{}
	once sync.Once
}

type commitReq struct {
	fn  func(*bbolt.Tx) error
	err chan error
}

func newGroupCommitter(db *bbolt.DB) *groupCommitter {
	g := &groupCommitter{db: db, reqs: make(chan *commitReq), quit: make(chan struct{}), done: make(chan struct{})}
	go g.loop()
	return g
}

// update runs fn in a write transaction shared with other writers and
// returns once that transaction is committed (or failed). fn may run twice
// (alone, after its group failed), so it must reset what it reports.
func (g *groupCommitter) update(fn func(*bbolt.Tx) error) error {
	r := &commitReq{fn: fn, err: make(chan error, 1)}
	select {
	case g.reqs <- r:
	case <-g.quit:
		return bberrors.ErrDatabaseNotOpen
	}
	return <-r.err
}

// stop ends the loop; writes already taken are answered first, later ones
// fail as on a closed database.
func (g *groupCommitter) stop() {
	g.once.Do(func() { close(g.quit) })
	<-g.done
}

func (g *groupCommitter) loop() {
	defer close(g.done)
	group := make([]*commitReq, 0, maxGroup)
	for {
		select {
		case r := <-g.reqs:
			group = append(group[:0], r)
		case <-g.quit:
			return
		}
	gather:
		for len(group) < maxGroup {
			select {
			case r := <-g.reqs:
				group = append(group, r)
			default:
				break gather
			}
		}
		g.commit(group)
	}
}

// commit runs the group in one transaction. When it fails (a write's own
// storage error, or the commit), each write is retried alone so one bad
// write fails only its own caller.
func (g *groupCommitter) commit(group []*commitReq) {
	err := g.db.Update(func(tx *bbolt.Tx) error {
		for _, r := range group {
			if err := r.fn(tx); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil || len(group) == 1 {
		for _, r := range group {
			r.err <- err
		}
		return
	}
	for _, r := range group {
		r.err <- g.db.Update(r.fn)
	}
}
