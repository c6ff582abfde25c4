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
// to the cache, and a [Group] handle reads a group's entries without looking
// the group up again. A [Writer] fences writes against removals: what it
// adds after its group was removed is dropped.
//
// A Cache is safe for concurrent use; hits on different cores do not
// contend on a shared lock. Create it with [New]; the zero value is not
// usable.
type Cache[G, K comparable, V any] struct {
	// clk reads the time; expiry times are durations since its epoch.
	clk clock

	maxEntries int
	maxBytes   int64
	// entryCost and groupCost are what the cache's own bookkeeping takes
	// for an entry and for a group, counted against the byte bound on top
	// of the sizes callers give.
	entryCost, groupCost int64

	// keys hashes keys in the groups' indexes, and marks their removed
	// slots.
	keys keying[G, K, V]

	// mu guards the index of groups, the recency list, the counts, and
	// each group's pins and writers; a group's entries are written with mu
	// held, and read without it: hits take no lock (see index).
	mu sync.RWMutex
	// groups is written with both mu and groupsMu held, and read with
	// either: Lookup, on every hit of a caller without a pinned handle,
	// reads it under one cell of groupsMu, which readers on other cores
	// do not share.
	groups   map[G]*Group[G, K, V]
	groupsMu stripe.RWMutex
	none     *Group[G, K, V] // what Lookup returns for a group the cache does not hold
	list     entry[G, K, V]  // sentinel: list.next is the newest, list.prev the oldest
	length   int
	bytes    int64

	hits, misses           stripe.Counter
	evictions, expirations uint64 // under mu

	// horizon is when, as time since the epoch, Get stops serving (see
	// ServeUntil); math.MaxInt64 unless set.
	horizon atomic.Int64
}

// Group is a handle on one group of a cache, for reading its entries
// without looking the group up by its value each time (a group value that
// holds a long token costs a hash of the token per lookup). A Group from
// [Cache.Pin] stays valid until Unpin, even while it has no entries; one
// from [Cache.Lookup] reads nothing once its group has been forgotten.
type Group[G, K comparable, V any] struct {
	c  *Cache[G, K, V]
	id G

	// entries are read without a lock, and written under c.mu.
	entries index[G, K, V]
	// gen counts the group's removals; entries of an older generation are
	// dead, and Writers made before the last removal no longer write.
	gen atomic.Uint64

	pins, writers int32 // under c.mu
}

// entry is one stored value, linked into the cache's recency list.
type entry[G, K comparable, V any] struct {
	key     K
	grp     *Group[G, K, V]
	value   V
	expires time.Duration // since the cache's epoch
	size    int64         // the caller's size plus entryCost
	gen     uint64        // the group's generation when stored
	// ref is set by hits and cleared when the entry gets its second chance.
	ref atomic.Bool
	// prev and next link the recency list, under c.mu; nil when unlinked.
	prev, next *entry[G, K, V]
}

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
		groups:     make(map[G]*Group[G, K, V]),
		entryCost:  entryCost[G, K, V](),
		groupCost:  groupCost[G, K, V](),
		keys:       keying[G, K, V]{hash: newHasher[K](), tomb: new(entry[G, K, V])},
	}
	c.horizon.Store(math.MaxInt64)
	c.none = &Group[G, K, V]{c: c}
	c.none.entries.init(&c.keys)
	c.list.next, c.list.prev = &c.list, &c.list
	c.clk.init(cfg.now)
	return c, nil
}

// entryCost estimates the memory of one entry's bookkeeping: the entry
// itself and its slots in its group's index (see indexEntryCost).
// TestBytesTrackRealMemory holds the estimate to what the heap really grows
// by.
func entryCost[G, K comparable, V any]() int64 {
	var e entry[G, K, V]
	return int64(unsafe.Sizeof(e)) + indexEntryCost
}

// groupCost estimates the memory of one group's bookkeeping: the group,
// its index's first table included, and its slot in the cache's index of
// groups (a map, counted with its control byte at a load of 2/3, about
// where a map that doubles as it grows sits on average).
func groupCost[G, K comparable, V any]() int64 {
	var g G
	var grp Group[G, K, V]
	return int64(unsafe.Sizeof(grp) + (unsafe.Sizeof(g)+8+1)*3/2)
}

// Get returns the value stored under group g and key k, and true when it is
// present and has not expired. It looks g up; a caller that reads a group
// often holds a Group handle instead. Get allocates nothing.
func (c *Cache[G, K, V]) Get(g G, k K) (value V, ok bool) {
	return c.Lookup(g).Get(k)
}

// Lookup returns a handle on group g for reading; for a group the cache
// holds nothing of, a handle that reads nothing. The handle reads nothing
// either once the group has been removed and forgotten; use Pin to keep one
// valid.
func (c *Cache[G, K, V]) Lookup(g G) *Group[G, K, V] {
	cell := c.groupsMu.RLock()
	grp := c.groups[g]
	c.groupsMu.RUnlock(cell)
	if grp == nil {
		return c.none
	}
	return grp
}

// Pin returns a handle on group g that stays valid, and keeps g's
// bookkeeping, until Unpin is called: what a long-lived reader such as a
// client's own token holds.
func (c *Cache[G, K, V]) Pin(g G) *Group[G, K, V] {
	c.mu.Lock()
	defer c.mu.Unlock()
	grp := c.group(g)
	grp.pins++
	return grp
}

// Unpin releases a handle from Pin. Each Pin needs exactly one Unpin.
func (grp *Group[G, K, V]) Unpin() {
	c := grp.c
	c.mu.Lock()
	defer c.mu.Unlock()
	grp.pins--
	c.release(grp)
}

// Get returns the value the group holds under k, and true when it is
// present, live and unexpired by the clock, which it reads. A hit takes no
// lock and allocates nothing; a miss drops what it found expired and sweeps. Get keeps no reference to
// k, so a caller may look up a key whose bytes it reuses afterwards.
func (grp *Group[G, K, V]) Get(k K) (value V, ok bool) {
	c := grp.c
	e := grp.entries.get(k)
	// The clock is read here, for this lookup: nothing else may say that
	// an entry is unexpired (see clock), or that the horizon is ahead.
	if now := c.clk.elapsed(); e != nil && e.gen == grp.gen.Load() && now < e.expires && now < time.Duration(c.horizon.Load()) {
		if !e.ref.Load() { // write the shared line only when it changes
			e.ref.Store(true)
		}
		c.hits.Add(1)
		return e.value, true
	}
	c.miss(e)
	return value, false
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
	return oldest != &c.list && (now >= oldest.expires || oldest.gen != oldest.grp.gen.Load())
}

// Add stores value under group g and key k for ttl, replacing any earlier
// value and making it the most recently used entry; size is the memory the
// key and value hold beyond their own fixed size (the bytes of their
// strings, say), which the entry counts against the byte bound together
// with the cache's own bookkeeping. Least recently used entries are evicted
// until the cache is within its bounds. Add reports whether the value was
// stored: a ttl that is zero or negative, or an entry larger than the whole
// byte bound, stores nothing and removes any earlier value, so that a caller
// never reads an old answer in place of the one it chose not to keep.
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
	grp := c.groups[g]
	if grp == nil {
		return false
	}
	e := grp.entries.get(k)
	if e != nil {
		c.remove(e)
	}
	return e != nil
}

// RemoveGroup deletes every entry of group g, live or expired, and returns
// how many it deleted. The entries are gone for every later Get as soon as
// the call starts; their memory is freed before it returns, a batch at a
// time, so that other callers wait for one batch at most. It costs time in
// proportion to the group's entries. Writers of g made before the call
// store nothing from then on; Group handles stay valid.
func (c *Cache[G, K, V]) RemoveGroup(g G) int {
	c.mu.Lock()
	grp := c.groups[g]
	if grp == nil {
		c.mu.Unlock()
		return 0
	}
	grp.gen.Add(1)
	n := grp.entries.len()
	dead := grp.entries.tab.Load()
	grp.entries.reset()
	c.release(grp)
	c.mu.Unlock()

	// Nobody writes dead any more: it is no group's table.
	batch := make([]*entry[G, K, V], 0, min(n, freeBatch))
	free := func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, e := range batch {
			if e.next != nil { // not evicted or swept meanwhile
				c.unlink(e)
			}
		}
		batch = batch[:0]
	}
	for i := range dead.slots {
		e := dead.slots[i].e.Load()
		if e == nil || e == c.keys.tomb {
			continue
		}
		if batch = append(batch, e); len(batch) == freeBatch {
			free()
		}
	}
	free()
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
	c.groupsMu.Lock()
	for _, grp := range c.groups {
		grp.gen.Add(1)
		grp.entries.reset()
		if grp.pins == 0 && grp.writers == 0 {
			delete(c.groups, grp.id)
		}
	}
	c.groupsMu.Unlock()
	c.bytes = int64(len(c.groups)) * c.groupCost // groups that handles keep
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

// Writer adds entries to one group unless the group is removed after the
// writer was made: a value fetched before a removal never comes back after
// it. The time to live of what it adds counts from when it was made, so
// that a value is never kept longer than its time to live after it was
// asked for, however long the fetch took or the process stalled before
// storing it. Make one with [Cache.Writer] just before fetching, and Close
// it when done. A Writer is not safe for concurrent use.
type Writer[G, K comparable, V any] struct {
	grp    *Group[G, K, V]
	gen    uint64
	made   time.Duration // since the cache's epoch
	closed bool
}

// Writer returns a writer for group g, made now: the time to live of what
// it adds counts from this call. Until it is closed, the cache keeps g's
// bookkeeping even when g has no entries.
func (c *Cache[G, K, V]) Writer(g G) *Writer[G, K, V] {
	made := c.clk.elapsed()
	c.mu.Lock()
	defer c.mu.Unlock()
	grp := c.group(g)
	grp.writers++
	return &Writer[G, K, V]{grp: grp, gen: grp.gen.Load(), made: made}
}

// Add is Cache.Add for the writer's group, except that ttl counts from when
// the writer was made, not from this call, and that it stores nothing, and
// reports false, once the group has been removed since the writer was made,
// or after Close. A ttl that has run out already stores nothing and removes
// any earlier value, as a ttl that is not positive does.
func (w *Writer[G, K, V]) Add(k K, value V, ttl time.Duration, size int64) bool {
	if w.closed {
		return false
	}
	c := w.grp.c
	now := c.clk.elapsed()
	c.mu.Lock()
	defer c.mu.Unlock()
	if w.grp.gen.Load() != w.gen {
		return false
	}
	return c.add(w.grp, k, value, now, expiry(w.made, ttl), size)
}

// Close releases the writer. Closing it again does nothing.
func (w *Writer[G, K, V]) Close() {
	if w.closed {
		return
	}
	w.closed = true
	c := w.grp.c
	c.mu.Lock()
	defer c.mu.Unlock()
	w.grp.writers--
	c.release(w.grp)
}

// group returns g's handle, making it if needed. c.mu must be held.
func (c *Cache[G, K, V]) group(g G) *Group[G, K, V] {
	grp := c.groups[g]
	if grp == nil {
		grp = &Group[G, K, V]{c: c, id: g}
		grp.entries.init(&c.keys)
		c.groupsMu.Lock()
		c.groups[g] = grp
		c.groupsMu.Unlock()
		c.bytes += c.groupCost
	}
	return grp
}

// release forgets a group that has no entries, pins or writers. c.mu must
// be held.
func (c *Cache[G, K, V]) release(grp *Group[G, K, V]) {
	if grp.entries.len() == 0 && grp.pins == 0 && grp.writers == 0 && c.groups[grp.id] == grp {
		c.groupsMu.Lock()
		delete(c.groups, grp.id)
		c.groupsMu.Unlock()
		c.bytes -= c.groupCost
	}
}

// add stores an entry of grp that expires at expires, unless that is not
// after now; c.mu must be held.
func (c *Cache[G, K, V]) add(grp *Group[G, K, V], k K, value V, now, expires time.Duration, size int64) bool {
	size = max(size, 0) + c.entryCost
	if expires <= now || size+c.groupCost > c.maxBytes {
		if e := grp.entries.get(k); e != nil {
			c.remove(e)
		}
		c.release(grp)
		return false
	}
	e := &entry[G, K, V]{key: k, grp: grp, value: value, expires: expires, size: size, gen: grp.gen.Load()}
	if old := grp.entries.put(e); old != nil {
		c.unlink(old)
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
		live := now < e.expires && e.gen == e.grp.gen.Load()
		if live && chances > 0 && e.ref.Load() {
			chances--
			e.ref.Store(false)
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
		if e == &c.list || (now < e.expires && e.gen == e.grp.gen.Load()) {
			return
		}
		if now >= e.expires {
			c.expirations++
		}
		c.remove(e)
	}
}

// remove deletes one entry from the list and, when it is still its group's
// entry for its key, from the group. c.mu must be held.
func (c *Cache[G, K, V]) remove(e *entry[G, K, V]) {
	c.unlink(e)
	if e.grp.entries.remove(e) {
		c.release(e.grp)
	}
}

// link adds a new entry at the front and counts it; c.mu must be held.
func (c *Cache[G, K, V]) link(e *entry[G, K, V]) {
	c.pushFront(e)
	c.length++
	c.bytes += e.size
}

// unlink takes an entry out of the list and the counts; c.mu must be held.
func (c *Cache[G, K, V]) unlink(e *entry[G, K, V]) {
	c.unlinkOnly(e)
	c.length--
	c.bytes -= e.size
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
