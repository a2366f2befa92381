package hub

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// pprofServer serves net/http/pprof on debug.pprof (config validation
// keeps that address on loopback). It has its own mux so the profiler never
// lands on the API's port or on http.DefaultServeMux.
type pprofServer struct {
	srv  *http.Server
	ln   net.Listener
	done chan struct{}
}

// startPprof listens on addr and serves the profiler; nil, nil when addr is "".
func startPprof(addr string, log *slog.Logger) (*pprofServer, error) {
	if addr == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on debug.pprof %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	p := &pprofServer{ln: ln, done: make(chan struct{}), srv: &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}}
	go func() {
		defer close(p.done)
		if err := p.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("pprof server stopped", slog.Any("err", err))
		}
	}()
	log.Info("pprof served", slog.String("url", p.URL()))
	return p, nil
}

// URL is the profiler's index.
func (p *pprofServer) URL() string { return "http://" + p.ln.Addr().String() + "/debug/pprof/" }

// stop closes the listener and every open profile request (a 30 s CPU
// profile does not hold the hub's stop).
func (p *pprofServer) stop() {
	if p == nil {
		return
	}
	_ = p.srv.Close()
	<-p.done
}

// PprofURL is the profiler's index once Start returned, or "" when
// debug.pprof is not set.
func (h *Hub) PprofURL() string {
	if h.pprof == nil {
		return ""
	}
	return h.pprof.URL()
}
