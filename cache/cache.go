package cache

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"time"
	"unsafe"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// Cache is a bounded LRU map of values V, each stored under a group G and a
// key K, with a time to live per entry. It holds at most a fixed number of
// entries and, optionally, a fixed number of bytes (each entry's size is
// given when it is added). Adding to a full cache evicts the least recently
// used entries until the new one fits.
//
// Groups exist so that related entries can be dropped together:
// [Cache.RemoveGroup] costs time in proportion to the group's entries, not
// to the cache. A [Writer] fences writes against such removals: what it
// adds after its group was removed is dropped.
//
// A Cache is safe for concurrent use. Create it with [New]; the zero value is
// not usable.
type Cache[G, K comparable, V any] struct {
	// Expiry times are kept as durations since epoch, the cache's creation.
	// With the real clock (now is nil) the time since epoch reads only the
	// monotonic clock, which costs half as much as time.Now.
	epoch time.Time
	now   func() time.Time

	maxEntries int
	maxBytes   int64

	// One mutex guards the list, the group index and the counters: a
	// lookup takes one lock and no other atomic operation.
	mu     sync.Mutex
	lru    *simplelru.LRU[slot[G, K], entry[G, K, V]]
	groups map[G]*group[G, K]
	bytes  int64
	stats  Stats

	// entryCost and groupCost are what the cache's own bookkeeping takes
	// for an entry and for a group, counted against the byte bound on top
	// of the sizes callers give.
	entryCost, groupCost int64
}

// slot is where an entry is stored: its group and its key.
type slot[G, K comparable] struct {
	group G
	key   K
}

type entry[G, K comparable, V any] struct {
	value   V
	expires time.Duration // since the cache's epoch
	size    int64         // the caller's size plus entryCost
	// grp and gen are the group and its generation when the entry was
	// stored: once the group is removed (gen moves on), the entry is dead
	// at once, whenever it is freed.
	grp *group[G, K]
	gen uint64
}

// group indexes one group's live entries, so that removing the group does
// not walk the cache. It lives while it has entries or open writers.
type group[G, K comparable] struct {
	// id is the group's value as first seen; every entry of the group is
	// stored under this one copy, so a group value that holds a string (a
	// token, say) is kept once, not once per entry.
	id      G
	keys    map[K]struct{}
	writers int
	// gen counts removals of the group; a Writer made before the last one
	// no longer writes.
	gen uint64
}

// Stats is a snapshot of a cache's counters, which only grow.
type Stats struct {
	// Hits counts lookups that found a live entry.
	Hits uint64
	// Misses counts lookups that found nothing or an expired entry.
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

// WithClock makes the cache read the time from now instead of time.Now. now
// must be safe for concurrent use. A nil now is an error in New.
func WithClock(now func() time.Time) Option {
	return func(c *config) { c.now, c.clockSet = now, true }
}

// WithMaxBytes bounds the sum of the sizes of the entries (as given to Add)
// to n, which must be positive. Without it only the number of entries is
// bounded.
func WithMaxBytes(n int64) Option {
	return func(c *config) { c.maxBytes, c.bytesSet = n, true }
}

// sweepBatch bounds the expired entries one operation drops besides its own,
// so that no caller pays for a large batch that expired together.
const sweepBatch = 16

// freeBatch bounds the entries of a removed group freed under one hold of
// the lock, so that a large group's removal never holds up other callers
// for long.
const freeBatch = 256

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
	// The list itself is unbounded: the cache evicts by entries and bytes
	// itself, so that every removal passes through its bookkeeping.
	l, err := simplelru.NewLRU[slot[G, K], entry[G, K, V]](math.MaxInt, nil)
	if err != nil {
		return nil, fmt.Errorf("cache: %w", err)
	}
	c := &Cache[G, K, V]{
		now:        cfg.now,
		maxEntries: maxEntries,
		maxBytes:   cfg.maxBytes,
		lru:        l,
		groups:     make(map[G]*group[G, K]),
		entryCost:  entryCost[G, K, V](),
		groupCost:  groupCost[G, K](),
	}
	c.epoch = c.read()
	return c, nil
}

// entryCost estimates the memory of one entry's bookkeeping: its list
// element (links, key, value, simplelru's expiry fields), its slot in
// simplelru's index and in its group's index. A map slot is counted with
// its control byte at a load of 2/3, about where a map that doubles as it
// grows sits on average. TestBytesTrackRealMemory holds the estimate to
// what the heap really grows by.
func entryCost[G, K comparable, V any]() int64 {
	var s slot[G, K]
	var e entry[G, K, V]
	var k K
	elem := 3*8 + unsafe.Sizeof(s) + unsafe.Sizeof(e) + 24 + 8
	index := (unsafe.Sizeof(s) + 8 + 1) * 3 / 2
	keys := (unsafe.Sizeof(k) + 1) * 3 / 2
	return int64(elem + index + keys)
}

// groupCost estimates the memory of one group's bookkeeping: the group, its
// slot in the cache's index of groups, and its own index of keys with room
// for its first eight keys (a map's first allocation).
func groupCost[G, K comparable]() int64 {
	var g G
	var k K
	var grp group[G, K]
	return int64(unsafe.Sizeof(grp) + (unsafe.Sizeof(g)+8+1)*3/2 + 48 + 8*(unsafe.Sizeof(k)+1) + 8)
}

// read returns the time from the cache's clock.
func (c *Cache[G, K, V]) read() time.Time {
	if c.now == nil {
		return time.Now()
	}
	return c.now()
}

// elapsed returns the time since the cache's epoch.
func (c *Cache[G, K, V]) elapsed() time.Duration {
	if c.now == nil {
		return time.Since(c.epoch) // monotonic only
	}
	return c.now().Sub(c.epoch)
}

// Get returns the value stored under group g and key k, and true when it is
// present and has not expired. It marks the entry as recently used. An
// expired entry is removed and reported as a miss. Get allocates nothing.
func (c *Cache[G, K, V]) Get(g G, k K) (value V, ok bool) {
	now := c.elapsed() // outside the lock
	s := slot[G, K]{group: g, key: k}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, found := c.lru.Get(s)
	if found && now < e.expires && e.gen == e.grp.gen {
		c.stats.Hits++
		return e.value, true
	}
	if found {
		if now >= e.expires {
			c.stats.Expirations++
		}
		c.remove(s, e)
	}
	c.stats.Misses++
	c.sweep(now)
	return value, false
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
	now := c.elapsed()
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.add(c.group(g), k, value, now, ttl, size)
}

// Remove deletes the entry under group g and key k and reports whether there
// was one.
func (c *Cache[G, K, V]) Remove(g G, k K) bool {
	s := slot[G, K]{group: g, key: k}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.lru.Peek(s)
	if ok {
		c.remove(s, e)
	}
	return ok
}

// RemoveGroup deletes every entry of group g, live or expired, and returns
// how many it deleted. The entries are gone for every later Get as soon as
// the call starts; their memory is freed before it returns, a batch at a
// time, so that other callers wait for one batch at most. It costs time in
// proportion to the group's entries. Writers of g made before the call
// store nothing from then on.
func (c *Cache[G, K, V]) RemoveGroup(g G) int {
	c.mu.Lock()
	grp, ok := c.groups[g]
	if !ok {
		c.mu.Unlock()
		return 0
	}
	dead, gen := grp.keys, grp.gen
	grp.keys = make(map[K]struct{})
	grp.gen++
	c.release(grp)
	c.mu.Unlock()

	batch := make([]K, 0, min(len(dead), freeBatch))
	free := func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, k := range batch {
			s := slot[G, K]{group: grp.id, key: k}
			// A later entry may have taken the slot since; it stays.
			if e, ok := c.lru.Peek(s); ok && e.grp == grp && e.gen == gen {
				c.lru.Remove(s)
				c.bytes -= e.size
			}
		}
		batch = batch[:0]
	}
	for k := range dead {
		if batch = append(batch, k); len(batch) == freeBatch {
			free()
		}
	}
	free()
	return len(dead)
}

// Purge deletes every entry, as RemoveGroup does for each group. Counters
// are kept.
func (c *Cache[G, K, V]) Purge() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lru.Purge()
	for _, grp := range c.groups {
		clear(grp.keys)
		grp.gen++
		if grp.writers == 0 {
			delete(c.groups, grp.id)
		}
	}
	c.bytes = int64(len(c.groups)) * c.groupCost // groups that writers keep
}

// Len returns the number of entries, expired ones not yet dropped included.
func (c *Cache[G, K, V]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}

// Bytes returns what the entries and groups count against the byte bound:
// the sizes given to Add plus the cache's own bookkeeping.
func (c *Cache[G, K, V]) Bytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bytes
}

// Stats returns the current counters.
func (c *Cache[G, K, V]) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stats
}

// Writer adds entries to one group unless the group is removed after the
// writer was made: a value fetched before a removal never comes back after
// it. Make one with [Cache.Writer] before fetching, and Close it when done.
// A Writer is not safe for concurrent use.
type Writer[G, K comparable, V any] struct {
	c      *Cache[G, K, V]
	grp    *group[G, K]
	gen    uint64
	closed bool
}

// Writer returns a writer for group g. Until it is closed, the cache keeps
// a few bytes of bookkeeping for g even when g has no entries.
func (c *Cache[G, K, V]) Writer(g G) *Writer[G, K, V] {
	c.mu.Lock()
	defer c.mu.Unlock()
	grp := c.group(g)
	grp.writers++
	return &Writer[G, K, V]{c: c, grp: grp, gen: grp.gen}
}

// Add is Cache.Add for the writer's group, except that it stores nothing,
// and reports false, once the group has been removed since the writer was
// made, or after Close.
func (w *Writer[G, K, V]) Add(k K, value V, ttl time.Duration, size int64) bool {
	if w.closed {
		return false
	}
	now := w.c.elapsed()
	w.c.mu.Lock()
	defer w.c.mu.Unlock()
	if w.grp.gen != w.gen {
		return false
	}
	return w.c.add(w.grp, k, value, now, ttl, size)
}

// Close releases the writer. Closing it again does nothing.
func (w *Writer[G, K, V]) Close() {
	if w.closed {
		return
	}
	w.closed = true
	w.c.mu.Lock()
	defer w.c.mu.Unlock()
	w.grp.writers--
	w.c.release(w.grp)
}

// group returns g's index, making it if needed. c.mu must be held.
func (c *Cache[G, K, V]) group(g G) *group[G, K] {
	grp, ok := c.groups[g]
	if !ok {
		grp = &group[G, K]{id: g, keys: make(map[K]struct{})}
		c.groups[g] = grp
		c.bytes += c.groupCost
	}
	return grp
}

// release forgets a group that has neither entries nor writers. c.mu must
// be held.
func (c *Cache[G, K, V]) release(grp *group[G, K]) {
	if len(grp.keys) == 0 && grp.writers == 0 && c.groups[grp.id] == grp {
		delete(c.groups, grp.id)
		c.bytes -= c.groupCost
	}
}

// add stores an entry of grp; c.mu must be held.
func (c *Cache[G, K, V]) add(grp *group[G, K], k K, value V, now, ttl time.Duration, size int64) bool {
	s := slot[G, K]{group: grp.id, key: k}
	size = max(size, 0) + c.entryCost
	if ttl <= 0 || size+c.groupCost > c.maxBytes {
		if e, ok := c.lru.Peek(s); ok {
			c.remove(s, e)
		}
		c.release(grp)
		return false
	}
	expires := time.Duration(math.MaxInt64) // saturate: the entry never expires
	if now <= math.MaxInt64-ttl {
		expires = now + ttl
	}
	if old, ok := c.lru.Peek(s); ok {
		// Replaced in place: k stays in grp's index (or joins it, when
		// the old entry was of a removed generation).
		c.lru.Remove(s)
		c.bytes -= old.size
	}
	grp.keys[k] = struct{}{}
	c.lru.Add(s, entry[G, K, V]{value: value, expires: expires, size: size, grp: grp, gen: grp.gen})
	c.bytes += size
	for c.lru.Len() > 1 && (c.lru.Len() > c.maxEntries || c.bytes > c.maxBytes) {
		old, e, _ := c.lru.GetOldest()
		c.remove(old, e)
		if now < e.expires {
			c.stats.Evictions++
		} else {
			c.stats.Expirations++
		}
	}
	c.sweep(now)
	return true
}

// sweep drops up to sweepBatch expired entries from the least recently used
// end, so that entries nobody asks for again do not stay resident until
// they are evicted. An expired entry behind a live one waits for a later
// sweep: at most the longest time to live. c.mu must be held.
func (c *Cache[G, K, V]) sweep(now time.Duration) {
	for range sweepBatch {
		s, e, ok := c.lru.GetOldest()
		if !ok || now < e.expires {
			return
		}
		c.remove(s, e)
		c.stats.Expirations++
	}
}

// remove deletes one entry and its bookkeeping; c.mu must be held. The
// entry of a removed generation is no longer in its group's index.
func (c *Cache[G, K, V]) remove(s slot[G, K], e entry[G, K, V]) {
	c.lru.Remove(s)
	c.bytes -= e.size
	if e.gen == e.grp.gen {
		delete(e.grp.keys, s.key)
		c.release(e.grp)
	}
}
