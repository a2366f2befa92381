package agent

import (
	"strconv"

	"github.com/paprika-hub/paprika/messages"
)

// lanePool hands out lane indexes; never more than its size are busy. It is
// not safe for concurrent use: the Agent guards it with its mutex, so that
// the lane decision and the job's registration are one step.
type lanePool struct {
	urls   []string // URL of each lane; replaced when the worker id changes
	holder []string // what holds each lane: messages.LaneJob or LaneSession; "" when free
	skip   []string // why the hub's placement skips each lane (lane_skip); "" when it does not
	nSkip  int      // lanes with a skip reason
	n      int      // busy count
	// freed is when each lane was last freed, as a count of releases (0:
	// never); releases counts them.
	freed    []uint64
	releases uint64
	changed  chan struct{}
}

func newLanePool(urls []string) *lanePool {
	return &lanePool{urls: urls, holder: make([]string, len(urls)), skip: make([]string, len(urls)),
		freed: make([]uint64, len(urls)), changed: make(chan struct{}, 1)}
}

// acquire takes a free lane for holder (messages.LaneJob or LaneSession):
// the one named by hint (its URL or its index), else the one free the
// longest (the lowest of those never used), a lane the hub does not skip
// first. Taking the lowest free lane instead left a worker's high lanes
// idle while assignments queued for it: a lane freed while others were
// being refilled waited for every lower one to be busy again (up to
// hundreds of ms flat out), though the worker's capacity was in use; in
// turn, each lane's browser now serves an even share of the jobs. A
// lane whose browser is being restarted (as ls, which may be nil, says;
// the job would wait for the browser) is taken only when no other healthy
// lane is free. Only when every free lane is skipped does it take one of
// those (the hub counts them as taken, so that is a race of a report with
// an assignment, and refusing the job would only requeue it); skipped is
// then the lane's skip reason. ok is false when every lane is busy.
func (p *lanePool) acquire(hint, holder string, ls LaneStater) (lane int, skipped string, ok bool) {
	i, found := p.lookup(hint)
	if found && p.holder[i] == "" && p.skip[i] == "" && !restarting(ls, i) {
		p.take(i, holder)
		return i, "", true
	}
	best, waiting, fallback := -1, -1, -1
	for j, h := range p.holder {
		switch {
		case h != "":
		case p.nSkip == 0 || p.skip[j] == "":
			if restarting(ls, j) {
				if waiting < 0 || p.freed[j] < p.freed[waiting] {
					waiting = j
				}
			} else if best < 0 || p.freed[j] < p.freed[best] {
				best = j
			}
		case fallback < 0 || p.freed[j] < p.freed[fallback]:
			fallback = j
		}
	}
	if best < 0 {
		best = waiting
	}
	if best >= 0 {
		p.take(best, holder)
		return best, "", true
	}
	if found && p.holder[i] == "" {
		fallback = i // free but skipped: the hinted one is the fallback of choice
	}
	if fallback < 0 {
		return -1, "", false
	}
	p.take(fallback, holder)
	return fallback, p.skip[fallback], true
}

// setSkips replaces the set of lanes the hub skips with a lane_skip
// frame's. Lanes past the pool's size are left out (the hub's lane count
// is this worker's own report, so that is a confused hub) and counted in
// ignored; changed reports whether the set moved.
func (p *lanePool) setSkips(skips []messages.LaneSkip) (changed bool, ignored int) {
	next := make([]string, len(p.holder))
	n := 0
	for _, s := range skips {
		if s.Lane < 0 || s.Lane >= len(next) {
			ignored++
			continue
		}
		next[s.Lane] = s.Reason
		n++
	}
	for i := range next {
		if next[i] != p.skip[i] {
			changed = true
			break
		}
	}
	p.skip, p.nSkip = next, n
	return changed, ignored
}

// skipped lists the lanes the hub skips, as "lane:reason", for a log line.
func (p *lanePool) skipped() []string {
	out := make([]string, 0, p.nSkip)
	for i, r := range p.skip {
		if r != "" {
			out = append(out, strconv.Itoa(i)+":"+r)
		}
	}
	return out
}

func (p *lanePool) take(i int, holder string) {
	p.holder[i] = holder
	p.n++
	p.signal()
}

// signal tells the connect loop that a lane's state changed, without
// blocking: one pending signal covers any number of changes.
func (p *lanePool) signal() {
	select {
	case p.changed <- struct{}{}:
	default:
	}
}

// lookup finds the lane a hint names.
func (p *lanePool) lookup(hint string) (int, bool) {
	if hint == "" {
		return 0, false
	}
	for i, u := range p.urls {
		if u == hint {
			return i, true
		}
	}
	if i, err := strconv.Atoi(hint); err == nil && i >= 0 && i < len(p.holder) {
		return i, true
	}
	return 0, false
}

// setURLs replaces the lane URLs (they embed the worker id).
func (p *lanePool) setURLs(urls []string) { p.urls = urls }

// release frees a lane taken by acquire.
func (p *lanePool) release(lane int) {
	if lane >= 0 && lane < len(p.holder) && p.holder[lane] != "" {
		p.holder[lane] = ""
		p.releases++
		p.freed[lane] = p.releases
		p.n--
		p.signal()
	}
}

// state is the lane's state as the pool sees it: idle, job or session.
func (p *lanePool) state(lane int) string {
	if h := p.holder[lane]; h != "" {
		return h
	}
	return messages.LaneIdle
}

// inUse is the number of busy lanes.
func (p *lanePool) inUse() int { return p.n }

// size is the number of lanes.
func (p *lanePool) size() int { return len(p.holder) }
