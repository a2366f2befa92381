package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/paprika-hub/paprika/agent"
)

// runUp is `paprika up`: a hub plus N local workers in one process, on
// embedded defaults unless a config says otherwise. Ctrl-C stops the
// workers first (they finish their jobs), then the hub.
func runUp(args []string) int {
	fs := flag.NewFlagSet("paprika up", flag.ContinueOnError)
	var sf serverFlags
	sf.register(fs)
	workers := fs.Int("workers", 2, "local workers to start")
	lanes := fs.Int("lanes", 4, "lanes per local worker")
	driver := fs.String("driver", agent.DefaultDriver, "lane driver: simulated or chromium")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *workers < 0 || *workers > 64 {
		fmt.Fprintf(os.Stderr, "paprika up: --workers %d is out of range 0..64\n", *workers)
		return 2
	}
	cfg, ok := sf.load(os.Stderr)
	if !ok {
		return 2
	}
	log, err := newLogger(sf.logLevel, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "paprika up:", err)
		return 2
	}
	t0 := time.Now()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	h, err := startHub(ctx, cfg, log)
	if err != nil {
		fmt.Fprintln(os.Stderr, "paprika up:", err)
		return 1
	}
	if *driver != agent.DriverSimulated && *driver != agent.DriverChromium {
		fmt.Fprintf(os.Stderr, "paprika up: --driver %q is not one of simulated, chromium\n", *driver)
		stopHub(h, log)
		return 2
	}
	built := make([]*builtWorker, 0, *workers)
	for i := 1; i <= *workers; i++ {
		id := fmt.Sprintf("local-%d", i)
		w, err := workerSpec{driver: *driver, cfg: agent.Config{HubURLs: []string{h.URL()}, ID: id, Lanes: *lanes,
			Token: cfg.Auth.WorkerToken, Logger: log}, driverLog: log.With(slog.String("worker_id", id))}.build()
		if err != nil {
			fmt.Fprintln(os.Stderr, "paprika up:", err)
			for _, b := range built {
				_ = b.close()
			}
			stopHub(h, log)
			return 2
		}
		built = append(built, w)
	}
	wctx, stopWorkers := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, w := range built {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := w.agent.Run(wctx); err != nil && !errors.Is(err, context.Canceled) {
				log.Error("local worker stopped", slog.String("worker_id", w.agent.ID()), slog.Any("err", err))
			}
			_ = w.close()
		}()
	}
	fmt.Printf("paprika is up in %s: API %s  admin UI %s/ui/  (%d workers × %d lanes, driver %s; Ctrl-C stops)\n",
		time.Since(t0).Round(time.Millisecond), h.URL(), h.URL(), *workers, *lanes, *driver)
	<-ctx.Done()
	fmt.Fprintln(os.Stderr, "paprika up: stopping workers, then the hub")
	stopWorkers()
	wg.Wait()
	return stopHub(h, log)
}
