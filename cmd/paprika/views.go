package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/paprika-hub/paprika/client"
)

const workersSynopsis = "paprika workers [ls | drain ID | activate ID | standby ID] [--hub URL] [--json]"

// workers is `paprika workers`: the fleet as a table, or a status change
// for one worker.
func (c *cli) workers(ctx context.Context, args []string) int {
	sub, args, code := c.subcommand(args, workersSynopsis, "Subcommands (default ls):\n"+
		"  ls         list the fleet\n  drain      let the worker finish its jobs and take no new ones\n"+
		"  activate   let the worker take jobs again\n  standby    keep the worker connected but idle\n")
	if code >= 0 {
		return code
	}
	status := map[string]string{"drain": client.WorkerDrain, "activate": client.WorkerActive, "standby": client.WorkerStandby}
	if sub != "ls" && sub != "list" && status[sub] == "" {
		return c.usageError("paprika workers", fmt.Sprintf("unknown subcommand %q (ls, drain, activate, standby)", sub))
	}
	fs := newFlagSet("workers " + sub)
	cf := c.addClientFlags(fs)
	pos, code := c.parseOrExit(fs, workersSynopsis, args)
	if code >= 0 {
		return code
	}
	var id string
	if status[sub] != "" {
		if id, code = c.oneID(fs.Name(), pos); code >= 0 {
			return code
		}
	} else if len(pos) > 0 {
		return c.usageError(fs.Name(), fmt.Sprintf("unexpected argument %q", pos[0]))
	}
	cl, code := c.hubClient(fs, cf)
	if code >= 0 {
		return code
	}
	if id != "" {
		return show(ctx, c, cf, "workers "+sub, func(ctx context.Context) (client.Worker, error) {
			return cl.SetWorkerStatus(ctx, id, status[sub])
		}, func(w client.Worker) { fmt.Fprintf(c.stdout, "worker %s is %s\n", w.ID, w.Status) })
	}
	return show(ctx, c, cf, "workers", func(ctx context.Context) (workerList, error) {
		ws, err := cl.Workers(ctx)
		return workerList{ws}, err
	}, func(l workerList) { renderWorkers(c.stdout, l.Workers, c.now()) })
}

// workerList and hubList are what --json prints for `paprika workers` and
// `paprika hubs`: the hub's own answer.
type (
	workerList struct {
		Workers []client.Worker `json:"workers"`
	}
	hubList struct {
		Hubs []client.Hub `json:"hubs"`
	}
)

// hubs is `paprika hubs`: the cluster's hubs as a table.
func (c *cli) hubs(ctx context.Context, args []string) int {
	return listView(ctx, c, "hubs", args, func(ctx context.Context, cl *client.Client) (hubList, error) {
		hs, err := cl.Hubs(ctx)
		return hubList{hs}, err
	}, func(l hubList) { renderHubs(c.stdout, l.Hubs, c.now()) })
}

// listView is a command without arguments that shows one answer of the
// hub (`paprika hubs`, `paprika modes`): its flags are the client's, and
// it prints the answer as show does.
func listView[T any](ctx context.Context, c *cli, name string, args []string,
	call func(context.Context, *client.Client) (T, error), text func(T)) int {
	fs := newFlagSet(name)
	cf := c.addClientFlags(fs)
	pos, code := c.parseOrExit(fs, "paprika "+name+" [--hub URL] [--json]", args)
	if code >= 0 {
		return code
	}
	if len(pos) > 0 {
		return c.usageError(fs.Name(), fmt.Sprintf("unexpected argument %q", pos[0]))
	}
	cl, code := c.hubClient(fs, cf)
	if code >= 0 {
		return code
	}
	return show(ctx, c, cf, name, func(ctx context.Context) (T, error) { return call(ctx, cl) }, text)
}

// show makes one call, bounded by viewTimeout, and prints its answer: as
// JSON with --json, else with text. A failure is reported as command
// name's and returned as the exit status.
func show[T any](ctx context.Context, c *cli, cf *clientFlags, name string, call func(context.Context) (T, error), text func(T)) int {
	ctx, cancel := context.WithTimeout(ctx, viewTimeout)
	defer cancel()
	v, err := call(ctx)
	if err != nil {
		return c.fail(ctx, name, err)
	}
	if cf.json {
		return c.printJSON(name, v)
	}
	text(v)
	return exitOK
}

// table writes tab-separated rows as aligned columns.
type table struct{ tw *tabwriter.Writer }

func newTable(w io.Writer, header ...string) table {
	t := table{tw: tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)}
	t.row(header...)
	return t
}

func (t table) row(cells ...string) {
	for i, s := range cells {
		if s == "" {
			cells[i] = "-"
		} else {
			// A tab or newline inside a cell would break the columns;
			// escaping here (the writer would too) keeps the widths right.
			cells[i] = termSafe(strings.NewReplacer("\t", " ", "\n", " ", "\r", " ").Replace(s))
		}
	}
	fmt.Fprintln(t.tw, strings.Join(cells, "\t"))
}

func (t table) flush() { _ = t.tw.Flush() }

// renderList writes items as a table under header, one row each, or "no
// <what>" when there are none.
func renderList[T any](w io.Writer, what string, items []T, header []string, row func(T) []string) {
	if len(items) == 0 {
		fmt.Fprintln(w, "no "+what)
		return
	}
	t := newTable(w, header...)
	for _, it := range items {
		t.row(row(it)...)
	}
	t.flush()
}

// renderJobs writes jobs as a table, in the order given (newest first from
// the hub).
func renderJobs(w io.Writer, jobs []client.Job, now time.Time) {
	renderList(w, "jobs", jobs, []string{"ID", "MODE", "STATUS", "REASON", "WORKER", "ATTEMPTS", "AGE", "DURATION"}, func(j client.Job) []string {
		return []string{j.ID, j.Mode, string(j.Status), j.Reason, j.WorkerID,
			fmt.Sprintf("%d/%d", j.Attempts, j.MaxAttempts), age(now, j.CreatedAt), runTime(j, now)}
	})
}

// renderJob writes one job as a two-column table of its fields.
func renderJob(w io.Writer, j client.Job, now time.Time) {
	t := table{tw: tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)}
	t.row("ID", j.ID)
	t.row("MODE", j.Mode)
	t.row("STATUS", string(j.Status))
	t.row("REASON", j.Reason)
	t.row("ERROR", j.Error)
	t.row("WORKER", j.WorkerID)
	t.row("LANE", j.Lane)
	t.row("ATTEMPTS", fmt.Sprintf("%d/%d", j.Attempts, j.MaxAttempts))
	t.row("TIMEOUT", timeoutText(j.TimeoutS))
	t.row("CREATED", stamp(now, j.CreatedAt))
	t.row("STARTED", stamp(now, j.StartedAt))
	t.row("FINISHED", stamp(now, j.FinishedAt))
	t.row("DURATION", runTime(j, now))
	t.row("PARAMS", compactJSON(j.Params))
	t.row("RESULT", compactJSON(j.Result))
	t.row("ASSETS", strings.Join(j.Assets, ", "))
	t.row("LABELS", joinPairs(j.Labels))
	attemptRows(t, j, now)
	t.flush()
}

// renderWorkers writes the fleet as a table sorted by worker id.
func renderWorkers(w io.Writer, ws []client.Worker, now time.Time) {
	ws = slices.SortedFunc(slices.Values(ws), func(a, b client.Worker) int { return cmp.Compare(a.ID, b.ID) })
	renderList(w, "workers", ws, []string{"ID", "HUB", "STATUS", "ALIVE", "JOBS", "LANES", "CPU", "MEM", "DISK", "SEEN"}, func(wk client.Worker) []string {
		return []string{wk.ID, wk.Hub, wk.Status, yesNo(wk.Alive),
			fmt.Sprintf("%d/%d", wk.InFlight, wk.MaxConcurrent), strconv.Itoa(wk.LaneCount()),
			pct(wk.CPUPct), pct(wk.MemPct), pct(wk.DiskPct), age(now, wk.LastSeen)}
	})
}

// renderHubs writes the cluster's hubs as a table sorted by hub id; "*"
// marks the hub that answered.
func renderHubs(w io.Writer, hs []client.Hub, now time.Time) {
	hs = slices.SortedFunc(slices.Values(hs), func(a, b client.Hub) int { return cmp.Compare(a.ID, b.ID) })
	renderList(w, "hubs", hs, []string{"ID", "ADDRESS", "ALIVE", "LOCAL", "UPTIME", "SEEN"}, func(h client.Hub) []string {
		local := ""
		if h.Local {
			local = "*"
		}
		uptime := ""
		if h.Alive {
			uptime = age(now, h.StartedAt)
		}
		return []string{h.ID, h.Address, yesNo(h.Alive), local, uptime, age(now, h.LastSeen)}
	})
}

// age renders how long ago t was: "45s", "3m", "5h", "2d"; "" for a zero t.
func age(now, t time.Time) string {
	if t.IsZero() {
		return ""
	}
	d := max(now.Sub(t), 0)
	switch {
	case d < time.Minute:
		return strconv.Itoa(int(d/time.Second)) + "s"
	case d < time.Hour:
		return strconv.Itoa(int(d/time.Minute)) + "m"
	case d < 48*time.Hour:
		return strconv.Itoa(int(d/time.Hour)) + "h"
	default:
		return strconv.Itoa(int(d/(24*time.Hour))) + "d"
	}
}

// stamp renders an absolute time with its age: "2026-01-02T03:04:05Z (5m ago)".
func stamp(now, t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339) + " (" + age(now, t) + " ago)"
}

// runTime is how long the job ran, or has been running.
func runTime(j client.Job, now time.Time) string {
	if j.StartedAt.IsZero() {
		return ""
	}
	end := j.FinishedAt
	if end.IsZero() {
		end = now
	}
	return compactDuration(end.Sub(j.StartedAt))
}

func timeoutText(s int) string {
	if s <= 0 {
		return ""
	}
	return strconv.Itoa(s) + "s"
}

func pct(p float64) string { return strconv.FormatFloat(p, 'f', 0, 64) + "%" }

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// compactJSON renders raw JSON on one line; "" for none or null.
func compactJSON(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}
