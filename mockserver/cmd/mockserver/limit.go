package main

import (
	"net"
	"net/http"
	"net/netip"
	"sync"
)

// limitListener serves at most max connections at a time and shares them
// between peer addresses, so that no address can make another wait by
// holding connections, whatever they are doing: idle between requests,
// silent (accepted, its request's headers not complete), sending a body
// slowly, not reading an answer, or waiting for a handler.
//
// When every slot is taken, a newcomer from address A takes the slot of
// one connection, the first kind that has one:
//
//  1. an idle keep-alive connection, whoever holds it;
//  2. a silent connection of A, or of an address that holds at least two
//     more connections than A;
//  3. a connection with a request in progress (a body still arriving, a
//     handler running, an answer not read yet) of an address that holds
//     at least two more than A.
//
// Of a kind, it takes the connection of the address holding the most, its
// oldest (longest idle, silent longest, request in progress longest, which
// a trickled body or an unread answer is). Otherwise the newcomer waits.
// What costs least goes first: an idle connection carries nothing and
// costs its client a reconnection, which takes a slot back by the same
// rule; a silent one may carry a request on its way; a request in
// progress is lost. Taking a silent connection or a request from an
// address holding only one more than A would merely swap the two counts,
// and two addresses could then close each other's requests for ever; so
// it needs two more. Hence an address waits only while no connection is
// idle, it has no silent one, and no address holds two more than it: an
// address holding nothing is served at once unless every slot carries a
// request of an address holding only that one (-max-connections distinct
// addresses, or -max-connections 1, where there is nothing to share). A
// test suite that is the only client, all from one address, competes only
// with itself: its newcomers take its idle and silent connections and
// otherwise wait, and its requests in progress are never closed, as
// before.
//
// A waiting connection does not stop others from being accepted: the
// listener accepts connections as they come and keeps those that must wait
// in a queue of at most waitMax, whichever address they come from. When a
// slot can be had again, the waiting connection of the address holding the
// fewest goes first, the oldest of an address first. When the queue is
// full, the newest waiting connection of the address with the most waiting
// is closed unanswered, so an address that opens ever more connections
// loses its own. Holding a waiting connection costs a descriptor and this
// struct, as the kernel's backlog did; the listener's memory is bounded by
// max+waitMax connections whatever the peers do.
//
// Closing a connection whose request is in progress makes its handler's
// reads of the body and writes of the answer fail (and, once the body is
// read, cancels the request's context, which ends an injected decision
// latency). A connection an address holds beyond an even share, because
// others left slots unused, is the first to go when they want them back.
// Every handler of the
// mockserver reads and checks the whole body before it changes the store
// and applies a change in one step under a lock, so such a request is
// either not applied at all or applied whole with its answer lost, as when
// -write-timeout expires.
//
// A peer is an IP address (an IPv4-mapped IPv6 address is its IPv4
// address); IPv6 addresses are not grouped by prefix: the server is meant
// for loopback and test networks, where one host is one address and
// grouping a /64 would lump a whole test network into one peer. A client
// that uses many addresses (127.0.0.0/8 on one host, the addresses of an
// IPv6 prefix) counts as many peers, and behind a reverse proxy every
// connection is the proxy's.
//
// An accept below the limit with no connection waiting, a close and a state
// change cost O(1); one that lets a waiting connection in, or an accept at
// the limit, costs O(peers) for each connection it lets in. The states
// come from http.Server.ConnState (track). It is what
// golang.org/x/net/netutil.LimitListener does, plus the sharing, written
// here so that the module does not take golang.org/x/net (and the newer
// x/crypto and x/text it requires).
type limitListener struct {
	net.Listener
	max     int // slots
	waitMax int // connections accepted that may wait for a slot

	startOnce sync.Once
	wake      chan struct{} // buffered: ready or acceptErr changed; one signal is enough
	taken     chan struct{} // buffered: Accept took acceptErr, the accept loop may go on
	done      chan struct{} // closed by Close
	stopped   chan struct{} // closed when the accept loop has returned
	closeOnce sync.Once

	mu        sync.Mutex
	peers     map[netip.Addr]*peer // the addresses holding or waiting for a slot
	open      int                  // connections holding a slot
	waiting   int                  // connections waiting for one
	ready     []*limitConn         // holding a slot, not yet returned by Accept
	acceptErr error                // from the underlying Accept, for Accept to return
	closed    bool
	seq       uint64 // orders arrivals and state changes: the oldest has the least
}

// minWaiting is the least waitMax: as many connections as the kernel's
// accept backlog held by default for a long time (SOMAXCONN), so that a
// small -max-connections still lets a test suite's bursts wait rather
// than be closed.
const minWaiting = 128

func newLimitListener(l net.Listener, slots int) *limitListener {
	return &limitListener{Listener: l, max: slots, waitMax: max(slots, minWaiting),
		wake: make(chan struct{}, 1), taken: make(chan struct{}, 1),
		done: make(chan struct{}), stopped: make(chan struct{}),
		peers: make(map[netip.Addr]*peer)}
}

// peer is what one address holds and has waiting. Guarded by the
// listener's mu.
type peer struct {
	addr   netip.Addr
	idle   connList // between requests, longest idle first
	silent connList // accepted, headers of the first request not complete, oldest first
	busy   connList // a request in progress (or hijacked), longest in progress first
	queued connList // accepted, waiting for a slot, oldest first
}

// held is how many slots p's connections hold.
func (p *peer) held() int { return p.idle.n + p.silent.n + p.busy.n }

// list is the list of p's connections in state s, nil for StateClosed.
func (p *peer) list(s http.ConnState) *connList {
	switch s {
	case http.StateNew:
		return &p.silent
	case http.StateIdle:
		return &p.idle
	case http.StateActive, http.StateHijacked:
		return &p.busy
	}
	return nil
}

// connList is an intrusive list of connections in the order they entered
// it; a connection is in at most one.
type connList struct {
	head, tail *limitConn
	n          int
}

func (q *connList) push(c *limitConn) {
	c.list, c.prev, c.next = q, q.tail, nil
	if q.tail != nil {
		q.tail.next = c
	} else {
		q.head = c
	}
	q.tail = c
	q.n++
}

func (q *connList) remove(c *limitConn) {
	if c.prev != nil {
		c.prev.next = c.next
	} else {
		q.head = c.next
	}
	if c.next != nil {
		c.next.prev = c.prev
	} else {
		q.tail = c.prev
	}
	c.list, c.prev, c.next = nil, nil, nil
	q.n--
}

// limitConn is a connection accepted by a limitListener: waiting for a
// slot, or holding one, which it gives back once, on its first Close.
type limitConn struct {
	net.Conn
	l    *limitListener
	peer *peer

	// Guarded by l.mu.
	list       *connList // p.idle, silent, busy or queued; nil once gone
	prev, next *limitConn
	since      uint64 // l.seq when it entered list
	gone       bool   // closed, or closed for another: holds and waits for nothing
}

// Accept returns the next connection that has a slot. The connections are
// accepted from the underlying listener as they come (acceptLoop), so one
// that waits for a slot does not delay another peer's.
func (l *limitListener) Accept() (net.Conn, error) {
	l.startOnce.Do(func() { go l.acceptLoop() })
	for {
		l.mu.Lock()
		for len(l.ready) > 0 {
			c := l.ready[0]
			l.ready[0] = nil
			l.ready = l.ready[1:]
			if c.gone { // closed for a newcomer before the server saw it
				continue
			}
			if len(l.ready) > 0 {
				l.signal() // for another caller
			}
			l.mu.Unlock()
			return c, nil
		}
		if err := l.acceptErr; err != nil {
			l.acceptErr = nil
			l.mu.Unlock()
			select {
			case l.taken <- struct{}{}:
			default:
			}
			return nil, err
		}
		closed := l.closed
		l.mu.Unlock()
		if closed {
			return nil, net.ErrClosed
		}
		select {
		case <-l.wake:
		case <-l.done:
		}
	}
}

// acceptLoop accepts connections from the underlying listener and queues
// them (arrive). An error goes to Accept, whose caller decides whether to
// go on (http.Server retries a temporary one after a pause); the loop
// accepts again once Accept has returned it, and stops on Close.
func (l *limitListener) acceptLoop() {
	defer close(l.stopped)
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			l.mu.Lock()
			l.acceptErr = err
			l.mu.Unlock()
			l.signal()
			select {
			case <-l.taken:
				continue
			case <-l.done:
				return
			}
		}
		var addr netip.Addr
		if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
			addr = a.AddrPort().Addr().Unmap()
		}
		l.arrive(c, addr)
	}
}

// arrive queues c, of the peer address addr, for a slot, gives it one if
// it can (settle), and closes the newest waiting connection of the address
// with the most waiting when more than waitMax wait.
func (l *limitListener) arrive(c net.Conn, addr netip.Addr) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		_ = c.Close()
		return
	}
	p := l.peers[addr]
	if p == nil {
		p = &peer{addr: addr}
		l.peers[addr] = p
	}
	lc := &limitConn{Conn: c, l: l, peer: p}
	if l.waiting == 0 && l.open < l.max { // a free slot, which no one waits for
		l.admit(lc)
		l.mu.Unlock()
		return
	}
	l.enter(lc, &p.queued)
	l.waiting++
	victims := l.settle()
	if l.waiting > l.waitMax {
		victims = append(victims, l.dropNewest())
	}
	l.mu.Unlock()
	closeAll(victims)
}

// enter puts c at the end of q, as entering it now. l.mu is held.
func (l *limitListener) enter(c *limitConn, q *connList) {
	if c.list != nil {
		c.list.remove(c)
	}
	l.seq++
	c.since = l.seq
	q.push(c)
}

// settle gives slots to waiting connections for as long as there is one
// to give, and returns the connections closed to make room, for the
// caller to close once l.mu is released. l.mu is held.
func (l *limitListener) settle() []*limitConn {
	var victims []*limitConn
	for l.waiting > 0 && !l.closed {
		p, v := l.next()
		if p == nil {
			break
		}
		if v != nil {
			l.release(v)
			victims = append(victims, v)
		}
		l.waiting--
		l.admit(p.queued.head)
	}
	return victims
}

// admit gives c a slot and hands it to Accept. l.mu is held; a slot is
// free.
func (l *limitListener) admit(c *limitConn) {
	l.enter(c, &c.peer.silent)
	l.open++
	l.ready = append(l.ready, c)
	if len(l.ready) > l.max { // drop what newcomers closed before Accept took it
		kept := l.ready[:0]
		for _, r := range l.ready {
			if !r.gone {
				kept = append(kept, r)
			}
		}
		clear(l.ready[len(kept):])
		l.ready = kept
	}
	l.signal()
}

// next returns the address whose oldest waiting connection may have a slot
// now, and the connection to close for it (nil when a slot is free), or a
// nil address when none may. The waiting address holding the fewest goes
// first (the oldest waiting connection first among equals); when it may
// not, no connection is idle and no other may but through a silent
// connection of its own. l.mu is held.
func (l *limitListener) next() (*peer, *limitConn) {
	var first *peer
	for _, p := range l.peers {
		if p.queued.n == 0 {
			continue
		}
		if first == nil || p.held() < first.held() ||
			(p.held() == first.held() && p.queued.head.since < first.queued.head.since) {
			first = p
		}
	}
	if first == nil {
		return nil, nil
	}
	if l.open < l.max {
		return first, nil
	}
	if v := l.victim(first); v != nil {
		return first, v
	}
	for _, p := range l.peers {
		if p.queued.n > 0 && p.silent.n > 0 {
			return p, l.victim(p)
		}
	}
	return nil, nil
}

// victim returns the connection to close for a newcomer of p when every
// slot is taken, or nil when it must wait, by the rule of limitListener:
// what costs least first (an idle connection, then a silent one, then a
// request in progress), and of that, the connection of the address
// holding the most, the oldest among equals. l.mu is held.
func (l *limitListener) victim(p *peer) *limitConn {
	hp := p.held()
	var idle, silent, busy *limitConn // the best of each kind
	better := func(c, than *limitConn) bool {
		if than == nil {
			return true
		}
		if hc, ht := c.peer.held(), than.peer.held(); hc != ht {
			return hc > ht
		}
		return c.since < than.since
	}
	for _, v := range l.peers {
		hv, own := v.held(), v == p
		if c := v.idle.head; c != nil && better(c, idle) {
			idle = c
		}
		if c := v.silent.head; c != nil && (own || hv >= hp+2) && better(c, silent) {
			silent = c
		}
		if c := v.busy.head; c != nil && hv >= hp+2 && better(c, busy) {
			busy = c
		}
	}
	switch {
	case idle != nil:
		return idle
	case silent != nil:
		return silent
	}
	return busy
}

// dropNewest takes the newest waiting connection of the address with the
// most waiting (the most recent arrival among equals) out of the queue and
// returns it, for the caller to close. l.mu is held; l.waiting > 0.
func (l *limitListener) dropNewest() *limitConn {
	var most *peer
	for _, p := range l.peers {
		if p.queued.n == 0 {
			continue
		}
		if most == nil || p.queued.n > most.queued.n ||
			(p.queued.n == most.queued.n && p.queued.tail.since > most.queued.tail.since) {
			most = p
		}
	}
	c := most.queued.tail
	l.release(c)
	return c
}

// release takes c out of the listener: it no longer waits or holds a
// slot, and its address is forgotten once it has nothing left. l.mu is
// held; c is not gone.
func (l *limitListener) release(c *limitConn) {
	if c.list == &c.peer.queued {
		l.waiting--
	} else {
		l.open--
	}
	c.list.remove(c)
	c.gone = true
	if p := c.peer; p.held() == 0 && p.queued.n == 0 {
		delete(l.peers, p.addr)
	}
}

// closeAll closes connections already released.
func closeAll(cs []*limitConn) {
	for _, c := range cs {
		_ = c.Conn.Close()
	}
}

// track is the server's ConnState hook: it records each connection's state
// as it changes, and gives a waiting connection the slot of one that no
// longer carries a request. A connection already closed is not tracked
// again.
func (l *limitListener) track(c net.Conn, s http.ConnState) {
	lc, ok := c.(*limitConn)
	if !ok {
		return
	}
	l.mu.Lock()
	if lc.gone || lc.list == &lc.peer.queued {
		l.mu.Unlock()
		return
	}
	to := lc.peer.list(s)
	if to == nil { // StateClosed: Close has released it
		l.mu.Unlock()
		return
	}
	var victims []*limitConn
	if lc.list != to {
		l.enter(lc, to)
		if to != &lc.peer.busy && l.waiting > 0 {
			victims = l.settle()
		}
	}
	l.mu.Unlock()
	closeAll(victims)
}

// signal wakes an Accept that waits.
func (l *limitListener) signal() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// Close stops the listener and its accept loop, closes the connections
// that wait for a slot or that Accept has not returned yet, and stops a
// pending Accept. The connections the server has keep their slots until
// they close.
func (l *limitListener) Close() error {
	err := l.Listener.Close()
	l.closeOnce.Do(func() {
		close(l.done)
		var left []*limitConn
		l.mu.Lock()
		l.closed = true
		for _, c := range l.ready {
			if !c.gone {
				l.release(c)
				left = append(left, c)
			}
		}
		l.ready = nil
		for _, p := range l.peers {
			for p.queued.head != nil {
				c := p.queued.head
				l.release(c)
				left = append(left, c)
			}
		}
		l.mu.Unlock()
		closeAll(left)
	})
	l.startOnce.Do(func() { close(l.stopped) }) // no loop was started
	<-l.stopped
	return err
}

// Close closes the connection and, the first time, gives its slot to a
// waiting connection.
func (c *limitConn) Close() error {
	err := c.Conn.Close()
	l := c.l
	l.mu.Lock()
	if c.gone {
		l.mu.Unlock()
		return err
	}
	l.release(c)
	victims := l.settle()
	l.mu.Unlock()
	closeAll(victims)
	return err
}
