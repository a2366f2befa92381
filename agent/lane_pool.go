package agent

import "strconv"

// lanePool hands out lane indexes; never more than its size are busy. It is
// not safe for concurrent use: the Agent guards it with its mutex, so that
// the lane decision and the job's registration are one step.
type lanePool struct {
	urls []string // URL of each lane; replaced when the worker id changes
	busy []bool
	n    int // busy count
}

func newLanePool(urls []string) *lanePool {
	return &lanePool{urls: urls, busy: make([]bool, len(urls))}
}

// acquire takes the lane named by hint (its URL or its index) when that is
// free, else the lowest free lane. ok is false when every lane is busy.
func (p *lanePool) acquire(hint string) (lane int, ok bool) {
	if i, found := p.lookup(hint); found && !p.busy[i] {
		p.busy[i] = true
		p.n++
		return i, true
	}
	for i, b := range p.busy {
		if !b {
			p.busy[i] = true
			p.n++
			return i, true
		}
	}
	return -1, false
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
	if i, err := strconv.Atoi(hint); err == nil && i >= 0 && i < len(p.busy) {
		return i, true
	}
	return 0, false
}

// setURLs replaces the lane URLs (they embed the worker id).
func (p *lanePool) setURLs(urls []string) { p.urls = urls }

// release frees a lane taken by acquire.
func (p *lanePool) release(lane int) {
	if lane >= 0 && lane < len(p.busy) && p.busy[lane] {
		p.busy[lane] = false
		p.n--
	}
}

// inUse is the number of busy lanes.
func (p *lanePool) inUse() int { return p.n }

// size is the number of lanes.
func (p *lanePool) size() int { return len(p.busy) }
