package agent

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/paprika-hub/paprika/internal/backoff"
)

// DefaultRestartJitter is Config.RestartJitter's default (DESIGN.md: 0–60 s).
const DefaultRestartJitter = 60 * time.Second

// restartCheckEvery is how often the restart thresholds are read.
const restartCheckEvery = time.Second

// watchRestart ends the agent's run when a restart threshold is reached:
// after a random jitter it drains, waits until no job runs and every
// result is acknowledged, then calls stop (Run then returns nil and the
// process exits 0). It returns when ctx ends. Owned by Run.
func (a *Agent) watchRestart(ctx context.Context, stop context.CancelFunc) {
	c := a.cfg
	if c.RestartAfter <= 0 && c.RestartAfterJobs <= 0 && c.RestartAboveRSS <= 0 {
		return
	}
	started := time.Now()
	tick := time.NewTicker(restartCheckEvery)
	defer tick.Stop()
	reason := ""
	for reason == "" {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		switch {
		case c.RestartAfter > 0 && time.Since(started) >= c.RestartAfter:
			reason = fmt.Sprintf("uptime %s reached", c.RestartAfter)
		case c.RestartAfterJobs > 0 && int(a.jobsRun.Load()) >= c.RestartAfterJobs:
			reason = fmt.Sprintf("%d jobs run", a.jobsRun.Load())
		case c.RestartAboveRSS > 0:
			if rss, err := selfRSS(); err == nil && rss > c.RestartAboveRSS {
				reason = fmt.Sprintf("resident memory %d MiB above %d MiB", rss>>20, c.RestartAboveRSS>>20)
			}
		}
	}
	jitter := time.Duration(0)
	if c.RestartJitter > 0 {
		jitter = rand.N(c.RestartJitter)
	}
	a.lg().Info("restart threshold reached; draining after the jitter", "reason", reason, "jitter", jitter)
	if backoff.Sleep(ctx, jitter) != nil {
		return
	}
	a.Drain()
	for {
		a.mu.Lock()
		busy := len(a.jobs) + a.sessionCountLocked()
		a.mu.Unlock()
		kept, _ := a.box.kept()
		if busy == 0 && kept == 0 {
			a.lg().Info("drained for restart; stopping")
			stop()
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// selfRSS reads this process's resident set size from /proc.
func selfRSS() (int64, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, fmt.Errorf("read rss: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("parse rss %q: %w", v, err)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("read rss: no VmRSS line")
}
