package core

import (
	"context"
	"errors"
	"time"

	"github.com/orgauthz/orgauthz/cache"
	"github.com/orgauthz/orgauthz/internal/transport"
)

// The decision cache holds the server's allow and deny answers (true and
// false), grouped by token so that a token's entries go together
// (SetToken, ClearToken, a 401) in time proportional to their number. Keys
// below the token are each client's: what identifies a decision on its
// wire. Memory is bounded in entries and in bytes (cache.WithMaxBytes),
// and no caller chooses what one entry costs: a token longer than
// MaxCachedToken is never cached, and each client bounds its keys. Tokens
// are compared whole, never by hash: two tokens never share an entry, and
// a decision is served only to the exact token string the server answered
// for. A token is retired, though, by what it is: every cached spelling of
// it goes (retire, identity.go).

// MaxCachedToken is the longest token whose decisions are cached.
const MaxCachedToken = 8 << 10

// Group is a handle on one token's entries: its Get allocates nothing.
type Group = cache.Group[transport.Ident, string, bool]

// decisions is the cache; nil when caching is disabled.
type decisions struct {
	lru               *cache.Cache[transport.Ident, string, bool]
	allowTTL, denyTTL time.Duration
	// digests finds the groups of every spelling of a token by the digest
	// of its identity, for its retirement (retire), here or from another
	// replica.
	digests *digestIndex
}

func newDecisions(s *Settings) (*decisions, error) {
	if s.CacheSize == 0 {
		return nil, nil
	}
	opts := []cache.Option{cache.WithMaxBytes(s.CacheMaxBytes)}
	if s.Now != nil { // else the cache reads the monotonic clock its own, cheaper way
		opts = append(opts, cache.WithClock(s.Now))
	}
	lru, err := cache.New[transport.Ident, string, bool](s.CacheSize, opts...)
	if err != nil {
		return nil, err
	}
	return &decisions{lru: lru, allowTTL: s.AllowTTL, denyTTL: s.DenyTTL,
		digests: newDigestIndex(s.CacheSize, s.CacheMaxBytes)}, nil
}

// cached reports whether id's decisions may be cached.
func (d *decisions) cached(id transport.Ident) bool {
	return d != nil && len(id.Token) <= MaxCachedToken
}

// pin returns a handle on the entries of the client's own token, held
// until the token is replaced (Group.Unpin), so that its hits never hash
// the token; nil when they are not cached.
func (d *decisions) pin(id transport.Ident) *Group {
	if !d.cached(id) {
		return nil
	}
	return d.lru.Pin(id) // the cache keeps its own copy of the token
}

// lookup returns the handle through which a call with a per-call token
// reads its entries (one hash of the token per call, not per decision);
// nil when they are not cached.
func (d *decisions) lookup(id transport.Ident) *Group {
	if !d.cached(id) {
		return nil
	}
	return d.lru.Lookup(id)
}

// retire, purgeIdentity, purgeDigest, purge and purgeAll drop cached
// decisions, and before that keep a call that begins once a purge is under
// way from sharing a request sent before it, by the same test. Every purge
// of the client goes through them.
//
// The retirement of a token (Purge, a 401, the token SetToken or
// ClearToken replaced) acts on its identity (identity.go), not on the
// spelling at hand: retire drops the flights and the cached decisions of
// every spelling of id's token under id's scheme, whose identity's digest
// is identity (flightKey.identity, the digest index), and no other token's
// (one token's retirement does not split other callers' requests).
// purgeIdentity does the same under every scheme for another replica's
// purge (msgIdentity); purgeDigest for the purge of a replica of an
// earlier version (msgToken), which names one spelling by its own digest:
// it retires the flights of that spelling (flightKey.digest) and, if the
// index holds that spelling, everything of its identity. The flights are
// retired whether or not their decisions are cached; the decisions found
// are those of every token the cache holds entries or writers of (one it
// never held costs a lookup).
//
// purge drops the flights and the decisions of id's token alone, this
// spelling: not a retirement, but a wildcard's (SendWide) or a call's
// that left an answer it was to store (send). purgeAll counts the purge
// (Core.purges) that every flight's key holds.
func (c *Core) retire(id transport.Ident, identity [digestBytes]byte) {
	c.flights.Retire(func(k flightKey) bool { return k.identity == flightOf(identity) && k.id.Scheme == id.Scheme })
	c.cache.retire(id, identity, schemeBit(id.Scheme))
}

func (c *Core) purgeIdentity(identity [digestBytes]byte) {
	c.flights.Retire(func(k flightKey) bool { return k.identity == flightOf(identity) })
	c.cache.retire(transport.Ident{}, identity, allSchemes)
}

func (c *Core) purgeDigest(dg [digestBytes]byte) {
	c.flights.Retire(func(k flightKey) bool { return k.digest == flightOf(dg) })
	if identity, ok := c.cache.tokenIdentity(dg); ok {
		c.purgeIdentity(identity)
	}
}

func (c *Core) purge(id transport.Ident) {
	c.flights.Retire(func(k flightKey) bool { return k.id == id })
	c.cache.purge(id)
}

func (c *Core) purgeAll() {
	c.purges.Add(1)
	c.cache.purgeAll()
}

func (d *decisions) purge(id transport.Ident) {
	if d != nil {
		d.lru.RemoveGroup(id)
	}
}

// retire drops the decisions of every token whose identity's digest is
// identity under the schemes of the set which, all those the digest index
// knows (all the cache may hold entries of), and id's, a token of them
// (the zero Ident for none), whether it knows it or not.
func (d *decisions) retire(id transport.Ident, identity [digestBytes]byte, which uint8) {
	if d == nil {
		return
	}
	if id != (transport.Ident{}) {
		d.lru.RemoveGroup(id)
	}
	for _, other := range d.digests.take(identity, which) {
		d.lru.RemoveGroup(other)
	}
}

// tokenIdentity returns the identity's digest of the cached token whose
// own digest (tokenDigest) is dg, and whether the digest index knows one
// (only with an Invalidator).
func (d *decisions) tokenIdentity(dg [digestBytes]byte) ([digestBytes]byte, bool) {
	if d == nil {
		return [digestBytes]byte{}, false
	}
	return d.digests.tokenIdentity(dg)
}

// serveUntil makes the cache serve nothing from t on (cache.ServeUntil);
// stopServing at once.
func (d *decisions) serveUntil(t time.Time) {
	if d != nil {
		d.lru.ServeUntil(t)
	}
}

func (d *decisions) stopServing() {
	if d != nil {
		d.lru.StopServing()
	}
}

// purgeAll drops every cached decision; Writers made before it store
// nothing.
func (d *decisions) purgeAll() {
	if d != nil {
		d.lru.Purge()
	}
}

// Writer stores the decisions of one request for one token. It stores
// nothing once the token's entries were purged after it was made, so that
// an answer in flight cannot bring a purged token's decisions back. A nil
// *Writer (no cache, or a token too long to cache) stores nothing.
//
// A Writer handed out with a 200 answer (Send) that is closed before the
// caller said it read the answer (Used: it could not, the answer being
// empty, cut cleanly, past its bound, not the answer asked for) purges
// its token's decisions as it closes: the server decided, newer than what
// the cache holds, and the client cannot say what.
type Writer struct {
	w  *cache.Writer[transport.Ident, string, bool]
	d  *decisions
	id transport.Ident
	// answered: handed out with a 200; used: Used was called.
	answered, used bool
}

// Used says that the answer the Writer was handed out with was read, and
// what it says stored or forgotten through the Writer (a pair it does not
// cache included): closing it then purges nothing.
func (w *Writer) Used() {
	if w != nil {
		w.used = true
	}
}

// writer returns the Writer of id's decisions, and indexes id
// (digestIndex) before anything of it is stored.
func (d *decisions) writer(id transport.Ident) *Writer {
	if !d.cached(id) {
		return nil
	}
	w := &Writer{w: d.lru.Writer(id), d: d, id: id} // the cache keeps its own copy of the token
	// After the Writer, whose group holds the cache's copy of the token,
	// which the index keeps: the group is held while it is indexed.
	d.digests.add(w.w.GroupValue(), d.lru)
	return w
}

// Add stores the server's verdict on key: allowed for the allow TTL,
// denied for the deny TTL. The cache keeps its own copy of key (in the
// entry's allocation), so key may be a view of bytes the caller reuses.
func (w *Writer) Add(key string, allowed bool) {
	if w == nil {
		return
	}
	ttl := w.d.denyTTL
	if allowed {
		ttl = w.d.allowTTL
	}
	// A zero TTL stores nothing and removes an earlier answer: no old
	// verdict is served in place of the one not kept.
	// Each byte is counted once, by its owner: the cache counts its copy
	// of the key in the entry and its copy of the token in the token's
	// group, so an entry holds nothing beyond them (size 0).
	w.w.Add(key, allowed, ttl, 0)
}

// Forget removes what is cached under key: the server answered key with
// something the caller does not keep (an ERROR, a denial with reasons, a
// pair listed twice), and no older verdict may be served in place of that
// newer answer. Like Add it does nothing once the token's entries were
// purged after the writer was made (there is nothing left to remove), and
// the cache keeps no copy of key.
func (w *Writer) Forget(key string) {
	if w == nil {
		return
	}
	// A zero TTL stores nothing and removes the earlier entry
	// (cache.Writer.Add).
	w.w.Add(key, false, 0, 0)
}

// Drop removes what is cached of the writer's token under every key covers
// reports true of, and keeps the token's writers made before this one from
// storing under those keys (cache.Writer.Drop, whose name rule holds): what
// a request asking about keys it does not name does before it is sent
// (SendWide). covers runs under the cache's lock and must not call the
// cache.
func (w *Writer) Drop(name string, covers func(key string) bool) {
	if w != nil {
		w.w.Drop(name, covers)
	}
}

// Close releases the writer, purging its token's decisions when it was
// handed out with a 200 answer that was not Used (see Writer); closing it
// again, or a nil one, does nothing.
func (w *Writer) Close() {
	if w == nil {
		return
	}
	if w.answered && !w.used {
		w.answered = false
		w.d.purge(w.id)
	}
	w.w.Close()
}

// cacheStats are the cache's counters, entries and bytes.
func (d *decisions) stats() (s cache.Stats, n int, bytes int64) {
	if d == nil {
		return cache.Stats{}, 0, 0
	}
	return d.lru.Stats(), d.lru.Len(), d.lru.Bytes()
}

// Get returns the live verdict cached under key in g; a nil g holds
// nothing. It allocates nothing.
func Get(g *Group, key string) (allowed, ok bool) {
	if g == nil {
		return false, false
	}
	return g.Get(key)
}

// Regroup returns the cache entries of the call's token as they are now,
// for reading again what the call read and what its own requests stored
// (Confirm), a call that reads no cached decision (NoCache) included: it
// stores its answers as any call does. The client's own token's group is
// pinned; a per-call token's, which the call did not find when it began
// when the cache held nothing of the token yet, or which a purge removed
// since, is looked up again (a hash of the token). nil when the token's
// decisions are not cached.
func (c *Core) Regroup(cl *Call) *Group {
	if cl.Token != nil {
		return cl.Token.group
	}
	return c.cache.lookup(cl.ID)
}

// OwnGroup returns the cache entries of the client's own token, as Own
// would find them, without making a call: for a call that asks the cache
// before anything else. It reports false when Own would fail; the group
// is nil when the token's decisions are not cached.
func (c *Core) OwnGroup() (*Group, bool) {
	if c.x.Closed() {
		return nil, false
	}
	if st := c.token.Load(); st != nil {
		return st.group, true
	}
	return nil, false
}

// Lookup returns the cache entries of a per-call Bearer token, as PerCall
// would find them; false after Close.
func (c *Core) Lookup(token string) (*Group, bool) {
	if c.x.Closed() {
		return nil, false
	}
	return c.cache.lookup(transport.Ident{Scheme: transport.SchemeBearer, Token: token}), true
}

// Hit counts a call of one decision answered from the cache, both the
// call and its decision, and records it for telemetry as op. It allocates
// nothing.
func (c *Core) Hit(ctx context.Context, op string, allowed bool) {
	outcome := c.who.Scope.Outcomes[1]
	if allowed {
		c.hitAllowed.Add(1)
		outcome = c.who.Scope.Outcomes[0]
	} else {
		c.hitDenied.Add(1)
	}
	c.tel.CachedCall(ctx, op, 1, outcome)
}

// Reconfirm holds a call to the rule that no decision leaves the client
// past its TTL or its token's purge (issue 17), whatever its source: a
// call that read some GRANTs (read, their positions: its cache hits, and
// the GRANTs it asked for, from its own request or one it shared) and
// then waited (for the server about its other pairs, for a later chunk)
// must not return what it read before the wait unchanged, since an entry
// may have expired, or been purged, or been replaced by a newer answer,
// while the call waited (a slow server, a process frozen meanwhile).
// Once the call's requests are done, Reconfirm checks every decision read
// (holds(i, again), again set for one asked again: it sets the decision
// to what still holds and reports whether it does; Confirm and InTime are
// the checks), and asks the server (ask, fresh, within the call's
// deadline) about those that no longer hold, all of a round together;
// since asking takes time too, it then checks them all again, those it
// asked included, until a check follows the last wait. A decision is
// asked again once at most: one that no longer holds after it was asked
// again fails closed (fail). So each round but the last asks about one
// decision at least that was not asked before, and there are at most one
// more than decisions read. A decision that could not be asked in time
// fails closed as any asked pair does: its request was late. An error
// from ask (one that concerns the whole call, a refused token) ends the
// rounds and is returned.
//
// A call that waited for nothing (every decision a hit) has nothing to
// check again: its readings are as fresh as its return.
func Reconfirm(read []int, holds func(i int, again bool) bool, ask func(stale []int) error, fail func(i int)) error {
	var again map[int]bool // asked again already
	for len(read) > 0 {
		var stale []int
		for _, i := range read {
			switch {
			case holds(i, again[i]):
			case again[i]:
				fail(i)
			default:
				stale = append(stale, i)
			}
		}
		if len(stale) == 0 {
			return nil
		}
		if again == nil {
			again = make(map[int]bool, len(stale))
		}
		for _, i := range stale {
			again[i] = true
		}
		if err := ask(stale); err != nil {
			return err
		}
	}
	return nil
}

// Confirm is the check a GRANT a call read before its last wait passes
// before it leaves the client (Reconfirm), a hit and an answer alike:
// would the cache serve it now. It reads key in g, the call's token's
// entries as they are now (Regroup; nil, or an empty key, for a pair the
// cache cannot hold), on the cache's clock, with its purges and the
// channel's trust, counting nothing (cache.Group.Peek: the call counted
// its reading already): what the cache holds there is the newest
// answer the client had (an older answer never replaces a newer one), so
// a GRANT there holds and a DENY there replaces the GRANT (allowed is the
// verdict that holds when ok). Nothing there (evicted, expired, purged,
// forgotten, replaced by an answer not kept, not trusted, never stored)
// means the GRANT no longer holds and is asked again: "nothing in the
// cache" never stands for "nothing newer happened", and no count of the
// client's purges decides anything (a-fix15b F1, F2, F4).
//
// A GRANT asked again is held the same way when the cache could store it
// on arrival (Send's storable; it then fails closed once the cache no
// longer serves it, a-fix15b F2, F4); one the cache could not store (no
// cache, a token or key too long, a denial with reasons, an allow TTL
// shorter than the round trip) is held by InTime instead.
func Confirm(g *Group, key string) (allowed, ok bool) {
	if g == nil || key == "" {
		return false, false
	}
	return g.Peek(key)
}

// InTime reports whether a GRANT asked again that the cache could not
// store (Confirm) may leave the client: the call's deadline (ctx, Bound)
// has not passed, on the monotonic clock, nor has the client's timeout
// since Bound on the client's own clock (WithClock; the same clock
// without one). That is the bound a single Check's answer has: no older
// than the call's own round trip within its timeout, so that an allow TTL
// shorter than the round trip does not fail every call of several
// requests closed (a-client15 F2), while a process frozen past the
// deadline fails closed. A call never Bound fails it.
func (c *Core) InTime(ctx context.Context, cl *Call) bool {
	return c.Late(ctx) == nil && !cl.bound.IsZero() && c.now().Sub(cl.bound) < c.timeout
}

// WaitedOut is the Cause of a GRANT that no longer held after it was
// asked again (Reconfirm): the client could not read it fresh.
func (c *Core) WaitedOut() error {
	return c.who.Peer.Unavailable(errWaitedOut)
}

var errWaitedOut = errors.New("a decision read before the call's last wait was no longer served by the cache (expired, purged, evicted, replaced by a newer answer, or not trusted), nor was its answer once asked again (served no longer, or the call's deadline passed)")
