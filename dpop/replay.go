package dpop

import (
	"crypto/sha256"
	"encoding/binary"
	"math"
	"sync"
	"time"
)

// replayKey identifies one accepted proof: the first 16 bytes of
// SHA-256(jkt || 0 || jti). Hashing bounds the memory per entry whatever the
// client puts in jti; 128 bits keep accidental collisions negligible (and a
// collision could only reject a proof, never accept one).
type replayKey [16]byte

func newReplayKey(jkt, jti string) replayKey {
	h := sha256.New()
	h.Write([]byte(jkt))
	h.Write([]byte{0})
	h.Write([]byte(jti))
	var sum [sha256.Size]byte
	var k replayKey
	copy(k[:], h.Sum(sum[:0]))
	return k
}

// ownerKey identifies the key a proof is signed with: the first 8 bytes of
// SHA-256(jkt). A collision could only merge two keys' shares of the cache.
type ownerKey uint64

func newOwnerKey(jkt string) ownerKey {
	sum := sha256.Sum256([]byte(jkt))
	return ownerKey(binary.BigEndian.Uint64(sum[:8]))
}

// aheadTolerance is how far ahead of the cache's clock a proof may be dated
// and still be kept with the proofs of the present: iat counts whole
// seconds, and a client's clock may run a little ahead.
const aheadTolerance = time.Second

// replayEntry is one recorded proof: in its part's heap and in its key's
// heap of that part.
type replayEntry struct {
	expires int64 // unix nanoseconds after which the proof is too old anyway
	key     replayKey
	owner   *replayOwner
	at, own int  // positions in its part's heap and in its owner's heap of that part
	ahead   bool // in the ahead part
}

// replayOwner holds the recorded proofs of one key.
type replayOwner struct {
	id      ownerKey
	entries []*replayEntry // its proofs in the main part, min-heap by expiry
	early   []*replayEntry // its proofs in the ahead part, min-heap by expiry
	latest  int64          // the latest expiry in early (proofs leave it earliest due first), 0 if empty
	rank    int            // position in the cache's heap of keys holding proofs dated ahead, -1 if none
	// forgot is the latest expiry of a proof of the key the main part
	// forgot at the key's bound; while the key holds proofs (an owner with
	// none is dropped), it holds perKey proofs at least as new until that
	// one expires, or the cache's watermarks cover it.
	forgot int64
	// mark is the latest expiry of a proof of the key the ahead part
	// forgot; it goes to the cache's table of marks when the owner is
	// dropped.
	mark int64
}

// replayCache remembers accepted proofs until they would fail the iat check
// anyway. Callers record only proofs whose key is bound to a verified token
// or presented by an authenticated client; but a key (the thumbprint of the
// proof's key) costs a caller nothing, so it is not an identity: no bound
// below lets the proofs of some keys keep other keys' proofs out.
//
// The cache has two parts, because a caller must not choose how new its
// proofs look: a proof dated ahead (by up to maxSkew) is kept longer than
// a fresh one, and the eviction rule below would take it for a newer one.
// The main part holds only proofs dated at most aheadTolerance ahead of
// the cache's clock when they came in. A proof dated further ahead goes
// to the ahead part; one leaves it as soon as it is dated at most
// aheadTolerance ahead, for the main part, which takes it as it takes a
// proof recorded then. (It is at least as new as every proof there: each
// came in while it was dated further ahead than that proof could be; so
// the main part forgets it at once only if it expires when the proof it
// would replace does.)
//
// The ahead part holds at most aheadMax proofs (a tenth of the main
// part's size, at least one) and refuses none for want of room: past its
// bound it forgets the earliest due proof of the key holding the latest
// due one there (of keys holding as late a one, the one holding the most;
// the new proof itself, accepted then, if that is the one: outranks) and
// records the proof's expiry in its key's mark, which refuses, with
// ErrReplayCacheFull, every later proof of that key expiring no later.
// So the caller who dates its proofs the furthest ahead pays first, and
// among callers dating as far, the one holding the most; a client whose
// clock runs fast pays only for a caller dating its proofs no further
// ahead, who keeps the part full only by filling it again each time they
// come due. A proof forgotten while dated ahead could be replayed later
// with any of the dates fresh proofs carry, so no watermark of the whole
// cache could refuse its replay without refusing every fresh proof for
// seconds; the part refusing every proof dated ahead once it was full did
// the same to every client whose clock runs fast, as long as some 1,100
// proofs a second kept coming from ten keys. A key's mark is kept with
// its other proofs while it holds any; once it holds none, the mark goes
// to a table (markTable), which keeps it with the key, grows (up to a
// bound) rather than have keys share a mark, and makes keys share one only
// when more than markWays with marks in force land in one bucket of the
// table at its bound, which no caller can aim at: forgetting a proof
// costs its key the proofs no newer than it, and no other key anything
// but under a flood many times the rate the cache is sized for (see
// WithReplayCacheSize for the rates).
//
// The main part holds at most max proofs, and perKey of one key. At a
// bound it makes room for a new proof by forgetting the oldest one (its
// key's own at the per-key bound, the part's at max), and it refuses, with
// ErrReplayCacheFull, a proof no newer than the one it would forget. That
// never lets a forgotten proof be replayed: once the main part forgot the
// oldest proof of a key that holds perKey proofs, the key holds perKey
// proofs at least as new until the forgotten one expires (a proof of the
// key leaves earlier only as the part's oldest, when every proof held is
// at least as new); once it forgot the part's oldest, it holds max proofs
// at least as new until the forgotten one expires (every proof it takes
// while full is newer than the one it forgets, and it is no longer full
// only once a proof newer than the forgotten one expired). A proof the
// main part forgot was dated at most aheadTolerance ahead of the cache's
// clock then, so its replay, any time later, goes to the main part too:
// it is no newer than the proof the main part would forget for it, and
// is refused. A proof in the ahead part is still held, and its replay is
// found; one it forgot is refused by its key's mark, in either part.
//
// The cache's clock is the time each call read, which may go back: calls
// reach the lock in another order than they read the clock, and a wall
// clock steps back after it was wrong ahead. Two watermarks keep replays
// out whatever it does: no proof expiring no later than one the cache
// dropped as expired (purged), or than one it forgot to make room
// (forgot, its key's own forgot for a proof forgotten at the key's
// bound, and its key's mark for one forgotten in the ahead part), is
// taken. So a proof once recorded is refused until it is too old by
// every clock reading the cache has since been given, and one wrong
// reading ahead costs fresh proofs only until the real time passes the
// expiry of the proofs that reading purged (at most maxAge + maxSkew
// after the proofs came in), not until the real time passes the wrong
// reading. Latching the latest reading instead refused every proof for
// as long as the clock had been wrong ahead: an hour's step, corrected at
// once, refused every DPoP caller for an hour.
//
// So a full main part shortens the window it accepts proofs in to what it
// can hold, rather than refuse every proof until entries expire; one key
// sending faster than its share shortens only its own window; a proof
// dated at most aheadTolerance ahead is refused only when its key holds
// perKey proofs, or the main part max proofs, dated no earlier than it:
// proofs that each came into the main part no earlier than aheadTolerance
// before that date, or when its key's mark is at least its expiry; and a
// proof dated further ahead is refused only in that last case (or when
// the main part forgot a proof no newer: the watermarks).
//
// Entries are kept in min-heaps by expiry: each part's (purging, eviction,
// and moving proofs out of the ahead part) and each key's of each part
// (eviction at the bounds); the keys holding proofs dated ahead in a
// max-heap by outranks. Each operation costs O(log n), plus O(log n) for
// each proof that expired or moved since the last one. The heaps shrink
// (shrink) and the maps are rebuilt (rebuilt) as they empty, so the
// cache's memory follows the proofs it holds now, each key's too.
type replayCache struct {
	mu       sync.Mutex
	max      int   // proofs in the main part
	perKey   int   // proofs of one key in the main part
	aheadMax int   // proofs in the ahead part
	horizon  int64 // maxAge + aheadTolerance in ns: a proof expiring later than now + horizon is dated ahead
	now      int64 // the time the current call read, unix ns
	purged   int64 // the latest expiry of a proof dropped as expired
	forgot   int64 // the latest expiry of a proof forgotten to make room
	seen     map[replayKey]*replayEntry
	peak     int            // the most entries seen held since it was built
	main     []*replayEntry // min-heap by expiry
	ahead    []*replayEntry // min-heap by expiry
	owners   map[ownerKey]*replayOwner
	ranks    []*replayOwner // the keys holding proofs in the ahead part, max-heap by outranks
	marks    markTable      // the marks of keys holding nothing
}

// newReplayCache returns a cache of size proofs in its main part (perKey
// of one key) for proofs accepted until iat + maxAge.
func newReplayCache(size, perKey int, maxAge time.Duration) *replayCache {
	perKey = min(perKey, size)
	horizon := int64(math.MaxInt64)
	if maxAge <= math.MaxInt64-aheadTolerance {
		horizon = int64(maxAge + aheadTolerance)
	}
	return &replayCache{max: size, perKey: perKey, aheadMax: max(1, size/10), horizon: horizon,
		seen: make(map[replayKey]*replayEntry), owners: make(map[ownerKey]*replayOwner),
		marks: newMarkTable(size)}
}

// check reports what add would answer for a proof, without recording it.
func (c *replayCache) check(key replayKey, owner ownerKey, expires, now time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.advance(now.UnixNano())
	_, _, _, err := c.place(key, owner, expires.UnixNano())
	return err
}

// add records key, a proof of owner's, until expires, forgetting the proof
// place names to make room. It returns ErrReplay if key is recorded and
// unexpired, ErrIATTooOld if it expired by the cache's clock,
// ErrReplayCacheFull if it could be the replay of a proof the cache
// forgot or the main part cannot take it, and records nothing then.
func (c *replayCache) add(key replayKey, owner ownerKey, expires, now time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.advance(now.UnixNano())
	exp := expires.UnixNano()
	victim, atBound, ahead, err := c.place(key, owner, exp)
	if err != nil {
		return err
	}
	// The owner is taken before the victim goes: forgetting the key's last
	// proof drops its owner, and with it the watermark the victim raised.
	o := c.owners[owner]
	if o == nil {
		o = &replayOwner{id: owner, rank: -1}
	}
	if victim != nil {
		c.forgetForRoom(victim, atBound)
	}
	e := &replayEntry{expires: exp, key: key, owner: o}
	c.seen[key] = e
	c.peak = max(c.peak, len(c.seen))
	c.attach(e, ahead)
	if ahead && len(c.ahead) > c.aheadMax {
		c.forgetAhead()
	}
	return nil
}

// place returns the part recording key would put it in (ahead or main),
// the proof the main part would forget (nil when there is room, and for
// the ahead part, which makes room once the proof is in: forgetAhead) and
// the key at whose bound it goes (nil when the part is full; see
// mainVictim), or the error refusing key: ErrReplay if it is recorded,
// ErrIATTooOld if it expired, ErrReplayCacheFull if it expires no later
// than a proof the cache forgot (forgotten) or, for the main part, than
// the proof it would make go.
func (c *replayCache) place(key replayKey, owner ownerKey, exp int64) (victim *replayEntry, atBound *replayOwner, ahead bool, err error) {
	if _, ok := c.seen[key]; ok {
		return nil, nil, false, ErrReplay
	}
	if exp < c.now || exp <= c.purged {
		return nil, nil, false, ErrIATTooOld
	}
	o := c.owners[owner]
	if c.forgotten(owner, o, exp) {
		return nil, nil, false, ErrReplayCacheFull
	}
	if exp-c.now > c.horizon {
		return nil, nil, true, nil
	}
	v, atBound := c.mainVictim(o)
	if v != nil && exp <= v.expires {
		return nil, nil, false, ErrReplayCacheFull
	}
	return v, atBound, false, nil
}

// forgotten reports whether a proof of id (whose owner o is nil when it
// holds none) that expires at exp is no newer than one the cache forgot
// to make room: the main part's, the key's at its bound, or one of the
// ahead part's that the key's mark records (its owner's, or the table's).
func (c *replayCache) forgotten(id ownerKey, o *replayOwner, exp int64) bool {
	return exp <= c.forgot || o != nil && (exp <= o.forgot || exp <= o.mark) ||
		exp <= c.marks.get(id)
}

// forgetAhead makes room in the ahead part, one over its bound: it
// forgets the earliest due proof of the key that outranks the others
// there, and raises that key's mark to its expiry.
func (c *replayCache) forgetAhead() {
	e := c.ranks[0].early[0]
	e.owner.mark = max(e.owner.mark, e.expires)
	c.forget(e)
}

// mainVictim returns the proof the main part forgets to take a proof of o
// (o is nil for a key that holds none), or nil when it has room; atBound
// is o when the proof goes because o is at its bound, nil when because
// the part is full.
func (c *replayCache) mainVictim(o *replayOwner) (victim *replayEntry, atBound *replayOwner) {
	if o != nil && len(o.entries) >= c.perKey {
		return o.entries[0], o
	}
	if len(c.main) >= c.max {
		return c.main[0], nil
	}
	return nil, nil
}

// advance sets the cache's clock to now, drops the proofs expired by then,
// and moves those dated at most aheadTolerance ahead by then from the
// ahead part to the main part. There a proof takes the place of the one
// mainVictim names if it is newer, and is forgotten otherwise, as the main
// part refuses a new proof no newer.
func (c *replayCache) advance(now int64) {
	c.now = now
	for len(c.main) > 0 && c.main[0].expires < c.now {
		c.purge(c.main[0])
	}
	for len(c.ahead) > 0 && c.ahead[0].expires-c.now <= c.horizon {
		e := c.ahead[0]
		if e.expires < c.now {
			c.purge(e)
			continue
		}
		c.detach(e)
		v, atBound := c.mainVictim(e.owner)
		if c.forgotten(e.owner.id, e.owner, e.expires) {
			c.drop(e) // its replay is refused as the forgotten one's is
			continue
		}
		if v != nil && e.expires <= v.expires {
			c.raiseForgot(atBound, e.expires)
			c.drop(e)
			continue
		}
		if v != nil {
			c.forgetForRoom(v, atBound)
		}
		c.attach(e, false)
	}
	// Marks all expired by now are as good as the purged watermark (every
	// proof they refuse expired), which takes them over.
	if c.marks.buckets != nil && c.marks.max < c.now {
		c.purged = max(c.purged, c.marks.max)
		c.marks.reset()
	}
	// Give memory back after a burst: a map does not shrink on its own, so
	// both are rebuilt once they hold less than a quarter of the most they
	// held since they were built (amortized O(1) per proof, as shrink).
	// The slices shrink as they lose entries (shrink).
	if c.peak > 64 && len(c.seen) < c.peak/4 {
		c.seen, c.owners = rebuilt(c.seen), rebuilt(c.owners)
		c.peak = len(c.seen)
	}
}

// rebuilt returns a copy of m sized for what it holds (maps.Clone may
// keep the original's room).
func rebuilt[K comparable, V any](m map[K]V) map[K]V {
	n := make(map[K]V, len(m))
	for k, v := range m {
		n[k] = v
	}
	return n
}

// attach puts e, in seen already, in the ahead part or the main part.
func (c *replayCache) attach(e *replayEntry, ahead bool) {
	o := e.owner
	c.owners[o.id] = o
	e.ahead = ahead
	if ahead {
		pushEntry(&c.ahead, e, atCache)
		pushEntry(&o.early, e, atOwner)
		o.latest = max(o.latest, e.expires)
		c.rerank(o)
		return
	}
	pushEntry(&c.main, e, atCache)
	pushEntry(&o.entries, e, atOwner)
}

// detach takes e out of its part, leaving it in seen.
func (c *replayCache) detach(e *replayEntry) {
	o := e.owner
	if e.ahead {
		removeEntry(&c.ahead, e.at, atCache)
		removeEntry(&o.early, e.own, atOwner)
		if len(o.early) == 0 {
			o.latest = 0
		}
		c.rerank(o)
		return
	}
	removeEntry(&c.main, e.at, atCache)
	removeEntry(&o.entries, e.own, atOwner)
}

// drop forgets e, detached already, and its owner once the owner holds
// nothing, moving the owner's mark to the table.
func (c *replayCache) drop(e *replayEntry) {
	delete(c.seen, e.key)
	o := e.owner
	if len(o.entries) > 0 || len(o.early) > 0 {
		return
	}
	delete(c.owners, o.id)
	if o.mark > c.purged {
		// A mark that expired makes way as a proof expiring then is purged.
		c.purged = max(c.purged, c.marks.raise(o.id, o.mark, c.now))
	}
}

// forget forgets e.
func (c *replayCache) forget(e *replayEntry) {
	c.detach(e)
	c.drop(e)
}

// purge forgets e, expired by the cache's clock, and raises the purged
// watermark to its expiry.
func (c *replayCache) purge(e *replayEntry) {
	c.purged = max(c.purged, e.expires)
	c.forget(e)
}

// forgetForRoom forgets e, unexpired, to make room for a newer proof, and
// raises the forgot watermark to its expiry: that of atBound, the key at
// whose bound e goes, or the cache's when atBound is nil.
func (c *replayCache) forgetForRoom(e *replayEntry, atBound *replayOwner) {
	c.raiseForgot(atBound, e.expires)
	c.forget(e)
}

// raiseForgot raises to exp the forgot watermark of o, the key a proof
// was forgotten at the bound of, or the cache's when o is nil.
func (c *replayCache) raiseForgot(o *replayOwner, exp int64) {
	if o != nil {
		o.forgot = max(o.forgot, exp)
		return
	}
	c.forgot = max(c.forgot, exp)
}

// len returns the number of entries, expired ones included.
func (c *replayCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.main) + len(c.ahead)
}

// atCache and atOwner return the field holding an entry's position in its
// part's heap and in its owner's.
func atCache(e *replayEntry) *int { return &e.at }
func atOwner(e *replayEntry) *int { return &e.own }

// pushEntry adds e to the min-heap h, keeping the positions pos names.
func pushEntry(h *[]*replayEntry, e *replayEntry, pos func(*replayEntry) *int) {
	*h = append(*h, e)
	*pos(e) = len(*h) - 1
	up(*h, len(*h)-1, pos)
}

// removeEntry removes the entry at position i of the min-heap h.
func removeEntry(h *[]*replayEntry, i int, pos func(*replayEntry) *int) {
	s := *h
	n := len(s) - 1
	if i != n {
		s[i] = s[n]
		*pos(s[i]) = i
	}
	s[n] = nil
	s = shrink(s[:n])
	*h = s
	if i < n && !down(s, i, pos) {
		up(s, i, pos)
	}
}

// shrink returns s, or a copy of it at twice its length once it fills
// less than a quarter of its capacity (nil once empty), so that a slice's
// memory follows what it holds now, not the most it ever held: a key
// that once held its limit and now holds one proof keeps room for two,
// not for its limit. Each copy follows at least three removals per
// element copied since the slice was last full enough, so removal stays
// amortized O(1). Entries keep their positions.
func shrink[T any](s []T) []T {
	switch {
	case len(s) == 0:
		return nil
	case len(s) < cap(s)/4:
		return append(make([]T, 0, 2*len(s)), s...)
	}
	return s
}

func up(h []*replayEntry, i int, pos func(*replayEntry) *int) {
	for i > 0 {
		parent := (i - 1) / 2
		if h[parent].expires <= h[i].expires {
			break
		}
		swap(h, parent, i, pos)
		i = parent
	}
}

// down moves the entry at i down the heap and reports whether it moved.
func down(h []*replayEntry, i int, pos func(*replayEntry) *int) bool {
	start, n := i, len(h)
	for {
		l, r, small := 2*i+1, 2*i+2, i
		if l < n && h[l].expires < h[small].expires {
			small = l
		}
		if r < n && h[r].expires < h[small].expires {
			small = r
		}
		if small == i {
			return i > start
		}
		swap(h, i, small, pos)
		i = small
	}
}

func swap(h []*replayEntry, i, j int, pos func(*replayEntry) *int) {
	h[i], h[j] = h[j], h[i]
	*pos(h[i]) = i
	*pos(h[j]) = j
}

// rerank puts o where it belongs in the heap of keys holding proofs
// dated ahead, after it gained or lost one: in it while it holds one.
func (c *replayCache) rerank(o *replayOwner) {
	switch {
	case o.rank < 0 && len(o.early) > 0:
		c.ranks = append(c.ranks, o)
		o.rank = len(c.ranks) - 1
		c.rankUp(o.rank)
	case o.rank >= 0 && len(o.early) == 0:
		i, n := o.rank, len(c.ranks)-1
		c.swapRanks(i, n)
		c.ranks[n] = nil
		c.ranks = shrink(c.ranks[:n])
		o.rank = -1
		if i < n {
			c.rankDown(i)
			c.rankUp(i)
		}
	case o.rank >= 0:
		c.rankDown(o.rank)
		c.rankUp(o.rank)
	}
}

// outranks reports whether the ahead part makes room at a's cost rather
// than b's: a holds the latest due proof, or as late a one and more.
func outranks(a, b *replayOwner) bool {
	return a.latest > b.latest || a.latest == b.latest && len(a.early) > len(b.early)
}

func (c *replayCache) rankUp(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if !outranks(c.ranks[i], c.ranks[parent]) {
			return
		}
		c.swapRanks(parent, i)
		i = parent
	}
}

func (c *replayCache) rankDown(i int) {
	n := len(c.ranks)
	for {
		l, r, big := 2*i+1, 2*i+2, i
		if l < n && outranks(c.ranks[l], c.ranks[big]) {
			big = l
		}
		if r < n && outranks(c.ranks[r], c.ranks[big]) {
			big = r
		}
		if big == i {
			return
		}
		c.swapRanks(i, big)
		i = big
	}
}

func (c *replayCache) swapRanks(i, j int) {
	c.ranks[i], c.ranks[j] = c.ranks[j], c.ranks[i]
	c.ranks[i].rank = i
	c.ranks[j].rank = j
}
