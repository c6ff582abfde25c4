package dpop

import (
	"crypto/sha256"
	"encoding/binary"
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

// replayEntry is one recorded proof, in the cache's heap and in its key's.
type replayEntry struct {
	expires int64 // unix nanoseconds after which the proof is too old anyway
	key     replayKey
	owner   *replayOwner
	at, own int // positions in the cache's heap and in owner's
}

// replayOwner holds the recorded proofs of one key.
type replayOwner struct {
	id      ownerKey
	entries []*replayEntry // min-heap by expiry
}

// replayCache remembers accepted proofs until they would fail the iat check
// anyway, within two bounds: max entries in all, and perKey entries of one
// key (the thumbprint of the proof's key: callers record only proofs whose
// key is bound to a verified token or presented by an authenticated
// client, so a key is an authenticated caller).
//
// At a bound it makes room for a new proof by forgetting the oldest one
// (its key's own at the per-key bound, the whole cache's at max), and it
// refuses, with ErrReplayCacheFull, a proof no newer than the one it would
// forget. That never lets a forgotten proof be replayed: once the cache
// forgot the oldest proof of a key that holds perKey proofs, the key holds
// perKey proofs at least as new until the forgotten one expires (a proof
// of the key leaves earlier only as the whole cache's oldest, when every
// proof held is at least as new); once it forgot the whole cache's oldest,
// it holds max proofs at least as new until the forgotten one expires
// (every proof it takes while full is newer than the one it forgets, and
// it is no longer full only once a proof newer than the forgotten one
// expired). Either way the replay is no newer than the proof the cache
// would forget for it, and is refused.
//
// So a full cache shortens the window it accepts proofs in to what it can
// hold, rather than refuse every proof until entries expire; one key
// sending faster than its share shortens only its own window; and a
// caller's fresh proof (iat now) is refused only when the cache holds max
// proofs issued within the same second.
//
// The cache's clock never goes back: calls may reach the lock in another
// order than they read the clock, and a proof purged as expired by a
// later time must not be taken again by a call that read an earlier one.
//
// Entries are kept in two min-heaps by expiry, the cache's (purging and
// eviction) and their key's (eviction at the per-key bound): each
// operation costs O(log n).
type replayCache struct {
	mu     sync.Mutex
	max    int
	perKey int
	now    int64 // the latest time the cache was given, unix ns
	seen   map[replayKey]*replayEntry
	heap   []*replayEntry
	owners map[ownerKey]*replayOwner
}

func newReplayCache(max, perKey int) *replayCache {
	return &replayCache{max: max, perKey: min(perKey, max),
		seen: make(map[replayKey]*replayEntry), owners: make(map[ownerKey]*replayOwner)}
}

// check reports what add would answer for a proof, without recording it.
func (c *replayCache) check(key replayKey, owner ownerKey, expires, now time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.purge(now.UnixNano())
	_, err := c.victim(key, owner, expires.UnixNano())
	return err
}

// add records key, a proof of owner's, until expires, forgetting the proof
// victim names to make room. It returns ErrReplay if key is recorded and
// unexpired, ErrIATTooOld if it expired by the cache's clock,
// ErrReplayCacheFull if the proof is no newer than the one it would have
// to forget, and records nothing then.
func (c *replayCache) add(key replayKey, owner ownerKey, expires, now time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.purge(now.UnixNano())
	exp := expires.UnixNano()
	victim, err := c.victim(key, owner, exp)
	if err != nil {
		return err
	}
	if victim != nil {
		c.remove(victim)
	}
	o := c.owners[owner]
	if o == nil {
		o = &replayOwner{id: owner}
		c.owners[owner] = o
	}
	e := &replayEntry{expires: exp, key: key, owner: o}
	c.seen[key] = e
	pushEntry(&c.heap, e, atCache)
	pushEntry(&o.entries, e, atOwner)
	return nil
}

// victim returns the proof recording key would forget (nil when there is
// room), or the error refusing key: ErrReplay if it is recorded,
// ErrIATTooOld if it expired, ErrReplayCacheFull if it expires no later
// than the proof it would make go.
func (c *replayCache) victim(key replayKey, owner ownerKey, exp int64) (*replayEntry, error) {
	if _, ok := c.seen[key]; ok {
		return nil, ErrReplay
	}
	if exp < c.now {
		return nil, ErrIATTooOld
	}
	var v *replayEntry
	if o := c.owners[owner]; o != nil && len(o.entries) >= c.perKey {
		v = o.entries[0]
	} else if len(c.heap) >= c.max {
		v = c.heap[0]
	}
	if v != nil && exp <= v.expires {
		return nil, ErrReplayCacheFull
	}
	return v, nil
}

// remove forgets e, and its owner once the owner holds nothing.
func (c *replayCache) remove(e *replayEntry) {
	removeEntry(&c.heap, e.at, atCache)
	o := e.owner
	removeEntry(&o.entries, e.own, atOwner)
	delete(c.seen, e.key)
	if len(o.entries) == 0 {
		delete(c.owners, o.id)
	}
}

// len returns the number of entries, expired ones included.
func (c *replayCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.heap)
}

// purge moves the cache's clock to now unless it is later already, and
// drops every entry that expired before then.
func (c *replayCache) purge(now int64) {
	c.now = max(c.now, now)
	for len(c.heap) > 0 && c.heap[0].expires < c.now {
		c.remove(c.heap[0])
	}
	// Give memory back after a burst: the maps shrink on their own only
	// when rebuilt, the slice when reallocated.
	if len(c.heap) == 0 && cap(c.heap) > 1024 {
		c.heap = nil
		c.seen = make(map[replayKey]*replayEntry)
		c.owners = make(map[ownerKey]*replayOwner)
	}
}

// atCache and atOwner return the field holding an entry's position in the
// cache's heap and in its owner's.
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
	s = s[:n]
	*h = s
	if i < n && !down(s, i, pos) {
		up(s, i, pos)
	}
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
