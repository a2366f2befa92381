package loadgen

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/paprika-hub/paprika/internal/backoff"
)

// follower follows the logs of random running jobs over SSE and records
// the line-to-subscriber latency of every line stamped inside the window.
// Its goroutine is owned by Run; it ends with its context.
type follower struct {
	// fixed after construction
	f       *fleet
	hub     *hubClient
	rng     *rand.Rand
	window  *windowClock
	samples *atomic.Int64 // shared count of recorded samples (progress)

	// owned by the follower's goroutine; read after it ended
	hist    *histogram
	streams int   // SSE streams opened
	lines   int64 // data lines read (any time)
	errs    int
	lastErr error
}

// windowClock holds the measured window's bounds, in unix nanoseconds, once
// they are known; 0 = not yet.
type windowClock struct {
	start, end atomic.Int64
}

// inWindow reports whether a line stamped at ns counts.
func (w *windowClock) inWindow(ns int64) bool {
	s, e := w.start.Load(), w.end.Load()
	return s != 0 && ns >= s && (e == 0 || ns <= e)
}

func newFollower(f *fleet, hub *hubClient, seed uint64, window *windowClock, samples *atomic.Int64) *follower {
	return &follower{f: f, hub: hub, rng: rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15)),
		window: window, samples: samples, hist: newHistogram()}
}

// run follows one job after another until ctx ends or no job is left.
func (fl *follower) run(ctx context.Context) {
	for ctx.Err() == nil {
		id := fl.f.randomRunning(fl.rng)
		if id == "" {
			if backoff.Sleep(ctx, 100*time.Millisecond) != nil {
				return
			}
			continue
		}
		if err := fl.follow(ctx, id); err != nil && ctx.Err() == nil {
			fl.errs++
			fl.lastErr = err
			// Do not spin on a hub that refuses.
			if backoff.Sleep(ctx, 200*time.Millisecond) != nil {
				return
			}
		}
	}
}

// follow reads one job's SSE stream until "event: done". Lines stamped
// before the stream opened are the stored backlog and are skipped: they
// would measure how long ago the job began, not the live path.
func (fl *follower) follow(ctx context.Context, id string) error {
	req, err := fl.hub.newRequest(ctx, http.MethodGet, "/jobs/"+url.PathEscape(id)+"/logs?follow=1", nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "text/event-stream")
	opened := time.Now().UnixNano()
	res, err := fl.hub.hc.Do(req)
	if err != nil {
		return fmt.Errorf("follow job %s: %w", id, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("follow job %s: HTTP %d", id, res.StatusCode)
	}
	fl.streams++
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if bytes.HasPrefix(line, []byte("event: done")) {
			return nil
		}
		data, ok := bytes.CutPrefix(line, []byte("data: "))
		if !ok {
			continue
		}
		now := time.Now().UnixNano()
		fl.lines++
		ns, ok := stampOf(data)
		if !ok || ns < opened || !fl.window.inWindow(ns) {
			continue
		}
		fl.hist.record(time.Duration(now - ns))
		fl.samples.Add(1)
	}
	if err := sc.Err(); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("follow job %s: %w", id, err)
	}
	return nil
}

// stampOf reads the send time of a bench line, "t=<unix ns> seq=<n>…".
func stampOf(data []byte) (int64, bool) {
	rest, ok := bytes.CutPrefix(data, []byte("t="))
	if !ok {
		return 0, false
	}
	end := bytes.IndexByte(rest, ' ')
	if end < 0 {
		end = len(rest)
	}
	ns, err := strconv.ParseInt(string(rest[:end]), 10, 64)
	return ns, err == nil
}
