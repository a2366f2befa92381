package main

import (
	"bufio"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
)

// sqlTripCounter is a TCP proxy between the hubs and MariaDB that counts
// the SQL round trips: every command a client sends (COM_QUERY with its
// statements, a prepare, a ping, …) is a packet of sequence number 0 and
// gets one answer, so counting those packets counts the exchanges the
// server's Com_* counters cannot show (a multi-statement trip there is as
// many statements as it holds). The handshake's packets are numbered
// from 1 and are not counted. Only for plain connections (no TLS, no
// compression), as the bench's are.
type sqlTripCounter struct {
	ln     net.Listener
	target string
	trips  atomic.Int64
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
}

// startSQLTripCounter listens on a free loopback port and forwards each
// connection to target.
func startSQLTripCounter(target string) (*sqlTripCounter, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &sqlTripCounter{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// addr is the proxy's host:port, for a DSN.
func (p *sqlTripCounter) addr() string { return p.ln.Addr().String() }

// close stops accepting and cuts every proxied connection.
func (p *sqlTripCounter) close() {
	_ = p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *sqlTripCounter) track(c net.Conn, add bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if add {
		p.conns[c] = struct{}{}
	} else {
		delete(p.conns, c)
	}
}

func (p *sqlTripCounter) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = client.Close()
			continue
		}
		p.track(client, true)
		p.track(server, true)
		p.wg.Add(2)
		go func() { // server → client, as it comes
			defer p.wg.Done()
			_, _ = io.Copy(client, server)
			_ = client.Close()
			p.track(client, false)
		}()
		go func() {
			defer p.wg.Done()
			_ = p.forward(server, client)
			_ = server.Close()
			p.track(server, false)
		}()
	}
}

// forward copies the client's packets to the server, counting those that
// start a command.
// A packet goes on once nothing more is buffered behind it, so a command
// is one write, as the client made it.
func (p *sqlTripCounter) forward(dst io.Writer, src io.Reader) error {
	r := bufio.NewReaderSize(src, 64<<10)
	w := bufio.NewWriterSize(dst, 64<<10)
	var hdr [4]byte
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		n := int(hdr[0]) | int(hdr[1])<<8 | int(hdr[2])<<16
		if hdr[3] == 0 {
			p.trips.Add(1)
		}
		if _, err := w.Write(hdr[:]); err != nil {
			return err
		}
		if _, err := io.CopyN(w, r, int64(n)); err != nil {
			return err
		}
		if r.Buffered() == 0 {
			if err := w.Flush(); err != nil {
				return err
			}
		}
	}
}
