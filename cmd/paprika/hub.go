package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/paprika-hub/paprika/config"
	"github.com/paprika-hub/paprika/hub"
)

// serverFlags are the flags `hub` and `up` share.
type serverFlags struct {
	configPath string
	listen     string
	logLevel   string
}

func (f *serverFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.configPath, "config", "", "config file (default ./config.yaml when present)")
	fs.StringVar(&f.listen, "listen", "", "API listen address host:port (hub.listen; default 127.0.0.1:8080)")
	fs.StringVar(&f.logLevel, "log-level", "info", "log level: debug, info, warn, error")
}

// load layers defaults, file, env and flags, then validates: one clear line
// per problem, naming the key.
func (f *serverFlags) load(stderr io.Writer) (*config.Config, bool) {
	cfg, err := config.Load(f.configPath, os.Environ())
	if err == nil && f.listen != "" {
		err = cfg.Set("hub.listen", f.listen)
	}
	if err == nil {
		err = cfg.Validate()
	}
	if err != nil {
		fmt.Fprintf(stderr, "paprika: invalid configuration: %v\n", err)
		return nil, false
	}
	return cfg, true
}

func newLogger(level string, stderr io.Writer) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q is not one of debug, info, warn, error", level)
	}
	return slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: l})), nil
}

// runHub is `paprika hub`: a hub only, until SIGINT/SIGTERM.
func runHub(args []string) int {
	fs := flag.NewFlagSet("paprika hub", flag.ContinueOnError)
	var sf serverFlags
	sf.register(fs)
	check := fs.Bool("check-config", false, "validate the configuration, print it and exit")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	cfg, ok := sf.load(os.Stderr)
	if !ok {
		return 2
	}
	if *check {
		fmt.Println("configuration ok")
		_ = cfg.WriteYAML(os.Stdout)
		return 0
	}
	log, err := newLogger(sf.logLevel, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "paprika:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	h, err := startHub(ctx, cfg, log)
	if err != nil {
		fmt.Fprintln(os.Stderr, "paprika:", err)
		return 1
	}
	fmt.Printf("paprika hub %s listening on %s (admin UI %s/ui/)\n", h.ID(), h.URL(), h.URL())
	select {
	case <-ctx.Done():
		return stopHub(h, log)
	case <-h.Lost():
		// Dropped from the cluster: leave quickly; the supervisor starts a
		// fresh member (protoactor never re-admits a dropped member id).
		stopHub(h, log)
		return 3
	}
}

// startHub builds and starts a hub, containing any panic of protoactor's
// start-up at this boundary.
func startHub(ctx context.Context, cfg *config.Config, log *slog.Logger) (h *hub.Hub, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("hub start failed: %v", r)
		}
	}()
	h, err = hub.New(cfg, log)
	if err != nil {
		return nil, err
	}
	if err := h.Start(ctx); err != nil {
		return nil, err
	}
	return h, nil
}

func stopHub(h *hub.Hub, log *slog.Logger) int {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := h.Stop(ctx); err != nil && !errors.Is(err, context.Canceled) {
		log.Error("hub stop", slog.Any("err", err))
		return 1
	}
	return 0
}
