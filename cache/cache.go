package cache

import (
	"errors"
	"fmt"
	"math"
	"reflect"
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
// (the CLOCK approximation of LRU; at most 64 an addition, past which the
// oldest goes, read or not), so that a hit marks the entry without taking
// any lock of the cache's.
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
	// store and groupStore make the entries and groups, with their own
	// copies of string keys and of the strings of group values, and say
	// what each costs against the byte bound.
	store      keyStore[G, K, V]
	groupStore groupStore[G, K, V]

	// keys hashes (group, key) pairs for idx.
	keys hasher
	// idx holds every entry by its group and key. It is written under mu,
	// and read without it: hits take no lock (see index).
	idx index[G, K, V]

	// mu guards the recency ring, the counts, the groups' members and
	// holds, and the writes of idx and groups.
	mu sync.RWMutex
	// groups holds the groups by value, for Get, Lookup and writers; hits
	// through a Group handle do not read it. It is written under mu, and
	// read without it.
	groups groupIndex[G, K, V]
	none   *Group[G, K, V] // what Lookup returns for a group the cache does not hold
	// ring is the recency order, oldest first: every entry the cache holds
	// is at ring[e.pos], at or after ring[head]; an entry taken out leaves
	// a nil hole, and ring[head] is never a hole (see push and unring).
	ring []*entry[G, K, V]
	head int
	// sets holds the members of each group that has had two entries or
	// more since it last had none, all of them in idx; a group of one
	// entry keeps it in its one field instead, and not in idx.
	sets   map[*Group[G, K, V]]*memberSet[G, K, V]
	length int
	bytes  int64
	// idle is what the groups that hold no entry count in bytes: those a
	// pin or a writer keeps (a call under way), which never make an entry
	// evicted (see evict).
	idle int64

	hits, misses           stripe.Counter
	evictions, expirations uint64 // under mu
	// seq counts the Writers made and the Adds, under mu: the order in
	// which values were asked for; writing holds the oldest open writer
	// of each group that has one, in a ring of them all (see order.go).
	seq     uint64
	writing map[*Group[G, K, V]]*Writer[G, K, V]

	// horizon is when, as time since the epoch, Get stops serving (see
	// ServeUntil); math.MaxInt64 unless set.
	horizon atomic.Int64
}

// entry is one stored value, at its place in the cache's recency ring and
// among its group's members. Its key, grp, expires, size and value never
// change once readers can find it (through its group's one field or the
// index); an entry is never reused for another pair. The fields a hit
// reads come first; for a string key, the key's bytes come right before
// the entry in its own allocation (see keyStore), so that a hit reads them
// with the entry, in one run of memory, not through a pointer to memory of
// the caller's. An entry holds no links: its places are two numbers,
// under c.mu, so that a cache of many one-entry groups (a token each)
// spends its memory on the entries' values, keys and tokens.
type entry[G, K comparable, V any] struct {
	key K
	// state is the group's generation when the entry was stored, shifted
	// left by one, and in its low bit the reference mark, which hits set
	// and eviction clears when it gives the entry its second chance.
	state   atomic.Uint64
	expires time.Duration // since the cache's epoch
	grp     *Group[G, K, V]
	size    uint32 // the caller's size plus the entry's bookkeeping (see keyStore.cost)
	// pos is the entry's place in c.ring, and mpos its place in its
	// group's memberSet (when it has one); under c.mu.
	pos, mpos uint32
	value     V
}

// memberSet is the members of a group of two entries or more, each at
// es[e.mpos], for RemoveGroup; under c.mu.
type memberSet[G, K comparable, V any] struct {
	es []*entry[G, K, V]
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
// the cache's bookkeeping, which includes the cache's own copies of string
// keys and of the strings of group values) to n bytes, which must be
// positive. Without it only the number of entries is bounded. A group that
// holds no entry, kept by a pin or a writer (a call under way), is counted
// in Bytes but never makes an entry evicted: it is bounded by the pins and
// calls that hold it, and calls in flight with tokens a server will refuse
// cannot flush the decisions others stored.
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

// MaxEntries is the largest maxEntries New takes: an entry's places in
// the recency ring and in its group are 32-bit numbers.
const MaxEntries = 1 << 31

// Footprint returns what one entry of size size (the caller's, as given to
// Writer.Add) under key k, alone in the group of value g, counts against
// the byte bound of a Cache[G, K, V] (WithMaxBytes): the least bound under
// which such an entry can be kept. It counts what Bytes counts.
func Footprint[G, K comparable, V any](g G, k K, size int64) int64 {
	ks := keyStore[G, K, V]{strings: reflect.TypeFor[K]().Kind() == reflect.String}
	var gs groupStore[G, K, V]
	gs.init()
	return gs.cost(&g) + ks.cost(&k) + max(size, 0)
}

// New returns an empty cache holding at most maxEntries entries. It returns
// an error when maxEntries is not positive or more than MaxEntries, or an option
// is invalid.
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
	if maxEntries > MaxEntries {
		errs = append(errs, fmt.Errorf("cache: size must be at most 2^31 entries, got %d", maxEntries))
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
		keys:       newHasher[G, K](),
	}
	c.store.strings = c.keys.strings
	c.groupStore.init()
	c.idx.init()
	c.groups.init()
	c.horizon.Store(math.MaxInt64)
	c.none = &Group[G, K, V]{c: c}
	c.sets = make(map[*Group[G, K, V]]*memberSet[G, K, V])
	c.clk.init(cfg.now)
	return c, nil
}

// Get returns the value stored under group g and key k, and true when it is
// present and has not expired. It hashes g and finds the group in the
// cache's table of groups; then it compares k with the key of the group's
// entry, for a group of one, or hashes k and probes the cache's index once,
// for an entry of that very group (compared by pointer, not by value). A
// caller that reads a group often holds a Group handle instead, which
// never hashes g. Get takes no lock and allocates nothing.
func (c *Cache[G, K, V]) Get(g G, k K) (value V, ok bool) {
	gh := groupHash(&c.keys, g)
	grp := c.groups.get(gh, g)
	var e *entry[G, K, V]
	if grp != nil {
		// find and keyHash, by hand: their calls cost a hit more than the
		// rest of them.
		if e = grp.one.Load(); e == nil {
			var h uint64
			if c.keys.strings {
				h = strHash(*(*string)(unsafe.Pointer(&k)), gh, &c.keys.keys) // K is a string type
			} else {
				h = keyHash(&c.keys, gh, k)
			}
			e = c.idx.get(h, grp, k)
		} else if e.key != k {
			e = nil
		}
		// The clock is read here, for this lookup, once it found e.
		if e != nil && c.serves(e, grp, c.clk.elapsed()) {
			return e.value, true
		}
	}
	c.miss(e)
	return value, false
}

// find returns the entry of group grp under key k, or nil: the group's
// only entry when it has one (no probe of the index), else the one the
// index holds, which may be of an older generation of grp. It takes no
// lock. A group's one field is set only while the index holds no entry of
// its current generation: a writer that gives the group a second entry
// puts both in the index before it clears one, so that a reader finds a
// live entry in one place or the other.
func (c *Cache[G, K, V]) find(grp *Group[G, K, V], k K) *entry[G, K, V] {
	if e := grp.one.Load(); e != nil {
		if e.key == k {
			return e
		}
		return nil
	}
	return c.idx.get(keyHash(&c.keys, grp.seed, k), grp, k)
}

// serves reports whether the cache serves e, an entry of grp found by a
// lookup, at now, and counts the hit when it does: e is of grp's current
// generation, unexpired at now, and the horizon is ahead. now is the
// clock's reading for this very lookup, which the caller takes once it has
// found e: nothing else may say that an entry is unexpired (see clock), or
// that the horizon is ahead.
func (c *Cache[G, K, V]) serves(e *entry[G, K, V], grp *Group[G, K, V], now time.Duration) bool {
	st := e.state.Load()
	if st>>1 != grp.gen.Load() || now >= e.expires || now >= time.Duration(c.horizon.Load()) {
		return false
	}
	if st&1 == 0 { // write the entry's line only when the mark changes
		e.state.Store(st | 1)
	}
	c.hits.Add(1)
	return true
}

// live is serves without its counting and marking (Peek).
func (c *Cache[G, K, V]) live(e *entry[G, K, V], grp *Group[G, K, V], now time.Duration) bool {
	return e.state.Load()>>1 == grp.gen.Load() && now < e.expires && now < time.Duration(c.horizon.Load())
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
		if e != nil && c.linked(e) && now >= e.expires {
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
	oldest := c.oldest()
	return oldest != nil && (now >= oldest.expires || oldest.gen() != oldest.grp.gen.Load())
}

// Add stores value under group g and key k for ttl, replacing any earlier
// value (a value that Add stores is asked for now, after any Writer's) and
// making it the most recently used entry; size is the memory the
// value (and a key that is not a string) holds beyond its own fixed size
// (the bytes of its strings, say), which the entry counts against the byte
// bound together with the cache's own bookkeeping. A key whose type is a
// string is copied, into the entry's own allocation when the two fit in
// 1 KiB, and the cache counts that copy itself: size need not include the
// key's bytes. So are the strings of a group value that is a string or a
// struct of strings and numbers (a scheme and a token, say), once per
// group, in the group's own allocation; a group value that holds other
// pointers is kept as given, and what they hold is for size to count. Least recently used entries are evicted
// until the cache is within its bounds. Add reports whether the value was
// stored: a ttl that is zero or negative, or an entry larger than the whole
// byte bound or of 4 GiB or more, stores nothing and removes any earlier
// value, so that a caller never reads an old answer in place of the one it
// chose not to keep.
func (c *Cache[G, K, V]) Add(g G, k K, value V, ttl time.Duration, size int64) bool {
	now := c.clk.elapsed()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	return c.add(c.group(g), k, value, c.seq, now, expiry(now, ttl), size)
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
	e := c.find(grp, k)
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
	// members, taken whole, are this call's alone to free: nothing else
	// changes the group's members of an older generation.
	grp.gen.Add(1)
	var dead []*entry[G, K, V]
	if one := grp.one.Load(); one != nil {
		dead = []*entry[G, K, V]{one}
		grp.one.Store(nil)
	} else if s := c.sets[grp]; s != nil {
		dead = s.es
		delete(c.sets, grp)
	}
	if dead != nil {
		c.idle += c.groupStore.cost(&grp.id)
	}
	c.release(grp)
	c.mu.Unlock()

	n := 0
	for len(dead) > 0 {
		c.mu.Lock()
		batch := dead[:min(len(dead), freeBatch)]
		dead = dead[len(batch):]
		for _, e := range batch {
			if c.linked(e) { // not evicted, swept, replaced or purged meanwhile
				c.idx.remove(c.hashOf(e), e)
				c.unlink(e)
			}
		}
		n += len(batch)
		c.mu.Unlock()
	}
	return n
}

// Purge deletes every entry, as RemoveGroup does for each group. Counters
// are kept.
func (c *Cache[G, K, V]) Purge() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ring, c.head = nil, 0
	clear(c.sets)
	c.length = 0
	c.idx.reset()
	// Groups that handles keep stay, with no entries.
	c.bytes, c.idle = 0, 0
	c.groups.retain(0, func(grp *Group[G, K, V]) bool {
		grp.gen.Add(1)
		grp.one.Store(nil)
		if grp.holds == 0 {
			return false
		}
		cost := c.groupStore.cost(&grp.id)
		c.bytes += cost
		c.idle += cost
		return true
	})
}

// Len returns the number of entries, expired ones not yet dropped included.
func (c *Cache[G, K, V]) Len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.length
}

// Bytes returns what the entries and groups count: the sizes given to Add
// plus the cache's own bookkeeping (its copies of string keys and of group
// values' strings included). Groups that hold no entry are counted here
// but not against the byte bound (see WithMaxBytes), so Bytes may exceed
// it by what pins and calls under way hold.
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

// add stores an entry of grp, asked for as the seq-th value, that expires
// at expires, unless that is not after now; c.mu must be held.
//
// Values are kept in the order they were asked for, not the order they
// arrive in: a value under a key that a newer value, kept or not, was
// written under while its writer was open is not stored (see order.go),
// so that a slow answer to an older request never stands in for a newer
// one.
func (c *Cache[G, K, V]) add(grp *Group[G, K, V], k K, value V, seq uint64, now, expires time.Duration, size int64) bool {
	size = max(size, 0)
	h := keyHash(&c.keys, grp.seed, k)
	if c.superseded(grp, h, k, seq) {
		c.release(grp)
		return false
	}
	c.wrote(grp, h, seq)
	cost := c.store.cost(&k)
	// An entry that does not fit beside its group's bookkeeping never
	// fits; one of 4 GiB or more is not stored either (an entry counts
	// its size in 32 bits).
	if expires <= now || size > min(c.maxBytes-c.groupStore.cost(&grp.id), math.MaxUint32)-cost {
		if e := c.find(grp, k); e != nil {
			c.remove(e)
		}
		c.release(grp)
		return false
	}
	e := c.store.make(k)
	e.grp, e.value, e.expires, e.size = grp, value, expires, uint32(size+cost)
	gen := grp.gen.Load()
	e.state.Store(gen << 1)
	c.join(grp, gen, e)
	c.evict(now, e)
	c.sweep(now)
	return true
}

// join makes e, new, a member of grp, of grp's generation gen, in place
// of any entry of grp under e's key, and counts it. c.mu must be held.
func (c *Cache[G, K, V]) join(grp *Group[G, K, V], gen uint64, e *entry[G, K, V]) {
	one := grp.one.Load()
	s := c.sets[grp]
	if one == nil && s == nil { // the group's first entry: it is idle no more
		c.idle -= c.groupStore.cost(&grp.id)
	}
	switch {
	case one != nil && one.key == e.key:
		grp.one.Store(e)
		c.unlink(one)
	case one != nil:
		// The group's second entry: both go to the index before one is
		// cleared, so that a reader finds the first in one place or the
		// other (see find).
		one.mpos, e.mpos = 0, 1
		c.sets[grp] = &memberSet[G, K, V]{es: []*entry[G, K, V]{one, e}}
		c.put(c.hashOf(one), one)
		c.put(c.hashOf(e), e)
		grp.one.Store(nil)
	case s != nil:
		if old := c.put(c.hashOf(e), e); old != nil && old.gen() == gen {
			e.mpos = old.mpos
			s.es[e.mpos] = e
		} else {
			e.mpos = uint32(len(s.es))
			s.es = append(s.es, e)
		}
	default:
		// An entry of an older generation under e's key may still be in
		// the index, for the RemoveGroup that is freeing it: find reads
		// one first, and never reaches it.
		grp.one.Store(e)
	}
	c.push(e)
	c.length++
	c.bytes += int64(e.size)
}

// put stores e in the index, takes the entry it replaces (of e's group
// and key, of its generation or an older one) out of the ring and the
// counts, and returns that entry, or nil. c.mu must be held.
func (c *Cache[G, K, V]) put(h uint64, e *entry[G, K, V]) *entry[G, K, V] {
	old := c.idx.put(h, e)
	if old != nil {
		c.unlink(old)
	}
	return old
}

// evict removes entries from the old end until the cache is within its
// bounds, giving an entry read since it was last looked at a second chance.
// The entry being added, keep, is never evicted. c.mu must be held.
func (c *Cache[G, K, V]) evict(now time.Duration, keep *entry[G, K, V]) {
	chances := min(c.length, maxChances)
	// Groups that hold no entry (idle) are the memory of calls under way
	// and of pins, bounded by them: they never make an entry evicted, or a
	// caller could flush everyone's decisions with calls in flight whose
	// tokens the server will refuse.
	for c.length > 1 && (c.length > c.maxEntries || c.bytes-c.idle > c.maxBytes) {
		e := c.oldest()
		if e == keep { // second chances moved every other entry ahead of it
			c.unring(e)
			c.push(e)
			continue
		}
		st := e.state.Load()
		live := now < e.expires && st>>1 == e.grp.gen.Load()
		if live && chances > 0 && st&1 != 0 {
			chances--
			// A hit racing this store may set the mark again: the entry
			// then keeps it, as it would have a moment later.
			e.state.Store(st &^ 1)
			c.unring(e)
			c.push(e)
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
		e := c.oldest()
		if e == nil || (now < e.expires && e.gen() == e.grp.gen.Load()) {
			return
		}
		if now >= e.expires {
			c.expirations++
		}
		c.remove(e)
	}
}

// hashOf returns the hash e is, or would be, stored under in the index.
func (c *Cache[G, K, V]) hashOf(e *entry[G, K, V]) uint64 {
	return keyHash(&c.keys, e.grp.seed, e.key)
}

// remove deletes e, which the cache holds, from its group's members (or,
// for an entry of an older generation, from the index, where RemoveGroup
// may not have reached it yet), the ring and the counts, and forgets its
// group when that leaves it empty and unheld. c.mu must be held.
func (c *Cache[G, K, V]) remove(e *entry[G, K, V]) {
	grp := e.grp
	current := e.gen() == grp.gen.Load()
	if current {
		c.leave(grp, e)
	} else {
		c.idx.remove(c.hashOf(e), e)
	}
	c.unlink(e)
	if current {
		c.release(grp)
	}
}

// leave takes e, of grp's current generation, out of grp's members (and
// the index, for a group of two or more), and counts grp idle when that
// leaves it without entries. c.mu must be held.
func (c *Cache[G, K, V]) leave(grp *Group[G, K, V], e *entry[G, K, V]) {
	if grp.one.Load() == e {
		grp.one.Store(nil)
	} else {
		s := c.sets[grp]
		c.idx.remove(c.hashOf(e), e)
		last := s.es[len(s.es)-1]
		s.es[e.mpos], last.mpos = last, e.mpos
		s.es[len(s.es)-1] = nil
		s.es = s.es[:len(s.es)-1]
		switch {
		case len(s.es) == 0:
			delete(c.sets, grp)
		case cap(s.es) > 16 && len(s.es) < cap(s.es)/2:
			// At most two slots a member (what entryShare counts), as
			// appends leave it too; the copy has room for half as many
			// again, so that a quarter of the members come or go before
			// the next copy.
			s.es = append(make([]*entry[G, K, V], 0, len(s.es)+len(s.es)/2), s.es...)
		}
		if len(s.es) > 0 {
			return
		}
	}
	c.idle += c.groupStore.cost(&grp.id)
}

// linked reports whether the cache holds e (the ring does). c.mu must be
// held, for reading at least.
func (c *Cache[G, K, V]) linked(e *entry[G, K, V]) bool {
	return int(e.pos) < len(c.ring) && c.ring[e.pos] == e
}

// oldest returns the entry at the old end of the ring, or nil. c.mu must
// be held, for reading at least.
func (c *Cache[G, K, V]) oldest() *entry[G, K, V] {
	if c.head < len(c.ring) {
		return c.ring[c.head]
	}
	return nil
}

// unlink takes e out of the ring and the counts; c.mu must be held.
func (c *Cache[G, K, V]) unlink(e *entry[G, K, V]) {
	c.unring(e)
	c.length--
	c.bytes -= int64(e.size)
	// A ring that removals left mostly holes is copied to a smaller one,
	// so that a cache that shrank does not keep the memory of its largest
	// size: at most four slots an entry, and five quarters after a copy.
	if cap(c.ring) > 4*minRing && c.length < cap(c.ring)/4 {
		c.compact(c.length)
	}
}

// minRing is the capacity of the smallest ring.
const minRing = 16

// push puts e at the new end of the ring. c.mu must be held.
func (c *Cache[G, K, V]) push(e *entry[G, K, V]) {
	if len(c.ring) == cap(c.ring) {
		c.compact(c.length + 1)
	}
	e.pos = uint32(len(c.ring))
	c.ring = append(c.ring, e)
}

// unring leaves a hole where e was in the ring, and moves the old end past
// the holes. c.mu must be held.
func (c *Cache[G, K, V]) unring(e *entry[G, K, V]) {
	c.ring[e.pos] = nil
	for c.head < len(c.ring) && c.ring[c.head] == nil {
		c.head++
	}
	if c.head == len(c.ring) {
		c.ring, c.head = c.ring[:0], 0
	}
}

// compact copies the ring's entries, in order, to a new ring with room for
// n entries and a quarter more, without holes. Each copy costs the entries
// and is paid for by the pushes or removals since the last one, a quarter
// of them at least, so that a push costs O(1) amortized. c.mu must be
// held.
func (c *Cache[G, K, V]) compact(n int) {
	ring := make([]*entry[G, K, V], 0, max(minRing, n+n/4))
	for _, e := range c.ring[c.head:] {
		if e != nil {
			e.pos = uint32(len(ring))
			ring = append(ring, e)
		}
	}
	c.ring, c.head = ring, 0
}

// Group is a handle on one group of a cache, for reading its entries
// without hashing the group value each time (a group value that holds a
// long token costs a hash of the token per lookup): the handle keeps the
// group's hash, and a hit through it hashes the key alone. A Group from
// [Cache.Pin] stays valid until Unpin, even while it has no entries; one
// from [Cache.Lookup] reads nothing once its group has been forgotten. A
// Group is safe for concurrent use.
type Group[G, K comparable, V any] struct {
	// id, seed and gen, which a lookup reads, come first, right after the
	// bytes of id's strings (see groupStore).
	id G
	// seed is the group's hash (groupHash), from which its keys' hashes
	// start.
	seed uint64
	// gen counts the group's removals; entries of an older generation are
	// dead, and Writers made before the last removal no longer write.
	gen atomic.Uint64
	c   *Cache[G, K, V]
	// one is the group's entry while it has exactly one of its current
	// generation (and has had no more since it last had none), which the
	// index does not hold then: a group of one, the commonest in a cache of
	// many tokens, costs no place in the index, and a hit on it no probe.
	// Written under c.mu; read by lookups without it (see Cache.find).
	one atomic.Pointer[entry[G, K, V]]
	// holds counts the pins and the open writers; under c.mu.
	holds int
}

// Pin returns a handle on group g that stays valid, and keeps g's
// bookkeeping, until Unpin is called: what a long-lived reader such as a
// client's own token holds.
func (c *Cache[G, K, V]) Pin(g G) *Group[G, K, V] {
	c.mu.Lock()
	defer c.mu.Unlock()
	grp := c.group(g)
	grp.holds++
	return grp
}

// Unpin releases a handle from Pin. Each Pin needs exactly one Unpin.
func (grp *Group[G, K, V]) Unpin() {
	c := grp.c
	c.mu.Lock()
	defer c.mu.Unlock()
	grp.holds--
	c.release(grp)
}

// Get returns the value the group holds under k, and true when it is
// present, live and unexpired by the clock, which it reads. A hit compares
// k with the key of the group's entry, for a group of one, or hashes k (not
// the group) and probes the cache's index once; it takes no lock and
// allocates nothing. A miss drops what it found expired and sweeps. Get
// keeps no reference to k, so a caller may look up a key whose bytes it
// reuses afterwards.
func (grp *Group[G, K, V]) Get(k K) (value V, ok bool) {
	c := grp.c
	e := grp.one.Load() // find, by hand, as in Cache.Get
	if e == nil {
		e = c.idx.get(keyHash(&c.keys, grp.seed, k), grp, k)
	} else if e.key != k {
		e = nil
	}
	if e != nil && c.serves(e, grp, c.clk.elapsed()) { // the clock, read for this lookup
		return e.value, true
	}
	c.miss(e)
	return value, false
}

// Peek is Get for reading again a value a Get already counted: it returns
// what Get would, reading the clock as Get does, but counts neither a hit
// nor a miss, marks nothing used and drops nothing. A caller that read a
// value, then waited, checks so that the cache still serves it.
func (grp *Group[G, K, V]) Peek(k K) (value V, ok bool) {
	c := grp.c
	e := grp.one.Load()
	if e == nil {
		e = c.idx.get(keyHash(&c.keys, grp.seed, k), grp, k)
	} else if e.key != k {
		e = nil
	}
	if e != nil && c.live(e, grp, c.clk.elapsed()) {
		return e.value, true
	}
	return value, false
}

// Holds reports whether the cache keeps group g: it has entries, or a pin
// or a writer holds it. A group it does not keep has no entries.
func (c *Cache[G, K, V]) Holds(g G) bool {
	return c.Lookup(g) != c.none
}

// ServeUntil makes Get serve nothing once the cache's clock, read on each
// lookup, reaches t (a time of the clock WithClock gave, or of time.Now);
// the entries are kept, and additions go on, for when a later call moves
// the horizon. The last call wins. Without it Get serves until entries
// expire. It costs a hit one atomic load: the clock is the one read for
// the entry's expiry.
func (c *Cache[G, K, V]) ServeUntil(t time.Time) {
	c.horizon.Store(int64(t.Sub(c.clk.epoch)))
}

// StopServing makes Get serve nothing until ServeUntil is called.
func (c *Cache[G, K, V]) StopServing() {
	c.horizon.Store(math.MinInt64)
}

// group returns g's handle, making it if needed. c.mu must be held.
func (c *Cache[G, K, V]) group(g G) *Group[G, K, V] {
	h := groupHash(&c.keys, g)
	grp := c.groups.get(h, g)
	if grp == nil {
		grp = c.groupStore.make(c, g, h)
		c.groups.put(grp)
		cost := c.groupStore.cost(&grp.id)
		c.bytes += cost
		c.idle += cost // no entry yet
	}
	return grp
}

// release forgets a group that has no entries, pins or writers, and
// uncounts it, when the table of groups still holds it: by its handle,
// which a Purge may have dropped already, never by a lookup of its value,
// which finds nothing for a value not equal to itself (a NaN). c.mu must
// be held.
func (c *Cache[G, K, V]) release(grp *Group[G, K, V]) {
	if grp.holds == 0 && grp.one.Load() == nil && c.sets[grp] == nil && c.groups.remove(grp) {
		cost := c.groupStore.cost(&grp.id)
		c.bytes -= cost
		c.idle -= cost
	}
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
	seq    uint64        // the order of its values (see order.go)
	closed bool
	// prev and next link the ring of the group's open writers, and marks
	// and drops are, on the oldest, what the group remembers of keys
	// written and dropped since (see order.go); under c.mu.
	prev, next *Writer[G, K, V]
	marks      *marks
	drops      []drop[K]
}

// Writer returns a writer for group g, made now: the time to live of what
// it adds counts from this call. Until it is closed, the cache keeps g's
// bookkeeping even when g has no entries.
func (c *Cache[G, K, V]) Writer(g G) *Writer[G, K, V] {
	made := c.clk.elapsed()
	c.mu.Lock()
	defer c.mu.Unlock()
	grp := c.group(g)
	grp.holds++
	c.seq++
	w := &Writer[G, K, V]{grp: grp, gen: grp.gen.Load(), made: made, seq: c.seq}
	c.open(grp, w)
	return w
}

// GroupValue returns the writer's group value as the cache keeps it: its
// strings are the cache's own copies (see Add), which a caller that must
// keep the value may hold instead of copying them again. Holding it keeps
// the group's allocation (its bookkeeping and those copies), no more,
// alive after the cache has let the group go.
func (w *Writer[G, K, V]) GroupValue() G { return w.grp.id }

// Add is Cache.Add for the writer's group, except that ttl counts from when
// the writer was made, not from this call, and that it stores nothing, and
// reports false, once the group has been removed since the writer was made,
// after Close, or when a value under k was asked for after the writer was
// made, whether it is held, was not kept (a ttl that is not positive) or
// has left the cache since: an older answer never replaces a newer one. A
// ttl that has run out already stores nothing and removes any earlier
// value, as a ttl that is not positive does.
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
	return c.add(w.grp, k, value, w.seq, now, expiry(w.made, ttl), size)
}

// Drop removes the values of the writer's group whose keys covers reports
// true of, and keeps every writer of the group made before this one from
// storing a value under such a key: what a request that asks about keys
// it does not name (pep's wildcards: every scope of a resource) does
// before it is sent, so that no older value its answer may no longer list
// is served after it, nor stored by an older request's answer, while the
// group's other keys, and the writers bringing them, are left alone.
// RemoveGroup does the same for every key (and for every later writer of
// the removed generation too). Drop does nothing after Close, or once the
// group has been removed since the writer was made.
//
// name names the keys covers covers: two Drops of one name must cover the
// same keys, so that a group remembers a name once however often it is
// dropped (a wildcard asked again and again while a slow request is
// open). covers is called under the cache's lock, once for each value of
// the group and for each key an older writer adds while it is open; it
// must not call the cache. Drop costs time in proportion to the group's
// values.
func (w *Writer[G, K, V]) Drop(name string, covers func(k K) bool) {
	if w.closed {
		return
	}
	c := w.grp.c
	c.mu.Lock()
	defer c.mu.Unlock()
	grp := w.grp
	if grp.gen.Load() != w.gen {
		return
	}
	var dead []*entry[G, K, V]
	if one := grp.one.Load(); one != nil {
		dead = append(dead, one)
	} else if set := c.sets[grp]; set != nil {
		dead = append(dead, set.es...) // remove changes the set
	}
	for _, e := range dead {
		if covers(e.key) {
			c.remove(e)
		}
	}
	c.dropped(grp, w.seq, name, covers)
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
	c.close(w.grp, w)
	w.grp.holds--
	c.release(w.grp)
}

// clock is a cache's time, read as the time since epoch, the cache's
// creation: expiry times are durations since the epoch.
//
// The clock is read whenever a time is needed, every hit included, and no
// reading is kept to stand in for a later one: a remembered "now" is as
// old as the longest stall between its reading and its use, and a process
// that is frozen (SIGSTOP, a frozen container) or starved stalls for
// as long as that lasts. With the real clock (now is nil) the time since
// the epoch reads only the monotonic clock (the runtime's nanotime, no wall
// clock), which keeps counting while the process is frozen and which
// changes of the wall clock do not move.
type clock struct {
	epoch time.Time
	// since reads the clock and returns the time since t: time.Since
	// itself for the real clock, so that elapsed, one call, is inlined
	// into a hit.
	since func(t time.Time) time.Duration
}

// init starts the clock: now reads the time, nil for the real clock.
func (k *clock) init(now func() time.Time) {
	if now == nil {
		k.epoch = time.Now() // with a monotonic reading, which Since uses
		k.since = time.Since // monotonic only
		return
	}
	k.epoch = now()
	k.since = func(t time.Time) time.Duration { return now().Sub(t) }
}

// elapsed returns the time since the epoch, read now.
func (k *clock) elapsed() time.Duration {
	return k.since(k.epoch)
}

// expiry returns when an entry stored for ttl from the time from expires:
// never (the largest duration) when that is past the largest duration,
// and at once (the smallest) when ttl is zero or negative.
func expiry(from, ttl time.Duration) time.Duration {
	switch {
	case ttl <= 0:
		return math.MinInt64
	case from > math.MaxInt64-ttl:
		return math.MaxInt64
	}
	return from + ttl
}
