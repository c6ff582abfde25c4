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
	"unsafe"

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
// Messages carry a digest of the token, never the token: a version byte,
// a kind byte and, for one token, a 32-byte digest. Anything else is
// counted as malformed and ignored: a message can only remove cached
// decisions. A token's purge is two messages:
//
//   - msgIdentity, the digest of the token's identity (identityDigest):
//     every replica of this version or later drops the decisions of every
//     spelling of the token it holds (see identity.go);
//   - msgToken, the digest of the token's own string (tokenDigest), the
//     one message replicas of earlier versions know (they count the other
//     as malformed, and ignore it): so that, during a rolling upgrade,
//     they still hear this version's purges of the spellings they hold.
//     A replica of this version applies it too, to the identity of the
//     token of that digest if it holds that spelling (the purges of
//     replicas of earlier versions, which send nothing else).
//
// So each is counted as a purge received (Counts.Received): a token's
// purge published by this version counts twice.
const (
	msgVersion  = 1
	msgToken    = 't' // purge one token's decisions: followed by its own digest
	msgIdentity = 'i' // purge every spelling of one token: followed by its identity's digest
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

// tokenMessage is the message that purges token's decisions on replicas
// of earlier versions; identityMessage the one that purges, on every
// replica of this version or later, every spelling of the token whose
// identity's digest is identity.
func tokenMessage(token string) []byte { return ownMessage(tokenDigest(token)) }

// ownMessage is tokenMessage of the token whose own digest is own.
func ownMessage(own [digestBytes]byte) []byte {
	return append([]byte{msgVersion, msgToken}, own[:]...)
}

func identityMessage(identity [digestBytes]byte) []byte {
	return append([]byte{msgVersion, msgIdentity}, identity[:]...)
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

	// refusedMu guards the refused tokens' purges waiting to be published
	// (refusals, see refused.go), closed, which stops new publications
	// (Close), and what Close waits for (see quiet): the posts under way
	// (posting), which may queue a refusal, and the publications of
	// Purge and PurgeAll (publishing); quietly is closed when that is
	// done, for the Close that made it.
	refusedMu sync.Mutex
	refusals
	closed     bool
	posting    int
	publishing int
	quietly    chan struct{}
	// closing is made by the first Close and closed when its work is
	// done; closeBy bounds how long another Close waits for it.
	closing chan struct{}
	closeBy time.Time
	// ctx ends at Close; stopped is closed when the subscription ended.
	ctx     context.Context
	cancel  context.CancelFunc
	stopped chan struct{}

	received, malformed, gaps, recoveries, publishFailures, overflows atomic.Uint64
	// publishFailing is set by a failed publication of a refused token's
	// purge and cleared by a delivered one: a run of failures is logged
	// once.
	publishFailing atomic.Bool
}

// initReplicas starts the subscription of inv, when there is one.
func (c *Core) initReplicas(inv invalidation.Invalidator, testClock bool) error {
	if inv == nil {
		return nil
	}
	r := &replicas{inv: inv, trust: invalidation.DefaultTrust, epoch: c.now(), gap: true,
		refusals: newRefusals(), testClock: testClock}
	if w, ok := inv.(invalidation.Window); ok {
		if r.trust = w.TrustWindow(); r.trust <= 0 {
			return fmt.Errorf("%s: WithInvalidator: the invalidator's trust window must be positive, got %v", c.who.Peer.Pkg(), r.trust)
		}
	}
	if c.cache != nil {
		c.cache.digests.hearEarlierVersions()
	}
	r.trustUntil.Store(math.MinInt64)
	c.cache.stopServing()
	r.downSince, r.lostAt = r.epoch, -1 // a heartbeat sent from the start counts
	ctx, cancel := context.WithCancel(context.Background())
	r.ctx, r.cancel, r.stopped = ctx, cancel, make(chan struct{})
	c.replicas = r
	c.goBackground("the invalidation channel's subscription", func() {
		defer close(r.stopped)
		c.subscribe(ctx)
	})
	return nil
}

// counts adds the channel's counters to n (Core.Counts). The cache is
// bypassed while the last heartbeat is not fresh; the cache's horizon
// decides each hit.
func (r *replicas) counts(c *Core, n *Counts) {
	n.Received, n.Malformed, n.Gaps = r.received.Load(), r.malformed.Load(), r.gaps.Load()
	n.Recoveries, n.PublishFailures = r.recoveries.Load(), r.publishFailures.Load()
	n.RefusalOverflows = r.overflows.Load()
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

// closeReplicas first lets the calls under way end and the refused
// tokens' purges they and earlier calls queued be published, for at most
// closeDrainTimeout (a replica shut down just after a 401, or while a call
// was at the server, must not take the other replicas' purge with it:
// a-rep13 F1, a-fix13 F1), then stops the subscription and the
// publications, and waits for them to end, for at most closeStopTimeout:
// Close never waits on user code (an Invalidator whose Publish or
// Subscribe ignores its context) without a bound (a-fix13 F2).
func (c *Core) closeReplicas() {
	r := c.replicas
	if r == nil {
		return
	}
	// One Close does the work; another, or one that user code called
	// from inside it (a logger, an event handler, the Invalidator), waits
	// for it no longer than its bound, and nothing is logged, no user
	// code called, before the work is done (a-fix13b F1: a logger that
	// called Close on the warning made Close call itself for ever).
	r.refusedMu.Lock()
	first := r.closing == nil
	if first {
		r.closing = make(chan struct{})
		r.closeBy = time.Now().Add(closeDrainTimeout + closeStopTimeout)
	}
	closing, by := r.closing, r.closeBy
	r.refusedMu.Unlock()
	if !first {
		t := time.NewTimer(max(time.Until(by), 0))
		defer t.Stop()
		select {
		case <-closing:
		case <-t.C:
		}
		return
	}
	drained := r.waitQuiet(closeDrainTimeout)
	r.refusedMu.Lock()
	r.closed = true
	r.refusedMu.Unlock()
	r.cancel()
	stop := time.Now().Add(closeStopTimeout)
	t := time.NewTimer(closeStopTimeout)
	select {
	case <-r.stopped:
	case <-t.C:
	}
	t.Stop()
	stopped := r.waitQuiet(max(time.Until(stop), 0)) && isClosed(r.stopped)
	close(closing)
	if !drained {
		c.logBackground(slog.LevelWarn, c.who.Peer.Pkg()+": closed with refused tokens' purges not yet delivered to the other replicas; they stop trusting their caches when this channel's heartbeats stop",
			"waited", closeDrainTimeout)
	}
	if !stopped {
		c.logBackground(slog.LevelWarn, c.who.Peer.Pkg()+": closed with the Invalidator's Subscribe or Publish still running past its context's end",
			"waited", closeStopTimeout)
	}
}

// quiet reports whether what Close waits for is done: before the
// publications are stopped, no post under way, no refusal waiting nor
// being published and no Purge publishing; after, no publisher nor Purge
// running. r's refusedMu must be held.
func (r *replicas) quiet() bool {
	if r.publishers > 0 || r.publishing > 0 {
		return false
	}
	return r.closed || r.posting == 0 && r.backlog() == 0
}

// settled closes quietly if a Close waits and what it waits for is done;
// r's refusedMu must be held. Every change that can make r quiet calls it.
func (r *replicas) settled() {
	if r.quietly != nil && r.quiet() {
		close(r.quietly)
		r.quietly = nil
	}
}

// waitQuiet waits until r is quiet, for at most d, and reports whether it
// is. Concurrent Closes share one signal.
func (r *replicas) waitQuiet(d time.Duration) bool {
	r.refusedMu.Lock()
	if r.quiet() {
		r.refusedMu.Unlock()
		return true
	}
	if r.quietly == nil {
		r.quietly = make(chan struct{})
	}
	quietly := r.quietly
	r.refusedMu.Unlock()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-quietly:
		return true
	case <-t.C:
		return false
	}
}

// posted counts a post under way (n = 1) or ended (n = -1), after its 401
// was handled: Close waits for the refusals it may queue.
func (r *replicas) posted(n int) {
	r.refusedMu.Lock()
	r.posting += n
	r.settled()
	r.refusedMu.Unlock()
}

func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// closeDrainTimeout bounds how long Close waits for the calls under way
// and the refused tokens' purges: one publication's bound, and the trust
// window in which the other replicas, hearing no heartbeat on a channel
// that is down, stop trusting their caches anyway. closeStopTimeout
// bounds how long it then waits for the Invalidator's calls to end.
const (
	closeDrainTimeout = refusedPublishTimeout
	closeStopTimeout  = refusedPublishTimeout
)

// receiver is what the client's Invalidator reports to.
type receiver struct{ c *Core }

// Message applies a purge from the channel; see the package comment for
// the format.
func (rc receiver) Message(msg []byte) {
	c := rc.c
	r := c.replicas
	switch {
	case len(msg) == 2+digestBytes && msg[0] == msgVersion && msg[1] == msgIdentity:
		c.purgeIdentity([digestBytes]byte(msg[2:]))
		r.received.Add(1) // counted once applied: Stats shows no purge as done before it is
	case len(msg) == 2+digestBytes && msg[0] == msgVersion && msg[1] == msgToken:
		c.purgeDigest([digestBytes]byte(msg[2:]))
		r.received.Add(1)
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

// Purge drops every cached decision of token, every spelling of it
// (retire), under either scheme, and publishes the purge to the other
// replicas when there is an Invalidator. The local purge is done whatever
// the error, which says the other replicas may not have heard of it.
func (c *Core) Purge(ctx context.Context, token string) error {
	if c.x.Closed() {
		return c.who.Peer.Err(transport.ErrClosed)
	}
	if token == "" {
		return fmt.Errorf("%s: Purge: the token is empty; pass the token whose decisions to drop", c.who.Peer.Pkg())
	}
	identity := identityDigest(token)
	for _, s := range []transport.Scheme{transport.SchemeBearer, transport.SchemeDPoP} {
		c.retire(transport.Ident{Scheme: s, Token: token}, identity)
	}
	if c.replicas == nil {
		return nil
	}
	return c.publish(ctx, "Purge", identityMessage(identity), tokenMessage(token))
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

// publish sends msgs on the channel, if there is one, in order, for at
// most the client's timeout in all (whatever ctx's deadline); after
// Close (which waits for the publications under way) it sends nothing and
// fails with ErrClosed. Each is sent whatever became of the one before; a
// failure of any counts one failed publication, and the first error is
// returned.
func (c *Core) publish(ctx context.Context, op string, msgs ...[]byte) error {
	r := c.replicas
	if r == nil {
		return nil
	}
	r.refusedMu.Lock()
	closed := r.closed
	if !closed {
		r.publishing++
	}
	r.refusedMu.Unlock()
	if closed {
		return c.who.Peer.Err(transport.ErrClosed)
	}
	defer func() {
		r.refusedMu.Lock()
		r.publishing--
		r.settled()
		r.refusedMu.Unlock()
	}()
	// Every publication is bounded by the client's timeout (WithTimeout),
	// whatever ctx's deadline: Close waits for the publications under way,
	// and must not wait forever behind a ctx without one.
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	var first error
	for _, msg := range msgs {
		if err := r.inv.Publish(ctx, msg); err != nil && first == nil {
			first = err
		}
	}
	if first != nil {
		r.publishFailures.Add(1)
		return fmt.Errorf("%s: %s: purged here, but publishing to the other replicas failed: %w", c.who.Peer.Pkg(), op, first)
	}
	return nil
}

// digestIndex finds the tokens whose decisions the cache may hold by
// their identity's digest (identityDigest), so that a retirement of a
// token, here or from another replica, drops the decisions of every
// spelling of it at the cost of a lookup, not of a hash of every token
// cached (which a flood of purges would turn into a denial of service).
// With an Invalidator it also finds them by their own digest
// (tokenDigest), which replicas of earlier versions publish (byToken).
//
// A token is indexed, under the scheme it is cached with, when a Writer is
// made for it, before anything of it is stored. The index holds no copy of
// a token: the string it keeps is the cache's own copy, in the token's
// group (cache.Writer.GroupValue), which it keeps alive, no more, once the
// cache has let the group go. Each token costs one spelling (64 bytes)
// and its places in two maps, about 190 bytes in all, and 80 more with an
// Invalidator (BenchmarkBytesPerCachedToken: a token of 900 bytes costs
// its group and one entry about 1,100). Tokens of groups the cache no longer
// holds are pruned when the index has grown past twice the cache's
// entries, or its tokens past twice the cache's byte bound, so that its
// size and its memory stay in proportion to the cache's.
type digestIndex struct {
	mu sync.RWMutex
	// ids finds an indexed token (the cache's copy of it, once whatever
	// its schemes) by its string; byIdentity the first of the spellings
	// of an identity, which list the others (spelling.next).
	ids        map[string]*spelling
	byIdentity map[[digestBytes]byte]*spelling
	// byToken finds a token by its own digest; nil without an
	// Invalidator (hearEarlierVersions).
	byToken map[[digestBytes]byte]*spelling
	limit   int // the size that triggers a pruning
	floor   int // the cache's entry bound: the least limit
	// bytes is the length of the tokens indexed; byteLimit the length
	// that triggers a pruning, at least byteFloor, the cache's byte bound.
	bytes, byteLimit, byteFloor int64
}

// spelling is one indexed token: the cache's copy of it, its identity's
// digest, its own digest (tokenDigest) when the index finds tokens by it
// (byToken), the schemes it is indexed under (schemeBit), and its
// neighbours in the list of its identity's spellings, which a caller can
// make as long as it likes for free (any signature): so that taking one
// out costs O(1), never a walk of that list. Its fields change under
// digestIndex.mu.
type spelling struct {
	token      string
	identity   [digestBytes]byte
	own        [digestBytes]byte
	schemes    uint8
	prev, next *spelling
}

// stale reports whether sp, indexed under id's scheme alone, holds
// another copy of the token than id's, the cache's copy now: the cache let
// the token's group go and made it again. The index then holds the new
// one, so that it keeps no more than one copy of a token alive while the
// token is in use. (A token indexed under two schemes, the groups of both
// in use, keeps the copy it has.)
func (sp *spelling) stale(id transport.Ident) bool {
	return sp.schemes == schemeBit(id.Scheme) && unsafe.StringData(sp.token) != unsafe.StringData(id.Token)
}

// schemeBit is s in a set of schemes; allSchemes is every scheme.
func schemeBit(s transport.Scheme) uint8 { return 1 << s }

const allSchemes = ^uint8(0)

// The schemes, for the sets of them (schemeBit).
var schemes = [...]transport.Scheme{transport.SchemeBearer, transport.SchemeDPoP, transport.SchemeNone}

func newDigestIndex(entries int, maxBytes int64) *digestIndex {
	return &digestIndex{
		ids:        make(map[string]*spelling),
		byIdentity: make(map[[digestBytes]byte]*spelling),
		limit:      2 * entries, floor: entries,
		byteLimit: twice(maxBytes), byteFloor: maxBytes,
	}
}

// hearEarlierVersions makes the index find the tokens it indexes from
// then on by their own digest too (tokenIdentity), for the purges of
// replicas of earlier versions, which name a token by that digest alone:
// a client with an Invalidator, before any token is indexed.
func (x *digestIndex) hearEarlierVersions() {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.byToken = make(map[[digestBytes]byte]*spelling)
}

// add indexes id, whose group lru holds (a Writer of it is open): id.Token
// must be the cache's copy of the token (cache.Writer.GroupValue), which
// the index keeps. A token indexed already costs a lookup under a read
// lock; a new one the digests of its identity and (with byToken) of
// itself, made before the lock is taken.
func (x *digestIndex) add(id transport.Ident, lru *cache.Cache[transport.Ident, string, bool]) {
	bit := schemeBit(id.Scheme)
	x.mu.RLock()
	sp := x.ids[id.Token]
	done := sp != nil && sp.schemes&bit != 0 && !sp.stale(id)
	earlier := x.byToken != nil
	x.mu.RUnlock()
	if done {
		return
	}
	var identity, own [digestBytes]byte
	made := sp == nil // the digests, else made under the lock: rarely needed
	if made {
		identity = identityDigest(id.Token)
		if earlier {
			own = tokenDigest(id.Token)
		}
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if sp := x.ids[id.Token]; sp != nil {
		if sp.stale(id) {
			delete(x.ids, sp.token)
			sp.token = id.Token
			x.ids[sp.token] = sp
		}
		sp.schemes |= bit
		return
	}
	if !made { // indexed when the lock was read, pruned since
		identity = identityDigest(id.Token)
	}
	if len(x.ids) >= x.limit || x.bytes+int64(len(id.Token)) > x.byteLimit {
		x.prune(lru)
	}
	sp = &spelling{token: id.Token, identity: identity, schemes: bit, next: x.byIdentity[identity]}
	if sp.next != nil {
		sp.next.prev = sp
	}
	x.byIdentity[identity] = sp
	x.ids[id.Token] = sp
	x.bytes += int64(len(id.Token))
	if x.byToken != nil {
		if !made || !earlier { // or hearEarlierVersions came between the locks
			own = tokenDigest(id.Token)
		}
		sp.own = own
		x.byToken[own] = sp
	}
}

// prune forgets the tokens, under each scheme, whose groups lru no longer
// holds, and sets the next limits; x.mu must be held.
func (x *digestIndex) prune(lru *cache.Cache[transport.Ident, string, bool]) {
	for tok, sp := range x.ids {
		for _, s := range schemes {
			if sp.schemes&schemeBit(s) != 0 && !lru.Holds(transport.Ident{Scheme: s, Token: tok}) {
				sp.schemes &^= schemeBit(s)
			}
		}
		if sp.schemes == 0 {
			x.unlink(sp)
			x.forget(sp)
		}
	}
	x.limit = max(2*len(x.ids), 2*x.floor)
	x.byteLimit = twice(max(x.bytes, x.byteFloor))
}

// twice returns 2n, or math.MaxInt64 where that would overflow.
func twice(n int64) int64 { return min(n, math.MaxInt64/2) * 2 }

// unlink takes sp out of the list of its identity's spellings, in O(1);
// x.mu must be held.
func (x *digestIndex) unlink(sp *spelling) {
	switch {
	case sp.prev != nil:
		sp.prev.next = sp.next
	case sp.next != nil: // the first
		x.byIdentity[sp.identity] = sp.next
	default: // the only one
		delete(x.byIdentity, sp.identity)
	}
	if sp.next != nil {
		sp.next.prev = sp.prev
	}
	sp.prev, sp.next = nil, nil
}

// forget forgets sp, but for its place in its identity's list; x.mu must
// be held. Nothing is hashed under the lock: its own digest, which byToken
// finds it by, is kept (sp.own).
func (x *digestIndex) forget(sp *spelling) {
	delete(x.ids, sp.token)
	x.bytes -= int64(len(sp.token))
	if x.byToken != nil && x.byToken[sp.own] == sp {
		delete(x.byToken, sp.own)
	}
}

// take forgets the tokens whose identity's digest is identity under the
// schemes of the set which (schemeBit, allSchemes), and returns them, each
// under each of those schemes it was indexed under.
func (x *digestIndex) take(identity [digestBytes]byte, which uint8) []transport.Ident {
	x.mu.Lock()
	defer x.mu.Unlock()
	var out []transport.Ident
	var kept *spelling // the spellings left, in reverse order
	for sp := x.byIdentity[identity]; sp != nil; {
		next := sp.next
		for _, s := range schemes {
			if sp.schemes&which&schemeBit(s) != 0 {
				out = append(out, transport.Ident{Scheme: s, Token: sp.token})
			}
		}
		if sp.schemes &^= which; sp.schemes == 0 {
			x.forget(sp)
			sp.prev, sp.next = nil, nil
		} else {
			sp.prev, sp.next = nil, kept
			if kept != nil {
				kept.prev = sp
			}
			kept = sp
		}
		sp = next
	}
	if kept == nil {
		delete(x.byIdentity, identity)
	} else {
		x.byIdentity[identity] = kept
	}
	return out
}

// tokenIdentity returns the identity's digest of the indexed token whose
// own digest (tokenDigest) is own, and whether there is one: always false
// without an Invalidator (hearEarlierVersions).
func (x *digestIndex) tokenIdentity(own [digestBytes]byte) ([digestBytes]byte, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if sp := x.byToken[own]; sp != nil {
		return sp.identity, true
	}
	return [digestBytes]byte{}, false
}
