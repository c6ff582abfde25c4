package redistest

import (
	"net"
	"sync"
	"sync/atomic"
	"testing"
)

// The faults a Proxy makes.
const (
	Pass  int32 = iota // forward both ways
	Drop               // take the bytes both ways and forward none, the connections kept open (a hung Redis, a partitioned link)
	Reset              // close each new connection at once
)

// Proxy forwards the TCP connections its listener takes to a target, with
// the fault a test switches (Set, Cut): the faults Stop and Restart cannot
// make. Its methods are safe for concurrent use.
type Proxy struct {
	// Addr is the address the proxy listens on.
	Addr    string
	target  string
	onReply func(reply []byte)
	mode    atomic.Int32

	mu    sync.Mutex
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// StartProxy forwards what ln accepts to target until t's cleanup, which
// closes ln and every connection. onReply, when not nil, sees each read
// from the target before it is forwarded, and may hold it (a late answer).
func StartProxy(t testing.TB, ln net.Listener, target string, onReply func(reply []byte)) *Proxy {
	p := &Proxy{Addr: ln.Addr().String(), target: target, onReply: onReply, conns: map[net.Conn]struct{}{}}
	p.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if p.mode.Load() == Reset {
				_ = c.Close()
				continue
			}
			p.wg.Go(func() { p.link(c) })
		}
	})
	t.Cleanup(func() {
		_ = ln.Close()
		p.Cut()
		p.wg.Wait()
	})
	return p
}

// Listen returns a listener on a free loopback port, failing t without one.
func Listen(t testing.TB) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	return ln
}

// Set switches the proxy's fault; the connections open stay (Cut closes
// them).
func (p *Proxy) Set(mode int32) { p.mode.Store(mode) }

// Cut closes every connection the proxy forwards: the clients reconnect.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		_ = c.Close()
	}
}

// link forwards c to the target until either side closes.
func (p *Proxy) link(c net.Conn) {
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		_ = c.Close()
		return
	}
	p.mu.Lock()
	p.conns[c], p.conns[up] = struct{}{}, struct{}{}
	p.mu.Unlock()
	var wg sync.WaitGroup
	wg.Go(func() { p.copy(up, c, nil) })
	wg.Go(func() { p.copy(c, up, p.onReply) })
	wg.Wait()
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, up)
	p.mu.Unlock()
}

// copy forwards src to dst, after seen, dropping what arrives in Drop.
func (p *Proxy) copy(dst, src net.Conn, seen func([]byte)) {
	defer func() { _ = dst.Close(); _ = src.Close() }()
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && seen != nil {
			seen(buf[:n])
		}
		if n > 0 && p.mode.Load() == Pass {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
