package main

import (
	"context"
	"fmt"
	"time"

	"github.com/paprika-hub/paprika/client"
)

// jobsRetry is `paprika jobs retry ID...`: each failed job runs again
// under a new attempt. It goes on past a job that cannot be retried and
// exits non-zero if any could not.
func (c *cli) jobsRetry(ctx context.Context, args []string) int {
	fs := newFlagSet("jobs retry")
	cf := c.addClientFlags(fs)
	pos, code := c.parseOrExit(fs, "paprika jobs retry ID... [--hub URL] [--json]", args)
	if code >= 0 {
		return code
	}
	if len(pos) == 0 {
		return c.usageError(fs.Name(), "missing ID")
	}
	cl, code := c.hubClient(fs, cf)
	if code >= 0 {
		return code
	}
	ctx, cancel := context.WithTimeout(ctx, viewTimeout)
	defer cancel()
	status := exitOK
	var jobs []client.Job
	for _, id := range pos {
		job, err := cl.Retry(ctx, id)
		if err != nil {
			status = c.fail(ctx, "jobs retry "+id, err)
			continue
		}
		jobs = append(jobs, job)
		if !cf.json {
			fmt.Fprintf(c.stdout, "job %s %s again (attempt %d of %d)\n", job.ID, job.Status, job.Attempts+1, job.MaxAttempts)
		}
	}
	if cf.json {
		if code := c.printJSON("jobs retry", jobs); code != exitOK {
			return code
		}
	}
	return status
}

// attemptRows adds a scheduled job's run_at and one row per logged
// attempt to `jobs get`.
func attemptRows(t table, j client.Job, now time.Time) {
	if !j.RunAt.IsZero() && j.Status == client.StatusScheduled {
		t.row("RUN AT", j.RunAt.UTC().Format(time.RFC3339)+" (in "+compactDuration(max(j.RunAt.Sub(now), 0))+")")
	}
	for _, a := range j.AttemptsLog {
		s := fmt.Sprintf("%s on %s", a.Status, a.WorkerID)
		if a.Reason != "" {
			s = fmt.Sprintf("%s (%s) on %s", a.Status, a.Reason, a.WorkerID)
		}
		if !a.StartedAt.IsZero() {
			s += " at " + a.StartedAt.UTC().Format(time.RFC3339)
		}
		if a.Error != "" {
			s += ": " + a.Error
		}
		t.row(fmt.Sprintf("ATTEMPT %d", a.Attempt), s)
	}
}
