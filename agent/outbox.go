package agent

import (
	"cmp"
	"slices"
	"sync"
)

// jobKey names one attempt of one job.
type jobKey struct {
	id      string
	attempt int
}

// keptJob holds every encoded frame of one job attempt, in order, until the
// hub acknowledges the attempt's final frame.
type keptJob struct {
	order  uint64 // creation order, so re-sends keep the jobs' relative order
	frames [][]byte
	final  bool
}

// pendingFrame is a frame not yet written to the current link.
type pendingFrame struct {
	key  jobKey
	data []byte
}

// outbox keeps job frames until job_ack and feeds them to the link that is
// attached, if any. Frames are never dropped while no link is attached:
// attach queues every kept frame again, in order, which is the re-send after
// a reconnect. All methods are safe for concurrent use; the outbox never
// calls out of itself while holding its lock.
type outbox struct {
	maxPending int // fixed: emit waits while this many frames are unsent on a live link

	mu      sync.Mutex
	jobs    map[jobKey]*keptJob
	next    uint64
	pending []pendingFrame
	ready   chan struct{} // the attached link's wake-up channel; nil when none
	room    chan struct{} // closed and replaced when pending shrinks or the link goes
	acked   chan struct{} // closed and replaced when a job is acknowledged
}

func newOutbox(maxPending int) *outbox {
	return &outbox{
		maxPending: maxPending,
		jobs:       make(map[jobKey]*keptJob),
		room:       make(chan struct{}),
		acked:      make(chan struct{}),
	}
}

// add keeps a frame of a job and queues it to the attached link. final marks
// the job's last frame, after which job_ack may release the job.
func (o *outbox) add(key jobKey, data []byte, final bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	j := o.jobs[key]
	if j == nil {
		o.next++
		j = &keptJob{order: o.next}
		o.jobs[key] = j
	}
	j.frames = append(j.frames, data)
	j.final = j.final || final
	if o.ready != nil {
		o.pending = append(o.pending, pendingFrame{key: key, data: data})
		signal(o.ready)
	}
}

// roomCh returns nil when another frame may be added now, or a channel that
// is closed when it is worth asking again. Only a live, backed-up link makes
// producers wait: while disconnected, frames are kept without limit.
func (o *outbox) roomCh() <-chan struct{} {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.ready == nil || len(o.pending) < o.maxPending {
		return nil
	}
	return o.room
}

// attach makes ready the wake-up channel of the link that now writes the
// frames, and queues every kept frame again, job by job in creation order.
func (o *outbox) attach(ready chan struct{}) {
	o.mu.Lock()
	defer o.mu.Unlock()
	keys := make([]jobKey, 0, len(o.jobs))
	for k := range o.jobs {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b jobKey) int {
		return cmp.Compare(o.jobs[a].order, o.jobs[b].order)
	})
	o.pending = o.pending[:0]
	for _, k := range keys {
		for _, f := range o.jobs[k].frames {
			o.pending = append(o.pending, pendingFrame{key: k, data: f})
		}
	}
	o.ready = ready
	if len(o.pending) > 0 {
		signal(ready)
	}
}

// detach forgets the link whose wake-up channel is ready (if it is still the
// attached one) and the frames it had not written; they stay kept.
func (o *outbox) detach(ready chan struct{}) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.ready != ready {
		return
	}
	o.ready = nil
	o.pending = nil
	o.wakeProducers()
}

// take removes up to max pending frames for the link whose wake-up channel
// is ready. Frames of jobs acknowledged meanwhile are skipped.
func (o *outbox) take(ready chan struct{}, max int) [][]byte {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.ready != ready || len(o.pending) == 0 {
		return nil
	}
	out := make([][]byte, 0, min(max, len(o.pending)))
	n := 0
	for n < len(o.pending) && len(out) < max {
		p := o.pending[n]
		n++
		if _, kept := o.jobs[p.key]; kept {
			out = append(out, p.data)
		}
	}
	o.pending = o.pending[n:]
	if len(o.pending) == 0 {
		o.pending = nil
	} else {
		signal(ready)
	}
	o.wakeProducers()
	return out
}

// ack releases a job whose final frame the hub stored. attempt 0 releases
// every attempt of the job. It reports whether anything was released; an
// ack for a job that has not sent its final frame yet is ignored.
func (o *outbox) ack(id string, attempt int) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	released := false
	for k, j := range o.jobs {
		if k.id == id && (attempt == 0 || k.attempt == attempt) && j.final {
			delete(o.jobs, k)
			released = true
		}
	}
	if released {
		close(o.acked)
		o.acked = make(chan struct{})
	}
	return released
}

// unacked returns the ids of jobs whose final frame waits for its ack.
func (o *outbox) unacked() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var ids []string
	for k, j := range o.jobs {
		if j.final {
			ids = append(ids, k.id)
		}
	}
	return ids
}

// has reports whether frames of the job attempt are kept.
func (o *outbox) has(key jobKey) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	_, ok := o.jobs[key]
	return ok
}

// kept returns the number of jobs with kept frames and a channel closed at
// the next acknowledgement.
func (o *outbox) kept() (int, <-chan struct{}) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.jobs), o.acked
}

// wakeProducers lets emitters waiting in roomCh try again. Caller holds mu.
func (o *outbox) wakeProducers() {
	close(o.room)
	o.room = make(chan struct{})
}

// signal wakes the owner of a capacity-1 channel without blocking.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
