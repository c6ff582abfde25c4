package main

import (
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// limitListener serves at most max connections at a time and shares them
// between peer addresses, so that no address can make another wait by
// holding connections, whatever they are doing: idle between requests,
// silent (accepted, nothing sent), sending headers or a body slowly, not
// reading an answer, or waiting for a handler.
//
// A connection is closed to make room only when it cannot be carrying a
// request that the server has not seen, or by the third rule below. The
// server's states (http.Server.ConnState) cannot tell: a connection is
// StateNew until its first request's headers are parsed and StateIdle
// until the next one's are, while the request may already be in the
// socket, not yet read. So a connection counts as quiet (idle or silent)
// only when the server has been reading from it for at least grace (five
// seconds) since it was accepted or answered its last request, nothing has
// come in that time, and no byte waits in its socket (a non-blocking peek,
// on Linux, macOS, the BSDs and Solaris). A client that connects, or reads
// an answer, and means to send a request has sent it well within the
// grace; a connection whose bytes have come (read, or waiting in the
// socket) carries a request in progress until it is idle again.
//
// When every slot is taken, a newcomer from address A takes the slot of
// one connection, the first kind that has one:
//
//  1. an idle keep-alive connection, quiet, whoever holds it;
//  2. a silent connection (accepted, quiet) of A, or of an address that
//     holds at least two more connections than A;
//  3. a connection with a request in progress (its headers or body still
//     arriving, a handler running, an answer not read yet) of an address
//     that holds at least two more than A.
//
// Of a kind, it takes the connection of the address holding the most, its
// oldest (idle longest, silent longest, request in progress longest, which
// a trickled body or an unread answer is). Otherwise the newcomer waits,
// until a slot comes free, a connection becomes idle, or one's grace ends.
// What costs least goes first: a quiet connection carries nothing and
// costs its client a reconnection, which takes a slot back by the same
// rule; a request in progress is lost. Taking a silent connection or a
// request from an address holding only one more than A would merely swap
// the two counts, and two addresses could then close each other's
// requests for ever; so it needs two more. Hence an address waits only
// while no connection is quiet and idle, it has no quiet silent one, and
// no address holds two more than it: an address holding nothing is served
// at once, or once a grace ends, unless every slot carries a request of an
// address holding only that one (-max-connections distinct addresses, or
// -max-connections 1, where there is nothing to share). A test suite that
// is the only client, all from one address, competes only with itself:
// its requests, sent at once in a burst or back to back on keep-alive
// connections, are never closed (its newcomers wait for a slot), and only
// its quiet connections give way.
//
// What remains is the race of every server that closes idle connections
// (http.Server's IdleTimeout too): a client may send a request on a quiet
// connection just as it is closed. The grace narrows it to a client that
// left its connection unused for seconds and then used it; Go's client
// sends such a request again, on a new connection, when it had written
// none of it or the request is idempotent (GET, HEAD, OPTIONS, TRACE, or
// an Idempotency-Key header). The listener cannot see two things: the
// start of a request pipelined behind another, in the server's buffer
// rather than the socket's, when its client then stops for the grace; and,
// where the socket cannot be peeked (other systems, a listener that is
// not TCP), a request that arrived while the process was stopped, if a
// newcomer is placed before the server reads it. The grace runs on the
// monotonic clock: a process stopped for an hour finds every grace over
// when it resumes, and then the socket decides, where the requests sent
// meanwhile wait.
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
// Every handler of the mockserver reads and checks the whole body before
// it changes the store and applies a change in one step under a lock, so
// such a request is either not applied at all or applied whole with its
// answer lost, as when -write-timeout expires.
//
// A peer is an IP address (an IPv4-mapped IPv6 address is its IPv4
// address); IPv6 addresses are not grouped by prefix: the server is meant
// for loopback and test networks, where one host is one address and
// grouping a /64 would lump a whole test network into one peer. A client
// that uses many addresses (127.0.0.0/8 on one host, the addresses of an
// IPv6 prefix) counts as many peers, and behind a reverse proxy every
// connection is the proxy's.
//
// While no connection waits, an accept below the limit, a close, a state
// change and a read cost O(1) (a read takes the lock only on an idle or
// silent connection: when the server starts reading, and when bytes
// come). While connections wait, each of these, and an accept at the
// limit, costs O(peers), once and for each connection it lets in, plus a
// peek at the socket of each quiet connection it would close. The states
// come from http.Server.ConnState (track), the reads from the connections
// (limitConn.Read). It is what
// golang.org/x/net/netutil.LimitListener does, plus the sharing, written
// here so that the module does not take golang.org/x/net (and the newer
// x/crypto and x/text it requires).
type limitListener struct {
	net.Listener
	max     int           // slots
	waitMax int           // connections accepted that may wait for a slot
	grace   time.Duration // how long a connection must be quiet to give way

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
	seq       uint64      // orders arrivals and state changes: the oldest has the least
	timer     *time.Timer // settles again when a grace ends while connections wait; nil until needed
}

// quietGrace is how long the server must have read nothing from a
// connection, idle or silent, before it may be closed to make room: far
// longer than a client takes to send a request once connected or
// answered, even on a machine so loaded that it takes a second (seen in
// this package's tests under -race), and short beside the timeouts that
// close such connections anyway (-read-header-timeout, -idle-timeout).
// http.Server.Shutdown likewise takes a connection that has sent nothing
// for five seconds for an idle one.
const quietGrace = 5 * time.Second

// minWaiting is the least waitMax: as many connections as the kernel's
// accept backlog held by default for a long time (SOMAXCONN), so that a
// small -max-connections still lets a test suite's bursts wait rather
// than be closed.
const minWaiting = 128

func newLimitListener(l net.Listener, slots int) *limitListener {
	return &limitListener{Listener: l, max: slots, waitMax: max(slots, minWaiting), grace: quietGrace,
		wake: make(chan struct{}, 1), taken: make(chan struct{}, 1),
		done: make(chan struct{}), stopped: make(chan struct{}),
		peers: make(map[netip.Addr]*peer)}
}

// peer is what one address holds and has waiting. Guarded by the
// listener's mu.
type peer struct {
	addr   netip.Addr
	idle   connList // between requests, nothing of the next received, longest idle first
	silent connList // accepted, nothing received, oldest first
	busy   connList // a request in progress, its first bytes received (or hijacked), longest in progress first
	queued connList // accepted, waiting for a slot, oldest first
}

// held is how many slots p's connections hold.
func (p *peer) held() int { return p.idle.n + p.silent.n + p.busy.n }

// list is the list of p's connections in state s, nil for StateClosed. A
// connection in StateNew or StateIdle from which bytes have come is busy
// (limitConn.Read).
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
	raw  syscall.RawConn // to peek at its socket; nil when it has none

	// watched is whether it is idle or silent (in p.idle or p.silent):
	// Read then tells the listener when the server starts reading and
	// when bytes come. Written under l.mu.
	watched atomic.Bool

	// Guarded by l.mu.
	list       *connList // p.idle, silent, busy or queued; nil once gone
	prev, next *limitConn
	since      uint64    // l.seq when it entered list
	asked      time.Time // idle or silent: when the server first read from it there; zero before
	gone       bool      // closed, or closed for another: holds and waits for nothing
}

// Read reads from the connection; on an idle or silent one, it tells the
// listener that the server waits for a request (asking), and that bytes
// of one have come (received).
func (c *limitConn) Read(b []byte) (int, error) {
	if c.watched.Load() {
		c.l.asking(c)
	}
	n, err := c.Conn.Read(b)
	if n > 0 && c.watched.Load() {
		c.l.received(c)
	}
	return n, err
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
			if c.gone { // not expected: only a connection the server reads from gives way
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
		var raw syscall.RawConn
		if sc, ok := c.(syscall.Conn); ok {
			raw, _ = sc.SyscallConn() // nil on error: the grace alone decides
		}
		l.arrive(c, addr, raw)
	}
}

// arrive queues c, of the peer address addr, for a slot, gives it one if
// it can (settle), and closes the newest waiting connection of the address
// with the most waiting when more than waitMax wait. raw peeks at c's
// socket; nil when it cannot.
func (l *limitListener) arrive(c net.Conn, addr netip.Addr, raw syscall.RawConn) {
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
	lc := &limitConn{Conn: c, l: l, peer: p, raw: raw}
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

// enter puts c at the end of q, as entering it now: idle or silent, it is
// watched, and the server has not read from it yet. l.mu is held.
func (l *limitListener) enter(c *limitConn, q *connList) {
	if c.list != nil {
		c.list.remove(c)
	}
	l.seq++
	c.since = l.seq
	q.push(c)
	c.asked = time.Time{}
	c.watched.Store(q == &c.peer.idle || q == &c.peer.silent)
}

// settle gives slots to waiting connections for as long as there is one
// to give, and returns the connections closed to make room, for the
// caller to close once l.mu is released. When connections still wait, it
// sets the timer for the end of the next grace. l.mu is held.
func (l *limitListener) settle() []*limitConn {
	var victims []*limitConn
	now := time.Now()
	for l.waiting > 0 && !l.closed {
		p, v := l.next(now)
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
	l.setTimer(now)
	return victims
}

// setTimer makes the listener settle again when the grace of the first
// idle or silent connection whose server reads from it ends, if
// connections wait; a connection's first read (asking) or its bytes
// (received) settle too. Only the oldest of each list counts: it is the
// one victim would take. l.mu is held.
func (l *limitListener) setTimer(now time.Time) {
	var at time.Time
	if l.waiting > 0 && !l.closed {
		for _, p := range l.peers {
			for _, c := range [...]*limitConn{p.idle.head, p.silent.head} {
				if c == nil || c.asked.IsZero() {
					continue
				}
				if end := c.asked.Add(l.grace); end.After(now) && (at.IsZero() || end.Before(at)) {
					at = end
				}
			}
		}
	}
	switch {
	case at.IsZero():
		if l.timer != nil {
			l.timer.Stop()
		}
	case l.timer == nil:
		l.timer = time.AfterFunc(at.Sub(now), l.tick)
	default:
		l.timer.Reset(at.Sub(now))
	}
}

// tick settles when a grace has ended.
func (l *limitListener) tick() {
	l.mu.Lock()
	victims := l.settle()
	l.mu.Unlock()
	closeAll(victims)
}

// asking records that the server reads from c, idle or silent, for the
// first time there: its grace starts.
func (l *limitListener) asking(c *limitConn) {
	l.mu.Lock()
	var victims []*limitConn
	if c.watched.Load() && c.asked.IsZero() {
		c.asked = time.Now()
		if l.waiting > 0 {
			victims = l.settle() // sets the timer for its grace
		}
	}
	l.mu.Unlock()
	closeAll(victims)
}

// received records that bytes of a request came from c, idle or silent:
// its request is in progress from now on.
func (l *limitListener) received(c *limitConn) {
	l.mu.Lock()
	var victims []*limitConn
	if c.watched.Load() {
		l.enter(c, &c.peer.busy)
		if l.waiting > 0 {
			victims = l.settle() // another may be the oldest quiet one now
		}
	}
	l.mu.Unlock()
	closeAll(victims)
}

// admit gives c a slot and hands it to Accept. l.mu is held; a slot is
// free.
func (l *limitListener) admit(c *limitConn) {
	l.enter(c, &c.peer.silent)
	l.open++
	l.ready = append(l.ready, c) // at most max: each holds a slot, and none gives way before the server reads from it
	l.signal()
}

// next returns the address whose oldest waiting connection may have a slot
// now, and the connection to close for it (nil when a slot is free), or a
// nil address when none may. The waiting address holding the fewest goes
// first (the oldest waiting connection first among equals); when it may
// not, no connection is quiet and idle and no other may but through a
// silent connection of its own. l.mu is held.
func (l *limitListener) next(now time.Time) (*peer, *limitConn) {
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
	if v := l.victim(first, now); v != nil {
		return first, v
	}
	for _, p := range l.peers {
		if p != first && p.queued.n > 0 && p.silent.n > 0 {
			if v := l.victim(p, now); v != nil {
				return p, v
			}
		}
	}
	return nil, nil
}

// victim returns the connection to close for a newcomer of p when every
// slot is taken, or nil when it must wait, by the rule of limitListener:
// what costs least first (a quiet idle connection, then a quiet silent
// one, then a request in progress), and of that, the connection of the
// address holding the most, the oldest among equals. An idle or silent
// connection found with bytes waiting in its socket carries a request:
// it becomes busy, and the choice is made again (each round moves one).
// l.mu is held.
func (l *limitListener) victim(p *peer, now time.Time) *limitConn {
	for {
		c := l.cheapest(p, now)
		if c == nil || c.list == &c.peer.busy || !c.unread() {
			return c
		}
		l.enter(c, &c.peer.busy)
	}
}

// quiet reports whether the server has read from c, idle or silent, for
// at least the grace and nothing came; its socket is not looked at.
// l.mu is held.
func (l *limitListener) quiet(c *limitConn, now time.Time) bool {
	return !c.asked.IsZero() && now.Sub(c.asked) >= l.grace
}

// unread reports whether bytes from the peer wait in c's socket, not yet
// read: false where it cannot be told (no socket, no peek on this
// system).
func (c *limitConn) unread() bool {
	return c.raw != nil && bytesWaiting(c.raw)
}

// cheapest is victim without the look into sockets: the oldest quiet
// idle or silent connection of each list counts, or none of it.
func (l *limitListener) cheapest(p *peer, now time.Time) *limitConn {
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
		if c := v.idle.head; c != nil && l.quiet(c, now) && better(c, idle) {
			idle = c
		}
		if c := v.silent.head; c != nil && (own || hv >= hp+2) && l.quiet(c, now) && better(c, silent) {
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
	c.watched.Store(false)
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
		if l.timer != nil {
			l.timer.Stop()
		}
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
