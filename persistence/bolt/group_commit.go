package bolt

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	bbolt "go.etcd.io/bbolt"
	bberrors "go.etcd.io/bbolt/errors"

	"github.com/paprika-hub/paprika/internal/arrivals"
	"github.com/paprika-hub/paprika/persistence"
)

// maxGroup bounds the transitions one commit carries, so one fsync never
// holds a caller behind thousands of others.
const maxGroup = 512

// waitGroup is the group size a commit stops waiting for more writes at:
// under a load that forms groups of it by itself, no write waits. It was
// 4; at 32 a flat-out hub's groups grow from ~19 to ~25 writes (0.16 →
// 0.13 commits per job) for 0.90× its CPU per job, and a write waits at
// most the wait either way.
const waitGroup = 32

// groupCommitter commits the job store's writes in groups: one goroutine
// takes a write, then every write that queued up meanwhile, and runs them
// all in one bbolt transaction — one fsync for the group instead of one
// each. Each caller is answered after its group's commit returned, so a
// transition is still durable before it is acknowledged. Unlike bbolt's
// DB.Batch a write's own verdict (a refused claim) does not roll the
// others back: each fn reports a refusal through its own closure and
// returns nil, writing nothing.
//
// Under a flat-out load groups form by themselves, while the previous
// commit is on disk. Under a steady one they do not: at 400 jobs/s each
// write finds the disk idle and commits alone, ~3 commits per job, and a
// commit costs the same page materialization, page writes and two
// fdatasyncs for one write as for many. So with a wait (WithGroupWait,
// jobs.group_commit_wait) a group smaller than waitGroup waits up to
// that long for more writes — only while writes come faster than one per
// wait (a moving mean of their gaps), so a lone write, or a light load,
// never waits, and a group that reaches waitGroup goes at once. Unlike
// DB.Batch's fixed 10 ms it costs a steady load at most the wait.
//
// A lazy write (writeOpts.wait) does not start a commit of its own: it
// rides the next commit another write starts, or commits its wait after
// it came. Two kinds are: a job's final state, whose worker's lane was
// freed before it and whose worker is acknowledged after it, and a new
// job announced before its commit (JobStore.CreateAnnounced), whose
// claim follows within a millisecond when a lane is free. Under a steady
// load a no-op job's four writes then take about one commit instead of
// three; each is durable before it is acknowledged, as every write is.
// A commit applies the lazy writes it carries first, in the order they
// came, then the write that started it, so a claim finds its job's create.
type groupCommitter struct {
	db   *bbolt.DB
	wait time.Duration // the most a group waits for more writes (0: never)
	reqs chan *commitReq
	quit chan struct{}
	done chan struct{}
	once sync.Once
	// commits counts the transactions committed (tests read it).
	commits atomic.Int64
	// waiting is how many lazy writes wait for a commit to ride (tests
	// read it).
	waiting atomic.Int32
}

type commitReq struct {
	fn  func(*writeTx) error
	err chan error
	writeOpts
	// state is reqWaiting until the committer takes the write (reqTaken)
	// or its caller gives up on it first (reqAbandoned): a write is either
	// carried or dropped, and its caller knows which.
	state atomic.Int32
}

const (
	reqWaiting int32 = iota
	reqTaken
	reqAbandoned
)

// errNotAnswered marks a write whose caller stopped waiting (its context
// ended) before its commit answered; its closure's reports must not be
// read, as the committer may still run it.
var errNotAnswered = errors.New("the job store did not answer in time")

// writeOpts says how a write joins a commit; the zero value starts one at
// once.
type writeOpts struct {
	// wait, when positive, makes the write lazy: it waits up to wait for a
	// commit another write starts instead of starting one.
	wait time.Duration
	// held: a write its caller acted on before its commit (taken) is
	// written once the committer took it, even if the caller stops
	// waiting — it is never dropped.
	held bool
	// taken runs in the caller's goroutine once the committer took the
	// write: what it starts cannot overtake the write.
	taken func()
	// through runs once the committer is through with the write, in its
	// goroutine after the write was answered or dropped, or in the
	// caller's when the committer never took it.
	through func()
}

func newGroupCommitter(db *bbolt.DB, wait time.Duration) *groupCommitter {
	g := &groupCommitter{db: db, wait: wait, reqs: make(chan *commitReq), quit: make(chan struct{}), done: make(chan struct{})}
	go g.loop()
	return g
}

// update runs fn in a write transaction shared with other writers and
// returns once that transaction is committed (or failed). fn may run twice
// (alone, after its group failed), so it must reset what it reports.
//
// The wait is bounded by ctx: a caller is an actor's turn, which must not
// hang on a disk that stopped answering. If ctx ends before the committer
// took the write, nothing is written; if after, the write may still
// land. Both are errNotAnswered (and persistence.ErrUnavailable), and the
// caller must then not read what fn reports.
//
// A lazy write (o.wait) waits up to o.wait for a commit another write
// starts instead of starting one: what its caller is answered, and when,
// is as for any write, but later. A held one is written even if ctx ends
// after the committer took it.
func (g *groupCommitter) update(ctx context.Context, fn func(*writeTx) error, o writeOpts) error {
	r := &commitReq{fn: fn, err: make(chan error, 1), writeOpts: o}
	select {
	case g.reqs <- r:
	case <-g.quit:
		r.finish()
		return bberrors.ErrDatabaseNotOpen
	case <-ctx.Done():
		r.finish()
		return notWritten(ctx)
	}
	if r.taken != nil {
		r.taken()
	}
	select {
	case err := <-r.err:
		return err
	case <-ctx.Done():
		select {
		case err := <-r.err: // answered as the context ended: the answer stands
			return err
		default:
		}
		if !r.held && r.state.CompareAndSwap(reqWaiting, reqAbandoned) {
			return notWritten(ctx)
		}
		return fmt.Errorf("%w: %w: %w while its commit ran; it may have been written", persistence.ErrUnavailable,
			errNotAnswered, ctx.Err())
	}
}

// finish runs the write's through hook, once the committer is through
// with it (or never took it).
func (r *commitReq) finish() {
	if r.through != nil {
		r.through()
	}
}

// notWritten is the error of a write dropped unwritten because its
// caller's ctx ended first.
func notWritten(ctx context.Context) error {
	return fmt.Errorf("%w: %w: %w, nothing written", persistence.ErrUnavailable, errNotAnswered, ctx.Err())
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
	// lazy holds the lazy writes taken and not committed yet, in the
	// order they came; lazyTimer fires at the earliest of their waits' ends
	// (lazyDue).
	var lazy []*commitReq
	var lazyDue time.Time
	lazyTimer := time.NewTimer(time.Hour)
	lazyTimer.Stop()
	defer lazyTimer.Stop()
	// The pace of the writes starts at the wait: the first ones do not wait.
	pace := arrivals.NewGaps(g.wait)
	took := func() time.Time {
		now := time.Now()
		pace.Note(now)
		return now
	}
	var timer *time.Timer
	if g.wait > 0 {
		timer = time.NewTimer(time.Hour)
		timer.Stop()
		defer timer.Stop()
	}
	for {
		group = group[:0]
		select {
		case r := <-g.reqs:
			now := took()
			if r.wait > 0 && len(lazy) < maxGroup-1 {
				lazy = append(lazy, r)
				if due := now.Add(r.wait); len(lazy) == 1 || due.Before(lazyDue) {
					lazyDue = due
					lazyTimer.Reset(r.wait)
				}
				g.waiting.Store(int32(len(lazy)))
				continue
			}
			// Every lazy write taken rides this commit, ahead of the write
			// that starts it: they came first.
			group = append(group, lazy...)
			group = append(group, r)
		case <-lazyTimer.C: // a lazy write waited long enough
			group = append(group, lazy...)
		case <-g.quit:
			if len(lazy) > 0 { // taken: answered before the loop ends
				g.commit(lazy)
			}
			return
		}
		clear(lazy)
		lazy = lazy[:0]
		lazyTimer.Stop()
		g.waiting.Store(0)
	gather:
		for len(group) < maxGroup {
			select {
			case r := <-g.reqs:
				group = append(group, r)
				took()
			default:
				break gather
			}
		}
		if timer != nil && len(group) < waitGroup && pace.Faster(g.wait) {
			timer.Reset(g.wait)
		window:
			for len(group) < waitGroup {
				select {
				case r := <-g.reqs:
					group = append(group, r)
					took()
				case <-timer.C:
					break window
				case <-g.quit:
					break window
				}
			}
			timer.Stop()
		}
		g.commit(group)
	}
}

// commit runs the group in one transaction. When it fails (a write's own
// storage error, or the commit), each write is retried alone so one bad
// write fails only its own caller.
func (g *groupCommitter) commit(group []*commitReq) {
	// A write whose caller gave up is dropped, unwritten.
	taken := group[:0]
	for _, r := range group {
		if r.state.CompareAndSwap(reqWaiting, reqTaken) {
			taken = append(taken, r)
		} else {
			r.finish()
		}
	}
	if group = taken; len(group) == 0 {
		return
	}
	g.commits.Add(1)
	err := g.db.Update(func(tx *bbolt.Tx) error {
		w := newWriteTx(tx)
		for _, r := range group {
			if err := r.fn(w); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil || len(group) == 1 {
		for _, r := range group {
			r.err <- err
			r.finish()
		}
		return
	}
	for _, r := range group {
		r.err <- g.db.Update(func(tx *bbolt.Tx) error { return r.fn(newWriteTx(tx)) })
		r.finish()
	}
}
