// Package testproxy is an authenticating HTTP forward proxy for tests: it
// asks for Basic credentials (407), forwards plain HTTP requests and
// tunnels CONNECT, and records every request it saw with whether its
// credentials were right.
package testproxy

import (
	"encoding/base64"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"
)

// Request is one request the proxy saw.
type Request struct {
	Method string
	Target string // the absolute URL, or host:port of a CONNECT
	// Auth is "ok" (the right credentials), "none" or "bad".
	Auth string
	// Username is what the credentials named ("" without any).
	Username string
}

// Proxy is a running proxy; URL is its address (http://127.0.0.1:port).
type Proxy struct {
	*httptest.Server
	user, pass string

	mu   sync.Mutex
	seen []Request
}

// New starts a proxy that accepts user and pass; it closes with Close.
func New(user, pass string) *Proxy {
	p := &Proxy{user: user, pass: pass}
	p.Server = httptest.NewServer(http.HandlerFunc(p.serve))
	return p
}

// Requests returns what the proxy saw so far.
func (p *Proxy) Requests() []Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Request(nil), p.seen...)
}

func (p *Proxy) serve(w http.ResponseWriter, r *http.Request) {
	req := Request{Method: r.Method, Target: r.URL.String(), Auth: "none"}
	if r.Method == http.MethodConnect {
		req.Target = r.Host
	}
	if h := r.Header.Get("Proxy-Authorization"); h != "" {
		req.Auth = "bad"
		if raw, ok := strings.CutPrefix(h, "Basic "); ok {
			if b, err := base64.StdEncoding.DecodeString(raw); err == nil {
				u, pw, _ := strings.Cut(string(b), ":")
				req.Username = u
				if u == p.user && pw == p.pass {
					req.Auth = "ok"
				}
			}
		}
	}
	p.mu.Lock()
	p.seen = append(p.seen, req)
	p.mu.Unlock()
	if req.Auth != "ok" {
		w.Header().Set("Proxy-Authenticate", `Basic realm="testproxy"`)
		http.Error(w, "proxy credentials required", http.StatusProxyAuthRequired)
		return
	}
	if r.Method == http.MethodConnect {
		p.tunnel(w, r)
		return
	}
	if !r.URL.IsAbs() {
		http.Error(w, "not a proxy request", http.StatusBadRequest)
		return
	}
	out := r.Clone(r.Context())
	out.RequestURI = ""
	out.Header.Del("Proxy-Authorization")
	out.Header.Del("Proxy-Connection")
	resp, err := http.DefaultTransport.RoundTrip(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, vs := range resp.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}

// tunnel serves a CONNECT: it pipes bytes both ways until either side ends.
func (p *Proxy) tunnel(w http.ResponseWriter, r *http.Request) {
	up, err := net.DialTimeout("tcp", r.Host, 5*time.Second)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		_ = up.Close()
		http.Error(w, "no hijack", http.StatusInternalServerError)
		return
	}
	down, buf, err := hj.Hijack()
	if err != nil {
		_ = up.Close()
		return
	}
	_, _ = down.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n"))
	var wg sync.WaitGroup
	wg.Go(func() {
		_, _ = io.Copy(up, buf)
		_ = up.Close()
	})
	_, _ = io.Copy(down, up)
	_ = down.Close()
	wg.Wait()
}
