// Command paprika is the one Paprika binary: hub, worker, both at once
// (up), and the client commands (submit, jobs, workers, hubs, sessions).
package main

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"github.com/paprika-hub/paprika/client"
)

// version is the release, set at build time with
// -ldflags "-X main.version=v1.2.3".
var version = "dev"

// Exit statuses of every command.
const (
	exitOK          = 0   // done; for submit --wait/--follow: the job succeeded
	exitFail        = 1   // the job failed, or the hub said no or could not be reached
	exitUsage       = 2   // bad command, flag or configuration
	exitInterrupted = 130 // Ctrl-C / SIGTERM
)

const usage = `paprika — a clustered job hub for browser automation

Usage:
  paprika up [--config F] [--listen ADDR] [--workers N] [--lanes M] [--driver D]
  paprika hub [--config F] [--listen ADDR]
  paprika worker --hub URL [--id ID] [--lanes M] [--driver chromium|simulated] [--token T] [--ca F] [--insecure]
  paprika submit --mode MODE [--param-json '{...}'] [--param k=v ...] [--label k=v ...] [--wait] [--follow]
  paprika jobs [ls [--status S] [--mode M] [--worker W] [--label k=v ...] [--reason R] [--limit N] [--cursor C] | get ID | logs ID [-f] | cancel ID]
  paprika workers [ls | drain ID | activate ID | standby ID]
  paprika hubs
  paprika modes                     (the modes the fleet's workers run, with their schemas)
  paprika sessions [ls | new [--label k=v ...] [--idle-timeout D] [--proxy URL] [--viewport WxH] ... | rm ID...]
  paprika bench ...
  paprika token worker --id ID      (prints the worker's credential; needs $PAPRIKA_AUTH_WORKER_SECRET)
  paprika certs ca --dir D | certs hub --dir D --host H[,H2]
  paprika version
  paprika help [COMMAND]

Client commands (submit, jobs, workers, hubs, modes, sessions) take --hub URL (default
$PAPRIKA_HUB or http://127.0.0.1:8080; a comma list fails over), --token T
(default $PAPRIKA_API_TOKEN), --ca F (the CA of an https:// hub's
certificate; default $PAPRIKA_CA) and --json. "paprika COMMAND -h" lists a
command's flags.

Exit status: 0 success, 1 failure (job failed, hub error), 2 bad usage or
configuration, 130 interrupted.
`

func main() {
	args := os.Args[1:]
	ctx, stop := context.Background(), func() {}
	// The server commands (up, hub, worker) own their process, signals
	// included; the client commands stop on Ctrl-C through ctx.
	if len(args) == 0 || !serverCommand(args[0]) {
		ctx, stop = signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	}
	code := newCLI().run(ctx, args)
	stop()
	os.Exit(code)
}

// serverCommand reports the commands that run a hub or a worker.
func serverCommand(name string) bool {
	return name == "up" || name == "hub" || name == "worker"
}

// cli carries what the client commands touch of the outside world, so
// tests can run them in-process.
type cli struct {
	stdout, stderr io.Writer
	getenv         func(string) string
	now            func() time.Time
	httpClient     *http.Client // nil: the SDK's default
}

func newCLI() *cli {
	return &cli{stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv, now: time.Now}
}

// run dispatches a client command and returns its exit status.
func (c *cli) run(ctx context.Context, args []string) int {
	// The output boundary: what the hub sent (job fields, errors, logs) is
	// printed through termSafe, so it cannot drive the operator's terminal.
	c.stdout, c.stderr = terminalSafe(c.stdout), terminalSafe(c.stderr)
	if len(args) == 0 {
		fmt.Fprint(c.stderr, usage)
		return exitUsage
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "up":
		return runUp(rest)
	case "hub":
		return runHub(rest)
	case "worker":
		return runWorker(rest)
	case "submit":
		return c.submit(ctx, rest)
	case "jobs":
		return c.jobs(ctx, rest)
	case "workers":
		return c.workers(ctx, rest)
	case "hubs":
		return c.hubs(ctx, rest)
	case "modes":
		return c.modes(ctx, rest)
	case "sessions":
		return c.sessions(ctx, rest)
	case "bench":
		return runBench(rest)
	case "token":
		return c.token(rest)
	case "certs":
		return c.certs(rest)
	case "version", "--version", "-version":
		fmt.Fprintf(c.stdout, "paprika %s (%s, %s/%s)\n", version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
		return exitOK
	case "help", "-h", "-help", "--help":
		return c.help(ctx, rest)
	default:
		fmt.Fprintf(c.stderr, "paprika: unknown command %q\n\n%s", cmd, usage)
		return exitUsage
	}
}

// help prints the overview, or one command's help.
func (c *cli) help(ctx context.Context, args []string) int {
	if len(args) == 0 {
		fmt.Fprint(c.stdout, usage)
		return exitOK
	}
	switch args[0] {
	case "version", "help":
		fmt.Fprint(c.stdout, usage)
		return exitOK
	case "bench":
		return runBench([]string{"-h"})
	}
	return c.run(ctx, []string{args[0], "-h"})
}

// fail reports err from command name on stderr, with a hint for the
// common causes, and returns the exit status.
func (c *cli) fail(ctx context.Context, name string, err error) int {
	if ctx.Err() != nil && errors.Is(err, context.Canceled) {
		fmt.Fprintf(c.stderr, "paprika %s: interrupted\n", name)
		return exitInterrupted
	}
	fmt.Fprintf(c.stderr, "paprika %s: %v\n", name, err)
	if hint := hintFor(err); hint != "" {
		fmt.Fprintf(c.stderr, "hint: %s\n", hint)
	}
	return exitFail
}

// hintFor suggests a fix for errors an operator meets first.
func hintFor(err error) string {
	switch {
	case client.IsStatus(err, http.StatusUnauthorized), client.IsStatus(err, http.StatusForbidden):
		return "pass the hub's API token with --token or $" + envToken
	case errors.As(err, new(x509.UnknownAuthorityError)):
		return "the hub's certificate is from a CA this machine does not trust: pass it with --ca or $" + envCA
	case errors.Is(err, syscall.ECONNREFUSED):
		return "is a hub running there? start one with `paprika up`, or point --hub or $" + envHub + " at it"
	}
	return ""
}
