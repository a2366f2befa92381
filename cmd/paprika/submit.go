package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/paprika-hub/paprika/client"
)

const submitSynopsis = "paprika submit --mode MODE [--param-json '{...}'] [--param k=v ...] [--label k=v ...] [--wait] [--follow] " +
	"[--timeout-s N] [--max-attempts N] [--idempotency-key K] [--tenant T] [--hub URL] [--token T] [--json]"

// submit is `paprika submit`: create a job, print its id, and with --wait
// or --follow stay until it ends; the exit status is then 0 only if it
// succeeded.
func (c *cli) submit(ctx context.Context, args []string) int {
	fs := newFlagSet("submit")
	cf := c.addClientFlags(fs)
	mode := fs.String("mode", "", "job `mode`: noop, fetch, macro or a mode a worker declares (required; see paprika modes)")
	params := newParamFlag()
	fs.Var(params, "param", "job parameter `KEY=VALUE`, repeatable; VALUE is JSON when it parses (10, true, [..], {..}) else a string; KEY=@FILE reads FILE")
	paramsJSON := &paramJSON{}
	fs.Var(paramsJSON, "param-json", "the job's params as one JSON `object`; each --param then sets (replaces) its key in it")
	labels := labelFlag{}
	fs.Var(labels, "label", "job label `KEY=VALUE`, repeatable")
	wait := fs.Bool("wait", false, "wait until the job ends; exit 0 only if it succeeded")
	follow := fs.Bool("follow", false, "stream the job's log until it ends (implies --wait)")
	timeoutS := fs.Int("timeout-s", 0, "hard deadline in `seconds` from creation (default: the hub's jobs.default_timeout)")
	maxAttempts := fs.Int("max-attempts", 0, "`attempts` before the job fails (default: the hub's jobs.max_attempts)")
	key := fs.String("idempotency-key", "", "`key` that makes a repeated submit return the first job (default: a fresh one)")
	tenant := fs.String("tenant", "", "the job's `tenant` (default: the hub's scheduler.tenant_label label, else the default tenant)")

	pos, code := c.parseOrExit(fs, submitSynopsis, args)
	if code >= 0 {
		return code
	}
	switch {
	case len(pos) > 0:
		return c.usageError(fs.Name(), fmt.Sprintf("unexpected argument %q", pos[0]))
	case strings.TrimSpace(*mode) == "":
		return c.usageError(fs.Name(), "flag -mode is required (noop, fetch or macro)")
	case *timeoutS < 0:
		return c.usageError(fs.Name(), fmt.Sprintf("flag -timeout-s: %d is not a positive number of seconds", *timeoutS))
	case *maxAttempts < 0:
		return c.usageError(fs.Name(), fmt.Sprintf("flag -max-attempts: %d is not a positive number", *maxAttempts))
	}
	cl, code := c.hubClient(fs, cf)
	if code >= 0 {
		return code
	}

	req := client.SubmitRequest{
		Mode:        strings.TrimSpace(*mode),
		Params:      paramsJSON.merge(params.params()),
		TimeoutS:    *timeoutS,
		MaxAttempts: *maxAttempts,
		Tenant:      *tenant,
	}
	if len(labels) > 0 {
		req.Labels = labels
	}
	job, err := cl.Submit(ctx, req, *key)
	if err != nil {
		return c.fail(ctx, "submit", err)
	}
	if !cf.json {
		fmt.Fprintln(c.stdout, job.ID)
	}
	if !*wait && !*follow {
		if cf.json {
			return c.printJSON("submit", job)
		}
		return exitOK
	}

	if *follow {
		// Under --json stdout carries the job only; the log goes to stderr.
		logOut := c.stdout
		if cf.json {
			logOut = c.stderr
		}
		if err := cl.Follow(ctx, job.ID, func(line string) { fmt.Fprintln(logOut, line) }); err != nil {
			return c.stillRunning(ctx, job.ID, err)
		}
	}
	job, err = cl.Wait(ctx, job.ID)
	if err != nil {
		return c.stillRunning(ctx, job.ID, err)
	}
	fmt.Fprintln(c.stderr, outcome(job))
	if cf.json {
		if code := c.printJSON("submit", job); code != exitOK {
			return code
		}
	}
	if job.Status != client.StatusSucceeded {
		return exitFail
	}
	return exitOK
}

// stillRunning reports that we stopped watching a job that goes on.
func (c *cli) stillRunning(ctx context.Context, id string, err error) int {
	code := c.fail(ctx, "submit", err)
	fmt.Fprintf(c.stderr, "job %s keeps running; watch it with `paprika jobs get %s`, stop it with `paprika jobs cancel %s`\n", id, id, id)
	return code
}

// outcome is the one-line end of a job: "job j1 succeeded in 1.2s",
// "job j1 failed (job_error): boom".
func outcome(job client.Job) string {
	s := fmt.Sprintf("job %s %s", job.ID, job.Status)
	if job.Reason != "" && job.Reason != string(job.Status) {
		s += " (" + job.Reason + ")"
	}
	if job.Error != "" {
		s += ": " + job.Error
	}
	if !job.StartedAt.IsZero() && !job.FinishedAt.IsZero() && job.Status == client.StatusSucceeded {
		s += " in " + compactDuration(job.FinishedAt.Sub(job.StartedAt))
	}
	return s
}

// printJSON writes v as indented JSON on stdout.
func (c *cli) printJSON(name string, v any) int {
	if err := writeJSON(c.stdout, v); err != nil {
		fmt.Fprintf(c.stderr, "paprika %s: %v\n", name, err)
		return exitFail
	}
	return exitOK
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("encode json: %w", err)
	}
	return nil
}

// compactDuration renders d for a table: "850ms", "1.2s", "3m4s", "2h5m".
func compactDuration(d time.Duration) string {
	switch {
	case d < 0:
		return "-"
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	case d < time.Hour:
		return d.Round(time.Second).String()
	default:
		return strings.TrimSuffix(d.Round(time.Minute).String(), "0s")
	}
}
