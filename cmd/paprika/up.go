package main

import (
	"context"
	"crypto/x509"
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
	"github.com/paprika-hub/paprika/config"
	"github.com/paprika-hub/paprika/worker"
)

// localRoots is what up's local workers trust for the hub's HTTPS
// certificate: the certificates of hub.tls_cert itself (leaf and chain).
// Go accepts a leaf found in the root pool, so this works for a
// certificate from a private CA and a self-signed one alike, with no CA
// file to pass; nil when the hub serves plain HTTP.
func localRoots(cfg *config.Config) (*x509.CertPool, error) {
	if !cfg.Hub.TLSEnabled() {
		return nil, nil
	}
	pem, err := os.ReadFile(cfg.Hub.TLSCert)
	if err != nil {
		return nil, fmt.Errorf("hub.tls_cert: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("hub.tls_cert: %s holds no PEM certificate", cfg.Hub.TLSCert)
	}
	return pool, nil
}

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
	roots, err := localRoots(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "paprika up:", err)
		stopHub(h, log)
		return 2
	}
	built := make([]*worker.Worker, 0, *workers)
	for i := 1; i <= *workers; i++ {
		id := fmt.Sprintf("local-%d", i)
		// Insecure: the local workers dial this process's own listener
		// (h.URL() may spell it 0.0.0.0 or advertise_url's name), so the
		// token does not leave the machine even over plain http.
		w, err := workerSpec{driver: *driver, cfg: agent.Config{HubURLs: []string{h.URL()}, ID: id, Lanes: *lanes,
			Token: cfg.Auth.WorkerToken, RootCAs: roots, Insecure: !cfg.Hub.TLSEnabled(), Logger: log},
			driverLog: log.With(slog.String("worker_id", id))}.build()
		if err != nil {
			fmt.Fprintln(os.Stderr, "paprika up:", err)
			for _, b := range built {
				_ = b.Close()
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
			if err := w.Run(wctx); err != nil && !errors.Is(err, context.Canceled) {
				log.Error("local worker stopped", slog.String("worker_id", w.ID()), slog.Any("err", err))
			}
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
