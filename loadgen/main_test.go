package loadgen_test

import (
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"testing"

	"go.uber.org/goleak"
)

// fakeHubEnv makes the test binary act as a hub for SpawnHub's tests:
// "ok" serves /healthz until SIGTERM, "fail" exits at once with status 3.
const fakeHubEnv = "LOADGEN_TEST_FAKE_HUB"

func TestMain(m *testing.M) {
	if mode := os.Getenv(fakeHubEnv); mode != "" {
		os.Exit(fakeHub(mode, os.Args[1:]))
	}
	goleak.VerifyTestMain(m, leakOptions()...)
}

// fakeHub is `paprika hub --listen ADDR …` in miniature.
func fakeHub(mode string, args []string) int {
	fmt.Fprintf(os.Stderr, "fake hub %s: args %v, assets %s\n", mode, args, os.Getenv("PAPRIKA_ASSETS_DIR"))
	if mode == "fail" || len(args) < 3 || args[0] != "hub" || args[1] != "--listen" {
		return 3
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM)
	srv := &http.Server{Addr: args[2], Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusOK)
	})}
	go func() { _ = srv.ListenAndServe() }()
	<-sig
	_ = srv.Close()
	return 0
}
