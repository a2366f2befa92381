package bolt

import (
	"context"
	"slices"
	"strings"
	"sync"

	bbolt "go.etcd.io/bbolt"
)

// creating holds the ids and idempotency keys of the creates under way,
// from before their write reaches the committer until the committer is
// through with it. A create whose id or key is under way waits for that
// one first, so two creates of one key are never in flight together: an
// announced create (CreateAnnounced) checked its key against the stored
// ones and knows no other create will take it before its own commit.
// Creates of distinct keys — all of them but a client's retries — never
// wait.
type creating struct {
	mu sync.Mutex
	// ids and keys map what is under way to a channel closed when it is
	// through; nil until a second create waits for it.
	ids, keys map[string]chan struct{}
}

// reserve marks id and key (when not empty) as under way, first waiting
// for a create of either that is; release ends the mark. It fails only
// when ctx ends while it waits.
func (c *creating) reserve(ctx context.Context, id, key string) (release func(), err error) {
	for {
		c.mu.Lock()
		if c.ids == nil {
			c.ids, c.keys = map[string]chan struct{}{}, map[string]chan struct{}{}
		}
		busy := waitOn(c.ids, id)
		if busy == nil && key != "" {
			busy = waitOn(c.keys, key)
		}
		if busy == nil {
			c.ids[id] = nil
			if key != "" {
				c.keys[key] = nil
			}
			c.mu.Unlock()
			return func() { c.release(id, key) }, nil
		}
		c.mu.Unlock()
		select {
		case <-busy:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// waitOn is the channel to wait on for name when a create has it under
// way (made for the first waiter), nil when none has. c.mu is held.
func waitOn(m map[string]chan struct{}, name string) chan struct{} {
	ch, busy := m[name]
	if !busy {
		return nil
	}
	if ch == nil {
		ch = make(chan struct{})
		m[name] = ch
	}
	return ch
}

// reserveAll reserves every {id, key} of names as reserve does, for a
// create of several jobs (CreateMany); a key named twice is reserved
// once (the second would wait for the first). It takes them in the
// order of their keys, then ids, one at a time: two such creates that
// share keys take them in one order, so neither holds a key the other
// waits for while it waits for one the other holds (a single create
// holds nothing while it waits). release ends every mark; on an error
// none is left.
func (c *creating) reserveAll(ctx context.Context, names [][2]string) (release func(), err error) {
	sorted := slices.Clone(names)
	slices.SortFunc(sorted, func(a, b [2]string) int {
		if n := strings.Compare(a[1], b[1]); n != 0 {
			return n
		}
		return strings.Compare(a[0], b[0])
	})
	releases := make([]func(), 0, len(sorted))
	release = func() {
		for _, r := range releases {
			r()
		}
	}
	for i, n := range sorted {
		if i > 0 && n[1] != "" && n[1] == sorted[i-1][1] {
			n[1] = "" // reserved with the one before
		}
		r, err := c.reserve(ctx, n[0], n[1])
		if err != nil {
			release()
			return nil, err
		}
		releases = append(releases, r)
	}
	return release, nil
}

func (c *creating) release(id, key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	through(c.ids, id)
	if key != "" {
		through(c.keys, key)
	}
}

// through ends name's mark, waking the creates that wait for it. c.mu is
// held.
func through(m map[string]chan struct{}, name string) {
	if ch := m[name]; ch != nil {
		close(ch)
	}
	delete(m, name)
}

// unknown reports whether neither id nor key (when not empty) is stored:
// with both reserved, a create of them is then certain to create. A read
// that fails answers false (the create goes the plain way and finds out).
func (s *JobStore) unknown(id, key string) bool {
	known := true
	_ = s.db.View(func(tx *bbolt.Tx) error {
		if tx.Bucket(bucketJobs).Get([]byte(id)) != nil {
			return nil
		}
		if key != "" && tx.Bucket(bucketIdempotency).Get([]byte(key)) != nil {
			return nil
		}
		known = false
		return nil
	})
	return !known
}
