package main

import (
	"net"
	"net/http"
	"net/netip"
	"sync"
)

// limitListener serves at most max connections at a time, and never makes
// a new connection wait for one that is not carrying a request: when all
// slots are taken it closes an idle keep-alive connection, or else a silent
// one (accepted, its request's headers not complete), to make room, and a
// newcomer waits only while every connection carries a request (which the
// read and write timeouts bound). Otherwise a client that opened max
// connections and left them idle, or silent, would hold every slot until
// its idle or read-header timeout, and again after.
//
// The victim is taken from the peer address that holds the most idle and
// silent connections, so what one peer opens is reclaimed before another
// peer's: its longest-idle connection, else its oldest silent one. Only
// connections with a request in progress are left alone, whoever holds
// them, so a test suite that runs many requests at once from one host is
// served as before. The states come from http.Server.ConnState (track).
//
// It is what golang.org/x/net/netutil.LimitListener does, plus the
// reclaiming, written here so that the module does not take
// golang.org/x/net (and the newer x/crypto and x/text it requires).
type limitListener struct {
	net.Listener
	max       int
	wake      chan struct{} // a slot came free or a connection became reclaimable (buffered: one signal is enough)
	done      chan struct{}
	closeOnce sync.Once

	mu    sync.Mutex
	conns map[*limitConn]struct{} // the open connections, each holding a slot
	seq   uint64                  // orders state changes: the oldest has the least
}

func newLimitListener(l net.Listener, max int) *limitListener {
	return &limitListener{Listener: l, max: max, wake: make(chan struct{}, 1), done: make(chan struct{}),
		conns: make(map[*limitConn]struct{})}
}

// limitConn is a connection holding a slot, which it gives back once, on
// its first Close.
type limitConn struct {
	net.Conn
	l    *limitListener
	peer netip.Addr
	once sync.Once

	// Guarded by l.mu.
	state http.ConnState
	since uint64 // l.seq when it entered state
}

// Accept accepts a connection and then takes a slot for it, reclaiming
// one from an idle or silent connection when none is free, else waiting
// for one. Connections beyond the one Accept holds wait in the kernel's
// backlog, not in the server's memory.
func (l *limitListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	lc := &limitConn{Conn: c, l: l, state: http.StateNew}
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		lc.peer = a.AddrPort().Addr().Unmap()
	}
	for {
		l.mu.Lock()
		if len(l.conns) < l.max {
			l.seq++
			lc.since = l.seq
			l.conns[lc] = struct{}{}
			l.mu.Unlock()
			return lc, nil
		}
		victim := l.victim()
		l.mu.Unlock()
		if victim != nil {
			_ = victim.Close() // gives its slot back
			continue
		}
		select {
		case <-l.wake:
		case <-l.done:
			_ = c.Close()
			return nil, net.ErrClosed
		}
	}
}

// victim returns the connection to close for a newcomer, or nil when
// every connection carries a request: of the peer holding the most idle
// and silent connections, the one idle longest, else the oldest silent.
// l.mu is held.
func (l *limitListener) victim() *limitConn {
	held := map[netip.Addr]int{}
	for c := range l.conns {
		if reclaimable(c.state) {
			held[c.peer]++
		}
	}
	var v *limitConn
	for c := range l.conns {
		if !reclaimable(c.state) {
			continue
		}
		switch {
		case v == nil:
			v = c
		case held[c.peer] != held[v.peer]:
			if held[c.peer] > held[v.peer] {
				v = c
			}
		case (c.state == http.StateIdle) != (v.state == http.StateIdle):
			if c.state == http.StateIdle {
				v = c
			}
		case c.since < v.since:
			v = c
		}
	}
	return v
}

// reclaimable reports whether a connection in state s carries no request:
// idle between requests, or new and not done sending its first request's
// headers.
func reclaimable(s http.ConnState) bool {
	return s == http.StateIdle || s == http.StateNew
}

// track is the server's ConnState hook: it records each connection's state
// as it changes. A connection already closed (reclaimed) is not tracked
// again.
func (l *limitListener) track(c net.Conn, s http.ConnState) {
	lc, ok := c.(*limitConn)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, open := l.conns[lc]; !open || lc.state == s {
		return
	}
	l.seq++
	lc.state, lc.since = s, l.seq
	if reclaimable(s) {
		l.signal()
	}
}

// signal wakes an Accept that waits for a slot.
func (l *limitListener) signal() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// Close stops a pending Accept too, which may wait for a slot rather than
// on the underlying listener.
func (l *limitListener) Close() error {
	err := l.Listener.Close()
	l.closeOnce.Do(func() { close(l.done) })
	return err
}

// Close closes the connection and, the first time, gives its slot back.
func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.l.mu.Lock()
		delete(c.l.conns, c)
		c.l.mu.Unlock()
		c.l.signal()
	})
	return err
}
