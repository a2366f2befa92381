package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/paprika-hub/paprika/agent"
)

// hubURLs is a repeatable --hub flag that also takes a comma list.
type hubURLs []string

func (h *hubURLs) String() string { return strings.Join(*h, ",") }

func (h *hubURLs) Set(v string) error {
	for _, u := range strings.Split(v, ",") {
		if u = strings.TrimSpace(u); u != "" {
			*h = append(*h, u)
		}
	}
	return nil
}

// runWorker is `paprika worker`: a worker agent until SIGINT/SIGTERM, which
// stops taking jobs, finishes the running ones and exits 0.
func runWorker(args []string) int {
	fs := flag.NewFlagSet("paprika worker", flag.ContinueOnError)
	var hubs hubURLs
	fs.Var(&hubs, "hub", "hub base URL, e.g. http://127.0.0.1:8080 (repeat or comma list; reconnects go to the next)")
	id := fs.String("id", "", "worker id (default: derived from the LAN IP, 10.10.50.150 → w50150)")
	lanes := fs.Int("lanes", agent.DefaultLanes, "number of lanes (jobs at once)")
	driver := fs.String("driver", agent.DefaultDriver, "lane driver: simulated or chromium")
	token := fs.String("token", os.Getenv("PAPRIKA_AUTH_WORKER_TOKEN"), "worker token (default $PAPRIKA_AUTH_WORKER_TOKEN)")
	execLog := fs.String("exec-log", "", "append one line per job execution to this file (tests)")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn, error")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if len(hubs) == 0 {
		fmt.Fprintln(os.Stderr, "paprika worker: --hub is required (e.g. --hub http://127.0.0.1:8080)")
		return 2
	}
	log, err := newLogger(*logLevel, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "paprika worker:", err)
		return 2
	}
	a, err := agent.New(agent.Config{HubURLs: hubs, ID: *id, Lanes: *lanes, Driver: *driver, Token: *token,
		ExecLog: *execLog, Logger: log})
	if err != nil {
		fmt.Fprintln(os.Stderr, "paprika worker:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := a.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
		log.Error("worker stopped", "err", err)
		return 1
	}
	return 0
}
