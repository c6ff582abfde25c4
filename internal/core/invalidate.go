package core

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/orgauthz/orgauthz/cache"
	"github.com/orgauthz/orgauthz/internal/safego"
	"github.com/orgauthz/orgauthz/internal/transport"
	"github.com/orgauthz/orgauthz/invalidation"
)

// Invalidation across replicas (WithInvalidator): a purge of one client
// (Purge, PurgeAll, a 401) is published on the channel, and every replica's
// client applies what it receives. The cache is trusted only while the
// channel is known to be current:
//
//   - the Invalidator reports heartbeats that travel the same ordered
//     stream as the purges, each stamped with when its request was sent;
//   - a cached decision is served only while the clock, read on that
//     lookup, is before the latest heartbeat's send time plus the trust
//     window: the cache's horizon (cache.ServeUntil), which costs a hit
//     one atomic load, the clock being the one the hit reads for the
//     entry's expiry;
//   - otherwise the call goes to the server, as without a cache.
//
// So a replica whose channel is down, slow, or that was frozen (SIGSTOP: its
// last heartbeat is as old as the freeze) serves no cached decision until
// a heartbeat sent after the stall arrives, and that heartbeat arrives after
// every purge published before it was sent, which have then been applied. A
// channel that broke may have lost purges: the first heartbeat after Lost
// purges the whole cache before it is trusted again.
//
// Messages carry a digest of the token (tokenDigest), never the token:
// a version byte, a kind byte and, for one token, its 32-byte digest.
// Anything else is counted as malformed and ignored: a message can only
// remove cached decisions.
const (
	msgVersion  = 1
	msgToken    = 't' // purge one token's decisions: followed by its digest
	msgAll      = 'a' // purge every cached decision
	digestBytes = sha256.Size
)

// digestDomain separates the tokens' digests from any other SHA-256 of
// them.
const digestDomain = "orgauthz/invalidation/v1\x00"

// tokenDigest is what a message says of a token. It allocates nothing
// for a token of up to shortToken bytes, hashed from the stack: a
// per-call token's is made for each request it sends with an Invalidator
// (Core.digestOf).
func tokenDigest(token string) [digestBytes]byte {
	if len(token) <= shortToken {
		var buf [len(digestDomain) + shortToken]byte
		return sha256.Sum256(append(append(buf[:0], digestDomain...), token...))
	}
	h := sha256.New()
	h.Write([]byte(digestDomain))
	h.Write([]byte(token))
	var d [digestBytes]byte
	h.Sum(d[:0])
	return d
}

// shortToken bounds the tokens tokenDigest hashes from the stack: most
// JWTs are shorter, and a longer frame would grow more goroutines' stacks.
const shortToken = 2 << 10

// tokenMessage is the message that purges token's decisions everywhere.
func tokenMessage(token string) []byte {
	d := tokenDigest(token)
	return append([]byte{msgVersion, msgToken}, d[:]...)
}

// allMessage is the message that purges every replica's whole cache.
var allMessage = []byte{msgVersion, msgAll}

// replicas is the state of a client's invalidation channel; nil without
// an Invalidator.
type replicas struct {
	inv   invalidation.Invalidator
	trust time.Duration // the trust window
	// epoch is the origin of trustUntil, read from the client's clock;
	// testClock is set when that is a test's (Settings.Now), not the real
	// one.
	epoch     time.Time
	testClock bool
	// trustUntil is when, as time since epoch, the cache stops being
	// trusted: the latest heartbeat's send time plus the trust window;
	// math.MinInt64 while the channel is down or before its first
	// heartbeat.
	trustUntil atomic.Int64
	// gap is set by Lost (and at the start): the next heartbeat purges the
	// whole cache first. down is set by Lost, for a log line per break.
	// Both are written by the receiving goroutine only.
	gap, down bool
	// downSince is when the channel last went down, for the log line
	// that says it is back; lostAt the same as time since epoch: a
	// heartbeat sent before it says nothing of what the gap lost.
	downSince time.Time
	lostAt    time.Duration

	// refused holds when each refused token's purge was last published
	// (publishRefused); inFlight counts the publications under way, pubs
	// waits for them, and closed stops new ones (Close).
	refusedMu sync.Mutex
	refused   map[[digestBytes]byte]time.Time
	inFlight  int
	closed    bool
	pubs      sync.WaitGroup
	// ctx ends at Close.
	ctx context.Context

	cancel context.CancelFunc
	done   sync.WaitGroup

	received, malformed, gaps, recoveries, publishFailures atomic.Uint64
}

// initReplicas starts the subscription of inv, when there is one.
func (c *Core) initReplicas(inv invalidation.Invalidator, cacheSize int, cacheBytes int64, testClock bool) error {
	if inv == nil {
		return nil
	}
	r := &replicas{inv: inv, trust: invalidation.DefaultTrust, epoch: c.now(), gap: true,
		refused: make(map[[digestBytes]byte]time.Time), testClock: testClock}
	if w, ok := inv.(invalidation.Window); ok {
		if r.trust = w.TrustWindow(); r.trust <= 0 {
			return fmt.Errorf("%s: WithInvalidator: the invalidator's trust window must be positive, got %v", c.who.Peer.Pkg(), r.trust)
		}
	}
	if c.cache != nil {
		c.cache.digests = newDigestIndex(cacheSize, cacheBytes)
	}
	r.trustUntil.Store(math.MinInt64)
	c.cache.stopServing()
	r.downSince, r.lostAt = r.epoch, -1 // a heartbeat sent from the start counts
	ctx, cancel := context.WithCancel(context.Background())
	r.ctx, r.cancel = ctx, cancel
	c.replicas = r
	r.done.Go(func() { c.subscribe(ctx) })
	return nil
}

// counts adds the channel's counters to n (Core.Counts). The cache is
// bypassed while the last heartbeat is not fresh; the cache's horizon
// decides each hit.
func (r *replicas) counts(c *Core, n *Counts) {
	n.Received, n.Malformed, n.Gaps = r.received.Load(), r.malformed.Load(), r.gaps.Load()
	n.Recoveries, n.PublishFailures = r.recoveries.Load(), r.publishFailures.Load()
	n.Bypassed = r.elapsed(c) >= time.Duration(r.trustUntil.Load())
}

// elapsed returns the time since epoch, read now: with the real clock, on
// the monotonic clock alone (time.Since).
func (r *replicas) elapsed(c *Core) time.Duration {
	if r.testClock {
		return c.now().Sub(r.epoch)
	}
	return time.Since(r.epoch)
}

// subscribe runs the Invalidator's Subscribe until Close, calling it again,
// after a pause, when it gives up or panics. Each round (subscribeRound)
// runs whole under one safego.Call: its user code (the Invalidator, the
// Error method of its error, the logger) never ends the process, and a
// panic of it ends only that round. A round that ends its goroutine
// (runtime.Goexit in Subscribe) ends the subscription: the cache is then
// never trusted again, as while the channel is down.
func (c *Core) subscribe(ctx context.Context) {
	pause := resubscribeMin
	for ctx.Err() == nil {
		if p := safego.Call(func() { c.subscribeRound(ctx) }); p != nil {
			c.background("the invalidation channel's subscription", p)
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		pause = min(2*pause, resubscribeMax)
	}
}

// subscribeRound calls the Invalidator's Subscribe once and, when it
// returns or panics before Close, stops trusting the cache (Lost). The
// cache stops being served before anything is logged: a logger that
// panics leaves the channel down, never trusted.
func (c *Core) subscribeRound(ctx context.Context) {
	rc := receiver{c}
	var err error
	if p := safego.Call(func() { err = c.replicas.inv.Subscribe(ctx, rc) }); p != nil {
		err = errSubscribePanicked
		defer c.background("the Invalidator's Subscribe", p) // after Lost
	}
	if ctx.Err() != nil {
		return
	}
	if err == nil {
		err = errSubscribeReturned
	}
	rc.Lost(err)
}

var (
	errSubscribePanicked = errors.New("Subscribe panicked")
	errSubscribeReturned = errors.New("Subscribe returned")
)

// The pauses between calls of an Invalidator's Subscribe that returned
// before Close.
const (
	resubscribeMin = 100 * time.Millisecond
	resubscribeMax = 5 * time.Second
)

// closeReplicas stops the subscription and the publications of refused
// tokens, and waits for them to end.
func (c *Core) closeReplicas() {
	if r := c.replicas; r != nil {
		r.refusedMu.Lock()
		r.closed = true
		r.refusedMu.Unlock()
		r.cancel()
		r.done.Wait()
		r.pubs.Wait()
	}
}

// receiver is what the client's Invalidator reports to.
type receiver struct{ c *Core }

// Message applies a purge from the channel; see the package comment for
// the format.
func (rc receiver) Message(msg []byte) {
	c := rc.c
	r := c.replicas
	switch {
	case len(msg) == 2+digestBytes && msg[0] == msgVersion && msg[1] == msgToken:
		c.purgeDigest([digestBytes]byte(msg[2:]))
		r.received.Add(1) // counted once applied: Stats shows no purge as done before it is
	case len(msg) == 2 && msg[0] == msgVersion && msg[1] == msgAll:
		c.purgeAll()
		r.received.Add(1)
	default:
		if r.malformed.Add(1) == 1 {
			c.logBackground(slog.LevelWarn, c.who.Peer.Pkg()+": ignoring a malformed message on the invalidation channel (counted in Stats; later ones are not logged)", "bytes", len(msg))
		}
	}
}

// Heartbeat extends the trust in the cache to sent (or now, if sent is
// later) plus the trust window; after a gap it first purges everything
// cached.
func (rc receiver) Heartbeat(sent time.Time) {
	c := rc.c
	r := c.replicas
	sentAt := sent.Sub(r.epoch)
	if now := r.elapsed(c); sentAt > now {
		sentAt, sent = now, sent.Add(now-sentAt) // no heartbeat vouches for the future
	}
	if r.gap {
		if sentAt <= r.lostAt {
			return
		}
		c.purgeAll()
		r.gap = false
		r.recoveries.Add(1)
		if r.down {
			r.down = false
			c.logBackground(slog.LevelInfo, c.who.Peer.Pkg()+": the invalidation channel is back; purged the cache, which is trusted again",
				"down", c.now().Sub(r.downSince).String())
		}
	}
	// Only the receiving goroutine writes trustUntil and the horizon.
	if until := int64(sentAt + r.trust); until > r.trustUntil.Load() {
		r.trustUntil.Store(until)
		c.cache.serveUntil(sent.Add(r.trust))
	}
}

// Lost stops trusting the cache until the next heartbeat, which purges it.
func (rc receiver) Lost(err error) {
	c := rc.c
	r := c.replicas
	c.cache.stopServing()
	r.trustUntil.Store(math.MinInt64)
	r.gap = true
	now := c.now()
	r.lostAt = now.Sub(r.epoch)
	if r.down {
		return // still down: logged once
	}
	r.down = true
	r.downSince = now
	r.gaps.Add(1)
	cause := "unknown"
	if err != nil {
		cause = safego.Text(err) // the Invalidator's error: its Error method is user code
	}
	c.logBackground(slog.LevelWarn, c.who.Peer.Pkg()+": the invalidation channel is down; no cached decision is served until it is back", "cause", cause)
}

// Purge drops every cached decision of token, under either scheme, and
// publishes the purge to the other replicas when there is an Invalidator.
// The local purge is done whatever the error, which says the other
// replicas may not have heard of it.
func (c *Core) Purge(ctx context.Context, token string) error {
	if c.x.Closed() {
		return c.who.Peer.Err(transport.ErrClosed)
	}
	if token == "" {
		return fmt.Errorf("%s: Purge: the token is empty; pass the token whose decisions to drop", c.who.Peer.Pkg())
	}
	for _, s := range []transport.Scheme{transport.SchemeBearer, transport.SchemeDPoP} {
		c.purge(transport.Ident{Scheme: s, Token: token})
	}
	return c.publish(ctx, "Purge", tokenMessage(token))
}

// PurgeAll drops every cached decision and publishes that to the other
// replicas when there is an Invalidator.
func (c *Core) PurgeAll(ctx context.Context) error {
	if c.x.Closed() {
		return c.who.Peer.Err(transport.ErrClosed)
	}
	c.purgeAll()
	return c.publish(ctx, "PurgeAll", allMessage)
}

// publish sends msg on the channel, if there is one, for at most the
// client's timeout (whatever ctx's deadline); after Close (which waits for
// the publications under way) it sends nothing and fails with ErrClosed.
func (c *Core) publish(ctx context.Context, op string, msg []byte) error {
	r := c.replicas
	if r == nil {
		return nil
	}
	r.refusedMu.Lock()
	closed := r.closed
	if !closed {
		r.pubs.Add(1)
	}
	r.refusedMu.Unlock()
	if closed {
		return c.who.Peer.Err(transport.ErrClosed)
	}
	defer r.pubs.Done()
	// Every publication is bounded by the client's timeout (WithTimeout),
	// whatever ctx's deadline: Close waits for the publications under way,
	// and must not wait forever behind a ctx without one.
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	if err := r.inv.Publish(ctx, msg); err != nil {
		r.publishFailures.Add(1)
		return fmt.Errorf("%s: %s: purged here, but publishing to the other replicas failed: %w", c.who.Peer.Pkg(), op, err)
	}
	return nil
}

// publishRefused publishes the purge of a token the server refused (401)
// on a goroutine of its own, so that the call, which fails on its own
// account, never waits for the channel past its deadline (a Redis client
// may not honour a context's deadline); a failure, a panic of the
// Invalidator's Publish included, is counted and logged.
//
// A token refused again within refusalQuiet of its last publication is
// not published again: a revoked token that a caller keeps sending would
// otherwise publish a purge per request, which every replica applies. At
// most maxRefusedInFlight publications run at once; a refusal beyond them
// is not published (counted as a failure), and the token's next one is.
func (c *Core) publishRefused(token string) {
	r := c.replicas
	if r == nil {
		return
	}
	msg := tokenMessage(token)
	dg := [digestBytes]byte(msg[2:])
	now := c.now()
	r.refusedMu.Lock()
	last, seen := r.refused[dg]
	publish := !r.closed && !(seen && now.Sub(last) < refusalQuiet && now.Sub(last) >= 0)
	if publish && r.inFlight >= maxRefusedInFlight {
		publish = false
		r.publishFailures.Add(1)
	}
	if publish {
		if len(r.refused) >= maxRefused {
			clear(r.refused)
		}
		r.refused[dg] = now
		r.inFlight++
		r.pubs.Add(1)
	}
	r.refusedMu.Unlock()
	if !publish {
		return
	}
	c.goBackground("the publication of a refused token", func() {
		defer r.pubs.Done()
		// The slot is released on every way out, a panic or a
		// runtime.Goexit of the Invalidator's Publish included (errEnded
		// stays then): a slot kept for good would, after
		// maxRefusedInFlight of them, leave no refused token published.
		err := errPublishEnded
		defer func() {
			r.refusedMu.Lock()
			r.inFlight--
			if err != nil {
				delete(r.refused, dg) // the next refusal tries again
			}
			r.refusedMu.Unlock()
			if err == errPublishEnded {
				r.publishFailures.Add(1)
			}
		}()
		ctx, cancel := context.WithTimeout(r.ctx, refusedPublishTimeout)
		defer cancel()
		if p := safego.Call(func() { err = c.publish(ctx, "a 401", msg) }); p != nil {
			c.background("the Invalidator's Publish", p)
			r.publishFailures.Add(1)
			err = errors.New("the Invalidator's Publish panicked")
		}
		if err != nil {
			c.logBackground(slog.LevelWarn, c.who.Peer.Pkg()+": could not tell the other replicas of a refused token", "cause", safego.Text(err))
		}
	})
}

// errPublishEnded is what a publication of a refused token whose Publish
// ended its goroutine (runtime.Goexit) failed with.
var errPublishEnded = errors.New("the Invalidator's Publish ended its goroutine")

// refusalQuiet is how long after a refused token was published a refusal
// of it is not published again; maxRefused bounds the tokens remembered
// (when full, the memory starts over); maxRefusedInFlight bounds the
// publications under way, each of which refusedPublishTimeout bounds.
const (
	refusalQuiet          = time.Second
	maxRefused            = 1024
	maxRefusedInFlight    = 64
	refusedPublishTimeout = invalidation.DefaultTrust
)

// digestIndex maps the digests of the tokens whose decisions the cache
// may hold to their groups, so that a purge from another replica costs a
// lookup, not a hash of every token cached (which a flood of purges would
// turn into a denial of service). A token is indexed when a Writer is
// made for it, before anything of it is stored; groups the cache no longer
// holds are pruned when the index has grown past twice the cache's
// entries, or its tokens past twice the cache's byte bound, so that its
// size and its memory stay in proportion to the cache's.
type digestIndex struct {
	mu    sync.Mutex
	ids   map[transport.Ident][digestBytes]byte
	byDig map[[digestBytes]byte][]transport.Ident
	limit int // the size that triggers a pruning
	floor int // the cache's entry bound: the least limit
	// bytes is the length of the tokens indexed; byteLimit the length
	// that triggers a pruning, at least byteFloor, the cache's byte bound.
	bytes, byteLimit, byteFloor int64
}

func newDigestIndex(entries int, maxBytes int64) *digestIndex {
	return &digestIndex{
		ids:   make(map[transport.Ident][digestBytes]byte),
		byDig: make(map[[digestBytes]byte][]transport.Ident),
		limit: 2 * entries, floor: entries,
		byteLimit: twice(maxBytes), byteFloor: maxBytes,
	}
}

// add indexes id, whose group lru holds (a Writer of it is open).
func (x *digestIndex) add(id transport.Ident, lru *cache.Cache[transport.Ident, string, bool]) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if _, ok := x.ids[id]; ok {
		return
	}
	if len(x.ids) >= x.limit || x.bytes+int64(len(id.Token)) > x.byteLimit {
		for old, dg := range x.ids {
			if !lru.Holds(old) {
				x.drop(old, dg)
			}
		}
		x.limit = max(2*len(x.ids), 2*x.floor)
		x.byteLimit = twice(max(x.bytes, x.byteFloor))
	}
	id = owned(id) // kept beyond the call: not a view of the caller's bytes
	dg := tokenDigest(id.Token)
	x.ids[id] = dg
	x.bytes += int64(len(id.Token))
	x.byDig[dg] = append(x.byDig[dg], id)
}

// twice returns 2n, or math.MaxInt64 where that would overflow.
func twice(n int64) int64 { return min(n, math.MaxInt64/2) * 2 }

// drop forgets id; x.mu must be held.
func (x *digestIndex) drop(id transport.Ident, dg [digestBytes]byte) {
	delete(x.ids, id)
	x.bytes -= int64(len(id.Token))
	list := x.byDig[dg]
	for i, v := range list {
		if v == id {
			list = append(list[:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(x.byDig, dg)
	} else {
		x.byDig[dg] = list
	}
}

// take forgets and returns the groups of the tokens whose digest is dg.
func (x *digestIndex) take(dg [digestBytes]byte) []transport.Ident {
	x.mu.Lock()
	defer x.mu.Unlock()
	list := x.byDig[dg]
	delete(x.byDig, dg)
	for _, id := range list {
		delete(x.ids, id)
		x.bytes -= int64(len(id.Token))
	}
	return list
}
