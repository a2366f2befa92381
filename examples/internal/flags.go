// Package internal holds what the example workers share: their command
// line (which hub, which id, how many lanes) and the run loop until
// SIGINT/SIGTERM.
package internal

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/paprika-hub/paprika/worker"
)

// Options parses the example worker's flags into worker.Options (Driver
// and the modes are the example's own).
func Options(name string, args []string) (worker.Options, error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	hubs := fs.String("hub", "http://127.0.0.1:8080", "hub base URLs, comma-separated")
	id := fs.String("id", name, "worker id")
	lanes := fs.Int("lanes", 2, "jobs at once")
	token := fs.String("token", os.Getenv("PAPRIKA_AUTH_WORKER_TOKEN"), "worker token (default $PAPRIKA_AUTH_WORKER_TOKEN)")
	ca := fs.String("ca", os.Getenv("PAPRIKA_CA"), "PEM file of the CA of the hubs' HTTPS certificates")
	chromiumPath := fs.String("chromium", "", "path to Chromium (default: found on PATH)")
	level := fs.String("log-level", "info", "log level: debug, info, warn, error")
	if err := fs.Parse(args); err != nil {
		return worker.Options{}, err
	}
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(*level)); err != nil {
		return worker.Options{}, fmt.Errorf("--log-level: %w", err)
	}
	o := worker.Options{ID: *id, Lanes: *lanes, Token: *token, CAFile: *ca,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lv}))}
	o.Chromium.Path = *chromiumPath
	for _, h := range strings.Split(*hubs, ",") {
		if h = strings.TrimSpace(h); h != "" {
			o.Hubs = append(o.Hubs, h)
		}
	}
	return o, nil
}

// Run serves until SIGINT or SIGTERM, then drains; it returns the exit
// status.
func Run(name string, w *worker.Worker) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := w.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		return 1
	}
	return 0
}
