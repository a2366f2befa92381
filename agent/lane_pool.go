package agent

import (
	"strconv"

	"github.com/paprika-hub/paprika/messages"
)

// lanePool hands out lane indexes; never more than its size are busy. It is
// not safe for concurrent use: the Agent guards it with its mutex, so that
// the lane decision and the job's registration are one step.
type lanePool struct {
	urls    []string // URL of each lane; replaced when the worker id changes
	holder  []string // what holds each lane: messages.LaneJob or LaneSession; "" when free
	n       int      // busy count
	changed chan struct{}
}

func newLanePool(urls []string) *lanePool {
	return &lanePool{urls: urls, holder: make([]string, len(urls)), changed: make(chan struct{}, 1)}
}

// acquire takes the lane named by hint (its URL or its index) when that is
// free, else the lowest free lane, for holder (messages.LaneJob or
// LaneSession). ok is false when every lane is busy.
func (p *lanePool) acquire(hint, holder string) (lane int, ok bool) {
	if i, found := p.lookup(hint); found && p.holder[i] == "" {
		p.take(i, holder)
		return i, true
	}
	for i, h := range p.holder {
		if h == "" {
			p.take(i, holder)
			return i, true
		}
	}
	return -1, false
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
