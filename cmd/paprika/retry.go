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
	return perID(ctx, c, "jobs retry", "paprika jobs retry ID... [--hub URL] [--json]", args,
		(*client.Client).Retry,
		func(job client.Job) string {
			return fmt.Sprintf("job %s %s again (attempt %d of %d)", job.ID, job.Status, job.Attempts+1, job.MaxAttempts)
		},
		func(jobs []client.Job) any { return jobs })
}

// perID runs call once per ID argument of a command such as `sessions rm`
// or `jobs retry`: it goes on past a failure (an interrupt stops it),
// prints line(answer) per success — or, with --json, asJSON(answers) once
// — and exits non-zero if any call failed.
func perID[T any](ctx context.Context, c *cli, name, synopsis string, args []string,
	call func(*client.Client, context.Context, string) (T, error), line func(T) string, asJSON func([]T) any) int {
	fs := newFlagSet(name)
	cf := c.addClientFlags(fs)
	pos, code := c.parseOrExit(fs, synopsis, args)
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
	done := []T{}
	for _, id := range pos {
		v, err := call(cl, ctx, id)
		if err != nil {
			if status = c.fail(ctx, name, err); status == exitInterrupted { // the error names the id (its path)
				return status
			}
			continue
		}
		done = append(done, v)
		if !cf.json {
			fmt.Fprintln(c.stdout, termSafe(line(v)))
		}
	}
	if cf.json {
		if code := c.printJSON(name, asJSON(done)); code != exitOK {
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
