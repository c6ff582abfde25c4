package cache

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/orgauthz/orgauthz/internal/stripe"
)

// Cache is a bounded map of values V, each stored under a group G and a key
// K, with a time to live per entry. It holds at most a fixed number of
// entries and, optionally, a fixed number of bytes (each entry's size is
// given when it is added, and the cache adds its own bookkeeping). Adding to
// a full cache evicts the least recently used entries until the new one
// fits; an entry read since it was last considered gets a second chance
// (the CLOCK approximation of LRU), so that a hit marks the entry without
// taking any lock of the cache's.
//
// Groups exist so that related entries can be found and dropped together:
// [Cache.RemoveGroup] costs time in proportion to the group's entries, not
// to the cache, and a [Group] handle reads a group's entries without
// hashing the group value again. A [Writer] fences writes against
// removals: what it adds after its group was removed is dropped.
//
// A Cache is safe for concurrent use; hits take no lock and, on different
// cores, write no shared word. Create it with [New]; the zero value is not
// usable.
type Cache[G, K comparable, V any] struct {
	// clk reads the time; expiry times are durations since its epoch.
	clk clock

	maxEntries int
	maxBytes   int64
	// entryCost and groupCost are what the cache's own bookkeeping takes
	// for an entry and for a group, counted against the byte bound on top
	// of the sizes callers give; maxSize is the largest size an entry may
	// count, its bookkeeping included.
	entryCost, groupCost, maxSize int64

	// keys hashes (group, key) pairs for idx.
	keys hasher
	// idx holds every entry by its group and key. It is written under mu,
	// and read without it: hits take no lock (see index).
	idx index[G, K, V]

	// mu guards the recency list, the counts, each group's member list
	// and holds, and the writes of idx and groups.
	mu sync.RWMutex
	// groups holds the groups by value, for Lookup and writers; hits do
	// not read it. It is written under mu, and read without it.
	groups groupIndex[G, K, V]
	none   *Group[G, K, V] // what Lookup returns for a group the cache does not hold
	list   entry[G, K, V]  // sentinel: list.next is the newest, list.prev the oldest
	length int
	bytes  int64

	hits, misses           stripe.Counter
	evictions, expirations uint64 // under mu

	// horizon is when, as time since the epoch, Get stops serving (see
	// ServeUntil); math.MaxInt64 unless set.
	horizon atomic.Int64
}

// entry is one stored value, linked into the cache's recency list and its
// group's member list. Its key, grp, expires, size and value never change
// once it is in the index, which readers find it through; an entry is
// never reused for another pair.
type entry[G, K comparable, V any] struct {
	key     K
	grp     *Group[G, K, V]
	expires time.Duration // since the cache's epoch
	// prev and next link the recency list, under c.mu; nil when unlinked.
	prev, next *entry[G, K, V]
	// gprev and gnext link the member list of grp (or, after a removal of
	// grp, the list RemoveGroup frees), under c.mu.
	gprev, gnext *entry[G, K, V]
	// state is the group's generation when the entry was stored, shifted
	// left by one, and in its low bit the reference mark, which hits set
	// and eviction clears when it gives the entry its second chance.
	state atomic.Uint64
	size  uint32 // the caller's size plus entryCost
	value V
}

// gen returns the generation of its group that e was stored in.
func (e *entry[G, K, V]) gen() uint64 { return e.state.Load() >> 1 }

// Stats is a snapshot of a cache's counters, which only grow.
type Stats struct {
	// Hits counts lookups that found a live entry.
	Hits uint64
	// Misses counts lookups that found nothing, an expired entry or a
	// removed one.
	Misses uint64
	// Evictions counts live entries pushed out to make room for new ones.
	Evictions uint64
	// Expirations counts expired entries dropped, on lookup or by the
	// sweep that every miss and every addition makes.
	Expirations uint64
}

// Option configures a Cache in [New].
type Option func(*config)

type config struct {
	now      func() time.Time
	clockSet bool
	maxBytes int64
	bytesSet bool
}

// WithClock makes the cache read the time from now instead of the real
// clock (the monotonic clock), for tests that move time without sleeping:
// every lookup, addition and Writer calls now. now must be safe for
// concurrent use. A nil now is an error in New.
func WithClock(now func() time.Time) Option {
	return func(c *config) { c.now, c.clockSet = now, true }
}

// WithMaxBytes bounds what the entries count (the sizes given to Add plus
// the cache's bookkeeping) to n bytes, which must be positive. Without it
// only the number of entries is bounded.
func WithMaxBytes(n int64) Option {
	return func(c *config) { c.maxBytes, c.bytesSet = n, true }
}

const (
	// sweepBatch bounds the expired entries one operation drops besides
	// its own, so that no caller pays for a large batch that expired
	// together.
	sweepBatch = 16
	// freeBatch bounds the entries of a removed group freed under one hold
	// of the lock, so that a large group's removal never holds up other
	// callers for long.
	freeBatch = 256
	// maxChances bounds the second chances one eviction gives, so that an
	// addition to a cache whose entries were all read lately does not walk
	// them all.
	maxChances = 64
)

// New returns an empty cache holding at most maxEntries entries. It returns
// an error when maxEntries is not positive or an option is invalid.
func New[G, K comparable, V any](maxEntries int, opts ...Option) (*Cache[G, K, V], error) {
	var cfg config
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	var errs []error
	if maxEntries <= 0 {
		errs = append(errs, fmt.Errorf("cache: size must be positive, got %d", maxEntries))
	}
	if cfg.clockSet && cfg.now == nil {
		errs = append(errs, errors.New("cache: WithClock needs a non-nil clock"))
	}
	if cfg.bytesSet && cfg.maxBytes <= 0 {
		errs = append(errs, fmt.Errorf("cache: WithMaxBytes needs a positive size, got %d", cfg.maxBytes))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if !cfg.bytesSet {
		cfg.maxBytes = math.MaxInt64
	}
	c := &Cache[G, K, V]{
		maxEntries: maxEntries,
		maxBytes:   cfg.maxBytes,
		entryCost:  entryCost[G, K, V](),
		groupCost:  groupCost[G, K, V](),
		keys:       newHasher[K](),
	}
	// An entry that does not fit beside its group's bookkeeping never
	// fits; one of 4 GiB or more is not stored either (an entry counts
	// its size in 32 bits).
	c.maxSize = min(c.maxBytes-c.groupCost, math.MaxUint32)
	c.idx.init()
	c.groups.init()
	c.horizon.Store(math.MaxInt64)
	c.none = &Group[G, K, V]{c: c}
	c.list.next, c.list.prev = &c.list, &c.list
	c.clk.init(cfg.now)
	return c, nil
}

// entryCost estimates the memory of one entry's bookkeeping: the entry
// itself and its slots in the index (see indexEntryCost).
// TestBytesTrackRealMemory holds the estimate to what the heap really grows
// by.
func entryCost[G, K comparable, V any]() int64 {
	var e entry[G, K, V]
	return allocSize(unsafe.Sizeof(e)) + indexEntryCost
}

// groupCost estimates the memory of one group's bookkeeping: the group and
// its slots in the cache's index of groups (see groupIndexCost).
func groupCost[G, K comparable, V any]() int64 {
	var grp Group[G, K, V]
	return allocSize(unsafe.Sizeof(grp)) + groupIndexCost
}

// sizeClasses are the Go runtime's allocation sizes of small objects up to
// 1 KiB (internal/runtime/gc/sizeclasses.go): an object takes the first
// that holds it.
var sizeClasses = [...]uintptr{8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256,
	288, 320, 352, 384, 416, 448, 480, 512, 576, 640, 704, 768, 896, 1024}

// allocSize returns the memory an object of n bytes takes on the heap.
func allocSize(n uintptr) int64 {
	for _, c := range sizeClasses {
		if n <= c {
			return int64(c)
		}
	}
	return int64(n)
}

// Get returns the value stored under group g and key k, and true when it is
// present and has not expired. It hashes g and then k, and probes the
// cache's index once; a caller that reads a group often holds a Group
// handle instead, which hashes k alone. Get takes no lock and allocates
// nothing.
func (c *Cache[G, K, V]) Get(g G, k K) (value V, ok bool) {
	e := c.idx.find(keyHash(&c.keys, groupHash(&c.keys, g), k), g, k)
	// find returns an entry of its group's current generation only.
	if e != nil && c.serves(e) {
		return e.value, true
	}
	c.miss(e)
	return value, false
}

// serves reports whether the cache serves e (found by a lookup) now, and
// counts the hit when it does: e is of its group's current generation,
// unexpired by the clock, which serves reads, and the horizon is ahead.
func (c *Cache[G, K, V]) serves(e *entry[G, K, V]) bool {
	st := e.state.Load()
	// The clock is read here, for this lookup: nothing else may say that
	// an entry is unexpired (see clock), or that the horizon is ahead.
	now := c.clk.elapsed()
	if st>>1 != e.grp.gen.Load() || now >= e.expires || now >= time.Duration(c.horizon.Load()) {
		return false
	}
	if st&1 == 0 { // write the entry's line only when the mark changes
		e.state.Store(st | 1)
	}
	c.hits.Add(1)
	return true
}

// Lookup returns a handle on group g for reading; for a group the cache
// holds nothing of, a handle that reads nothing. The handle reads nothing
// either once the group has been removed and forgotten; use Pin to keep one
// valid. Lookup hashes g, takes no lock and allocates nothing.
func (c *Cache[G, K, V]) Lookup(g G) *Group[G, K, V] {
	grp := c.groups.get(groupHash(&c.keys, g), g)
	if grp == nil {
		return c.none
	}
	return grp
}

// miss counts a miss, drops e (what the lookup found, or nil) when it has
// expired, and sweeps.
func (c *Cache[G, K, V]) miss(e *entry[G, K, V]) {
	c.misses.Add(1)
	now := c.clk.elapsed() // a miss may drop entries: it reads the clock itself
	if e != nil || c.due(now) {
		c.mu.Lock()
		if e != nil && e.next != nil && now >= e.expires {
			c.expirations++
			c.remove(e)
		}
		c.sweep(now)
		c.mu.Unlock()
	}
}

// due reports, without taking c.mu exclusively, whether the oldest entry
// has expired, so that a miss sweeps only when there is something to sweep.
func (c *Cache[G, K, V]) due(now time.Duration) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	oldest := c.list.prev
	return oldest != &c.list && (now >= oldest.expires || oldest.gen() != oldest.grp.gen.Load())
}

// Add stores value under group g and key k for ttl, replacing any earlier
// value and making it the most recently used entry; size is the memory the
// key and value hold beyond their own fixed size (the bytes of their
// strings, say), which the entry counts against the byte bound together
// with the cache's own bookkeeping. Least recently used entries are evicted
// until the cache is within its bounds. Add reports whether the value was
// stored: a ttl that is zero or negative, or an entry larger than the whole
// byte bound or of 4 GiB or more, stores nothing and removes any earlier
// value, so that a caller never reads an old answer in place of the one it
// chose not to keep.
func (c *Cache[G, K, V]) Add(g G, k K, value V, ttl time.Duration, size int64) bool {
	now := c.clk.elapsed()
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.add(c.group(g), k, value, now, expiry(now, ttl), size)
}

// Remove deletes the entry under group g and key k and reports whether there
// was one.
func (c *Cache[G, K, V]) Remove(g G, k K) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	grp := c.groups.get(groupHash(&c.keys, g), g)
	if grp == nil {
		return false
	}
	e := c.idx.get(keyHash(&c.keys, grp.seed, k), grp, k)
	if e == nil || e.gen() != grp.gen.Load() { // one RemoveGroup removed is freeing
		return false
	}
	c.remove(e)
	return true
}

// RemoveGroup deletes every entry of group g, live or expired, and returns
// how many it deleted. The entries are gone for every later Get as soon as
// the call starts; their memory is freed before it returns, a batch at a
// time, so that other callers wait for one batch at most. It costs time in
// proportion to the group's entries. Writers of g made before the call
// store nothing from then on; Group handles stay valid.
func (c *Cache[G, K, V]) RemoveGroup(g G) int {
	c.mu.Lock()
	grp := c.groups.get(groupHash(&c.keys, g), g)
	if grp == nil {
		c.mu.Unlock()
		return 0
	}
	// The new generation hides the entries from every lookup at once; the
	// member list, taken whole, is this call's alone to free: nothing else
	// changes the member links of an entry of an older generation.
	grp.gen.Add(1)
	dead := grp.head
	grp.head = nil
	c.release(grp)
	c.mu.Unlock()

	n := 0
	for dead != nil {
		c.mu.Lock()
		for range freeBatch {
			if dead == nil {
				break
			}
			e := dead
			dead, e.gnext = e.gnext, nil
			e.gprev = nil
			if e.next != nil { // not evicted, swept or purged meanwhile
				c.idx.remove(c.hashOf(e), e)
				c.unlink(e)
			}
			n++
		}
		c.mu.Unlock()
	}
	return n
}

// Purge deletes every entry, as RemoveGroup does for each group. Counters
// are kept.
func (c *Cache[G, K, V]) Purge() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for e := c.list.next; e != &c.list; {
		next := e.next
		e.prev, e.next = nil, nil
		e = next
	}
	c.list.next, c.list.prev = &c.list, &c.list
	c.length = 0
	c.idx.reset()
	// Groups that handles keep stay, with no entries.
	c.groups.retain(0, func(grp *Group[G, K, V]) bool {
		grp.gen.Add(1)
		grp.head = nil
		return grp.holds > 0
	})
	c.bytes = int64(c.groups.live) * c.groupCost
}

// Len returns the number of entries, expired ones not yet dropped included.
func (c *Cache[G, K, V]) Len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.length
}

// Bytes returns what the entries and groups count against the byte bound:
// the sizes given to Add plus the cache's own bookkeeping.
func (c *Cache[G, K, V]) Bytes() int64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.bytes
}

// Stats returns the current counters.
func (c *Cache[G, K, V]) Stats() Stats {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return Stats{Hits: c.hits.Load(), Misses: c.misses.Load(), Evictions: c.evictions, Expirations: c.expirations}
}

// add stores an entry of grp that expires at expires, unless that is not
// after now; c.mu must be held.
func (c *Cache[G, K, V]) add(grp *Group[G, K, V], k K, value V, now, expires time.Duration, size int64) bool {
	size = max(size, 0)
	h := keyHash(&c.keys, grp.seed, k)
	if expires <= now || size > c.maxSize-c.entryCost {
		if e := c.idx.get(h, grp, k); e != nil {
			c.remove(e)
		}
		c.release(grp)
		return false
	}
	e := &entry[G, K, V]{key: k, grp: grp, value: value, expires: expires, size: uint32(size + c.entryCost)}
	e.state.Store(grp.gen.Load() << 1)
	if old := c.idx.put(h, e); old != nil {
		// Not drop: the group keeps e, and must not be forgotten between
		// losing old and gaining e.
		c.unlink(old)
		if old.gen() == grp.gen.Load() {
			grp.unlinkMember(old)
		}
	}
	c.link(e)
	c.evict(now, e)
	c.sweep(now)
	return true
}

// evict removes entries from the old end until the cache is within its
// bounds, giving an entry read since it was last looked at a second chance.
// The entry being added, keep, is never evicted. c.mu must be held.
func (c *Cache[G, K, V]) evict(now time.Duration, keep *entry[G, K, V]) {
	chances := min(c.length, maxChances)
	for c.length > 1 && (c.length > c.maxEntries || c.bytes > c.maxBytes) {
		e := c.list.prev
		if e == keep { // second chances moved every other entry ahead of it
			c.unlinkOnly(e)
			c.pushFront(e)
			continue
		}
		st := e.state.Load()
		live := now < e.expires && st>>1 == e.grp.gen.Load()
		if live && chances > 0 && st&1 != 0 {
			chances--
			// A hit racing this store may set the mark again: the entry
			// then keeps it, as it would have a moment later.
			e.state.Store(st &^ 1)
			c.unlinkOnly(e)
			c.pushFront(e)
			continue
		}
		if live {
			c.evictions++
		} else {
			c.expirations++
		}
		c.remove(e)
	}
}

// sweep drops up to sweepBatch expired or removed entries from the old end,
// so that entries nobody asks for again do not stay resident until they are
// evicted. An expired entry behind a live one waits for a later sweep: at
// most the longest time to live. c.mu must be held.
func (c *Cache[G, K, V]) sweep(now time.Duration) {
	for range sweepBatch {
		e := c.list.prev
		if e == &c.list || (now < e.expires && e.gen() == e.grp.gen.Load()) {
			return
		}
		if now >= e.expires {
			c.expirations++
		}
		c.remove(e)
	}
}

// hashOf returns the hash e is stored under in the index.
func (c *Cache[G, K, V]) hashOf(e *entry[G, K, V]) uint64 {
	return keyHash(&c.keys, e.grp.seed, e.key)
}

// remove deletes e, which is in the recency list, from the index and the
// lists. c.mu must be held.
func (c *Cache[G, K, V]) remove(e *entry[G, K, V]) {
	c.idx.remove(c.hashOf(e), e)
	c.drop(e)
}

// drop takes e, which the index no longer holds, out of the lists and the
// counts, and forgets its group when that leaves it empty and unheld. An
// entry of an older generation of its group stays in the list RemoveGroup
// frees. c.mu must be held.
func (c *Cache[G, K, V]) drop(e *entry[G, K, V]) {
	c.unlink(e)
	if grp := e.grp; e.gen() == grp.gen.Load() {
		grp.unlinkMember(e)
		c.release(grp)
	}
}

// link adds a new entry at the front of the recency list and of its
// group's members, and counts it; c.mu must be held.
func (c *Cache[G, K, V]) link(e *entry[G, K, V]) {
	c.pushFront(e)
	e.grp.linkMember(e)
	c.length++
	c.bytes += int64(e.size)
}

// unlink takes an entry out of the recency list and the counts; c.mu must
// be held.
func (c *Cache[G, K, V]) unlink(e *entry[G, K, V]) {
	c.unlinkOnly(e)
	c.length--
	c.bytes -= int64(e.size)
}

func (c *Cache[G, K, V]) pushFront(e *entry[G, K, V]) {
	e.prev, e.next = &c.list, c.list.next
	c.list.next.prev = e
	c.list.next = e
}

func (c *Cache[G, K, V]) unlinkOnly(e *entry[G, K, V]) {
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
}
