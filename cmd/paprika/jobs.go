package main

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/paprika-hub/paprika/client"
)

// viewTimeout bounds a one-shot operator view, retries included, so a hung
// hub does not hang a script.
const viewTimeout = 60 * time.Second

const jobsSynopsis = "paprika jobs [ls | get ID | logs ID [-f] | cancel ID | retry ID...]"

// jobs is `paprika jobs`: list, show, read the log of, or cancel jobs.
func (c *cli) jobs(ctx context.Context, args []string) int {
	sub, args, code := c.subcommand(args, jobsSynopsis, "Subcommands (default ls; each takes -h):\n"+
		"  ls       list jobs, newest first\n  get      show one job\n"+
		"  logs     print a job's log; -f follows it\n  cancel   cancel a job\n"+
		"  retry    run failed jobs again under a new attempt\n")
	if code >= 0 {
		return code
	}
	switch sub {
	case "ls", "list":
		return c.jobsList(ctx, args)
	case "get", "show":
		return c.jobCommand(ctx, "jobs get", args, (*client.Client).Get,
			func(job client.Job) { renderJob(c.stdout, job, c.now()) })
	case "logs", "log":
		return c.jobsLogs(ctx, args)
	case "cancel":
		return c.jobCommand(ctx, "jobs cancel", args, (*client.Client).Cancel,
			func(job client.Job) { fmt.Fprintln(c.stdout, outcome(job)) })
	case "retry":
		return c.jobsRetry(ctx, args)
	default:
		return c.usageError("paprika jobs", fmt.Sprintf("unknown subcommand %q (ls, get, logs, cancel, retry)", sub))
	}
}

func (c *cli) jobsList(ctx context.Context, args []string) int {
	fs := newFlagSet("jobs ls")
	cf := c.addClientFlags(fs)
	status := fs.String("status", "", "only jobs in this `status`: "+statusList())
	limit := fs.Int("limit", 0, "at most `N` jobs (default: the hub's page size)")
	cursor := fs.String("cursor", "", "continue from this `cursor` (printed after a full page)")
	tenant := fs.String("tenant", "", "only this `tenant`'s jobs (--tenant= is the default tenant)")
	priority := fs.Int("priority", -1, "only jobs of this `priority` (0..9)")
	mode := fs.String("mode", "", "only jobs of this `mode`")
	worker := fs.String("worker", "", "only jobs of this worker (`id`)")
	reason := fs.String("reason", "", "only jobs that ended for this `reason` (--status failed --reason job_error: the dead jobs)")
	labels := labelFlag{}
	fs.Var(labels, "label", "only jobs carrying label `KEY=VALUE`; repeatable (all must match)")
	pos, code := c.parseOrExit(fs, "paprika jobs ls [--status S] [--mode M] [--worker W] [--label k=v ...] [--reason R] [--tenant T] [--priority P] [--limit N] [--cursor C] [--hub URL] [--json]", args)
	if code >= 0 {
		return code
	}
	opts := client.ListOptions{Status: client.Status(*status), Limit: *limit, Cursor: *cursor,
		Mode: *mode, WorkerID: *worker, Reason: *reason, Labels: labels}
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "tenant":
			opts.Tenant = tenant
		case "priority":
			opts.Priority = priority
		}
	})
	if opts.Priority != nil && (*priority < 0 || *priority > 9) {
		return c.usageError(fs.Name(), fmt.Sprintf("flag -priority: %d is not in 0..9", *priority))
	}
	switch {
	case len(pos) > 0:
		return c.usageError(fs.Name(), fmt.Sprintf("unexpected argument %q", pos[0]))
	case *status != "" && !slices.Contains(client.Statuses, client.Status(*status)):
		return c.usageError(fs.Name(), fmt.Sprintf("flag -status: %q is not one of %s", *status, statusList()))
	case *limit < 0:
		return c.usageError(fs.Name(), fmt.Sprintf("flag -limit: %d is negative", *limit))
	}
	cl, code := c.hubClient(fs, cf)
	if code >= 0 {
		return code
	}
	return show(ctx, c, cf, "jobs ls", func(ctx context.Context) (client.Page, error) {
		return cl.List(ctx, opts)
	}, func(page client.Page) {
		renderJobs(c.stdout, page.Jobs, c.now())
		if page.NextCursor != "" {
			fmt.Fprintf(c.stderr, "more: paprika jobs ls --cursor %s\n", page.NextCursor)
		}
	})
}

func statusList() string {
	names := make([]string, len(client.Statuses))
	for i, s := range client.Statuses {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}

// oneID checks that exactly one job or worker id was given.
func (c *cli) oneID(name string, pos []string) (string, int) {
	switch len(pos) {
	case 0:
		return "", c.usageError(name, "missing ID")
	case 1:
		return pos[0], -1
	default:
		return "", c.usageError(name, fmt.Sprintf("unexpected argument %q", pos[1]))
	}
}

// idCommand parses a one-job command's flags and ID and builds its client;
// code >= 0 means stop with that exit status.
func (c *cli) idCommand(fs *flag.FlagSet, cf *clientFlags, usage string, args []string) (string, *client.Client, int) {
	pos, code := c.parseOrExit(fs, usage, args)
	if code >= 0 {
		return "", nil, code
	}
	id, code := c.oneID(fs.Name(), pos)
	if code >= 0 {
		return "", nil, code
	}
	cl, code := c.hubClient(fs, cf)
	return id, cl, code
}

// jobCommand is a one-job command whose answer is the job (`jobs get`,
// `jobs cancel`): call on the job given, the answer printed by text or as
// JSON.
func (c *cli) jobCommand(ctx context.Context, name string, args []string,
	call func(*client.Client, context.Context, string) (client.Job, error), text func(client.Job)) int {
	fs := newFlagSet(name)
	cf := c.addClientFlags(fs)
	id, cl, code := c.idCommand(fs, cf, "paprika "+name+" ID [--hub URL] [--json]", args)
	if code >= 0 {
		return code
	}
	return show(ctx, c, cf, name, func(ctx context.Context) (client.Job, error) { return call(cl, ctx, id) }, text)
}

func (c *cli) jobsLogs(ctx context.Context, args []string) int {
	fs := newFlagSet("jobs logs")
	cf := c.addClientFlags(fs)
	var follow bool
	fs.BoolVar(&follow, "f", false, "follow the log until the job ends")
	fs.BoolVar(&follow, "follow", false, "same as -f")
	id, cl, code := c.idCommand(fs, cf, "paprika jobs logs ID [-f] [--hub URL]", args)
	if code >= 0 {
		return code
	}
	if follow {
		if err := cl.Follow(ctx, id, func(line string) { fmt.Fprintln(c.stdout, line) }); err != nil {
			return c.fail(ctx, "jobs logs", err)
		}
		return exitOK
	}
	ctx, cancel := context.WithTimeout(ctx, viewTimeout)
	defer cancel()
	text, err := cl.Logs(ctx, id)
	if err != nil {
		return c.fail(ctx, "jobs logs", err)
	}
	fmt.Fprint(c.stdout, text)
	if text != "" && !strings.HasSuffix(text, "\n") {
		fmt.Fprintln(c.stdout)
	}
	return exitOK
}
