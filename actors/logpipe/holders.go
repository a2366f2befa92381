package logpipe

import (
	"sync"
	"time"
)

// maxAssigned bounds the assignments a hub remembers for its log streams;
// past it an assignment is not noted and its stream asks the store.
const maxAssigned = 1 << 16

// assignment is one assign_job a link of this hub queued for its worker.
type assignment struct {
	worker  string
	attempt int
	link    string // the WorkerConn that sent it
	at      time.Time
}

// holderBook remembers the assignments this hub's worker links sent, so a
// log stream learns its job's holder without reading the job: the job
// grain stores the claim before the assignment leaves, so an assignment is
// the store's claim of record as of then. What can change that claim
// without the log ending is covered: a rejection and a closed link drop
// the link's entries, a later assignment through this hub replaces the
// entry, and an entry older than ttl (the orphan grace, after which a job
// whose worker went away is placed anew) is not trusted. Each entry
// answers once, the stream's first check; the stream keeps the answer, as
// it kept the store's. A miss costs the store read it saves.
type holderBook struct {
	ttl time.Duration // 0: nothing is noted

	mu sync.Mutex
	m  map[string]assignment // job id → latest assignment
}

func newHolderBook(ttl time.Duration) *holderBook {
	return &holderBook{ttl: ttl, m: map[string]assignment{}}
}

func (b *holderBook) put(jobID string, a assignment) {
	if b.ttl <= 0 || jobID == "" || a.worker == "" || a.attempt <= 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.m[jobID]; !ok && len(b.m) >= maxAssigned {
		b.sweepLocked(a.at)
		if len(b.m) >= maxAssigned {
			return
		}
	}
	b.m[jobID] = a
}

// take returns and forgets jobID's assignment if one is noted and fresh.
func (b *holderBook) take(jobID string, now time.Time) (worker string, attempt int, ok bool) {
	if b == nil || b.ttl <= 0 {
		return "", 0, false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	a, ok := b.m[jobID]
	if !ok {
		return "", 0, false
	}
	delete(b.m, jobID)
	if now.Sub(a.at) >= b.ttl {
		return "", 0, false
	}
	return a.worker, a.attempt, true
}

// drop forgets jobID's assignment if link sent it under attempt.
func (b *holderBook) drop(jobID string, attempt int, link string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if a, ok := b.m[jobID]; ok && a.link == link && a.attempt == attempt {
		delete(b.m, jobID)
	}
}

// dropLink forgets every assignment link sent.
func (b *holderBook) dropLink(link string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for id, a := range b.m {
		if a.link == link {
			delete(b.m, id)
		}
	}
}

func (b *holderBook) sweepLocked(now time.Time) {
	for id, a := range b.m {
		if now.Sub(a.at) >= b.ttl {
			delete(b.m, id)
		}
	}
}
