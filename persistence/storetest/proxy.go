package storetest

import (
	"net"
	"sync"
	"testing"
)

// Proxy is a TCP proxy in front of a store, for fault injection: Cut
// drops every connection and refuses new ones (the store is down), Restore
// lets them in again; Pause holds every byte in both directions with the
// connections open (the store hangs, like Redis under CLIENT PAUSE or
// DEBUG SLEEP), Resume lets them flow. Other tests keep using the real
// server untouched.
type Proxy struct {
	t      testing.TB
	target string
	ln     net.Listener

	mu    sync.Mutex
	down  bool
	gate  chan struct{} // closed while bytes may flow
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// NewProxy listens on 127.0.0.1 and forwards to target until the test ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("proxy listen: %v", err)
	}
	gate := make(chan struct{})
	close(gate)
	p := &Proxy{t: t, target: target, ln: ln, conns: map[net.Conn]struct{}{}, gate: gate}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Cut closes every open connection and refuses new ones until Restore.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	for c := range p.conns {
		_ = c.Close()
	}
}

// Pause holds all traffic until Resume.
func (p *Proxy) Pause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.gate:
		p.gate = make(chan struct{})
	default:
	}
}

// Resume lets held traffic flow.
func (p *Proxy) Resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.gate:
	default:
		close(p.gate)
	}
}

func (p *Proxy) wait() {
	p.mu.Lock()
	g := p.gate
	p.mu.Unlock()
	<-g
}

// Restore lets connections through again.
func (p *Proxy) Restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = false
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.down {
			p.mu.Unlock()
			_ = c.Close()
			continue
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			p.mu.Unlock()
			_ = c.Close()
			continue
		}
		p.conns[c], p.conns[up] = struct{}{}, struct{}{}
		p.wg.Add(2)
		p.mu.Unlock()
		pipe := func(dst, src net.Conn) {
			defer p.wg.Done()
			buf := make([]byte, 32<<10)
			for {
				n, err := src.Read(buf)
				if n > 0 {
					p.wait()
					if _, werr := dst.Write(buf[:n]); werr != nil {
						break
					}
				}
				if err != nil {
					break
				}
			}
			_ = dst.Close()
			_ = src.Close()
			p.mu.Lock()
			delete(p.conns, dst)
			delete(p.conns, src)
			p.mu.Unlock()
		}
		go pipe(up, c)
		go pipe(c, up)
	}
}

func (p *Proxy) close() {
	_ = p.ln.Close()
	p.Resume()
	p.Cut()
	p.wg.Wait()
}
