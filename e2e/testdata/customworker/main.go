// Command customworker is the end-to-end tests' worker built on package
// worker, with modes that misbehave on purpose: "crash" panics, "stubborn"
// ignores its context (it sleeps sleep_ms, then writes a marker file and
// returns a result that must never arrive), "echo" returns its params.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/paprika-hub/paprika/worker"
)

func main() {
	hub := flag.String("hub", "", "hub URL")
	id := flag.String("id", "custom", "worker id")
	lanes := flag.Int("lanes", 1, "lanes")
	abandon := flag.Duration("abandon-after", 500*time.Millisecond, "worker.Options.AbandonAfter")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	w, err := worker.New(worker.Options{Hubs: []string{*hub}, ID: *id, Lanes: *lanes, Logger: log,
		NoBuiltins: true, AbandonAfter: *abandon})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	w.Handle("echo", func(_ context.Context, j *worker.Job) (any, error) {
		var p map[string]any
		if err := j.Decode(&p); err != nil {
			return nil, err
		}
		j.Log("echo attempt " + strconv.Itoa(j.Attempt()))
		return map[string]any{"echo": p, "worker": *id}, nil
	})
	w.Handle("crash", func(_ context.Context, j *worker.Job) (any, error) {
		j.Log("about to panic")
		panic("crash mode panics on purpose")
	})
	w.Handle("stubborn", func(_ context.Context, j *worker.Job) (any, error) {
		var p struct {
			SleepMS int    `json:"sleep_ms"`
			Marker  string `json:"marker"`
		}
		if err := j.Decode(&p); err != nil {
			return nil, err
		}
		j.Log("sleeping, deaf to cancellation")
		time.Sleep(time.Duration(p.SleepMS) * time.Millisecond) // ignores ctx on purpose
		j.Log("woke up")                                        // after the deadline: dropped
		if p.Marker != "" {
			if err := os.WriteFile(p.Marker, []byte(strconv.FormatInt(time.Now().UnixNano(), 10)), 0o644); err != nil {
				return nil, err
			}
		}
		return map[string]any{"late": true}, nil
	})
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := w.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
