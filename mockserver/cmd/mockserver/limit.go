package main

import (
	"net"
	"sync"
)

// limitListener accepts at most cap(sem) connections at a time: Accept
// waits until an accepted connection is closed. It is what
// golang.org/x/net/netutil.LimitListener does, written here so that the
// module does not take golang.org/x/net (and the newer x/crypto and x/text
// it requires) for thirty lines.
type limitListener struct {
	net.Listener
	sem       chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

func newLimitListener(l net.Listener, n int) *limitListener {
	return &limitListener{Listener: l, sem: make(chan struct{}, n), done: make(chan struct{})}
}

// Accept takes a slot before it accepts, so a connection over the cap waits
// in the kernel's backlog rather than in the server's memory.
func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.sem <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	return &limitConn{Conn: c, release: func() { <-l.sem }}, nil
}

// Close stops a pending Accept too, which waits on the slot and not on the
// underlying listener.
func (l *limitListener) Close() error {
	err := l.Listener.Close()
	l.closeOnce.Do(func() { close(l.done) })
	return err
}

// limitConn gives its slot back once, on the first Close.
type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
