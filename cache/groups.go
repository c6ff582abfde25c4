package cache

import (
	"math"
	"sync/atomic"
	"time"
)

// Group is a handle on one group of a cache, for reading its entries
// without hashing the group value each time (a group value that holds a
// long token costs a hash of the token per lookup): the handle keeps the
// group's hash, and a hit through it hashes the key alone. A Group from
// [Cache.Pin] stays valid until Unpin, even while it has no entries; one
// from [Cache.Lookup] reads nothing once its group has been forgotten. A
// Group is safe for concurrent use.
type Group[G, K comparable, V any] struct {
	c  *Cache[G, K, V]
	id G
	// seed is the group's hash (groupHash), from which its keys' hashes
	// start.
	seed uint64
	// gen counts the group's removals; entries of an older generation are
	// dead, and Writers made before the last removal no longer write.
	gen atomic.Uint64
	// head starts the list of the group's entries of the current
	// generation, linked by gprev and gnext, for RemoveGroup; under c.mu.
	head *entry[G, K, V]
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
// present, live and unexpired by the clock, which it reads. A hit hashes k
// (not the group), probes the cache's index once, takes no lock and
// allocates nothing; a miss drops what it found expired and sweeps. Get
// keeps no reference to k, so a caller may look up a key whose bytes it
// reuses afterwards.
func (grp *Group[G, K, V]) Get(k K) (value V, ok bool) {
	c := grp.c
	e := c.idx.get(keyHash(&c.keys, grp.seed, k), grp, k)
	if e != nil && c.serves(e) {
		return e.value, true
	}
	c.miss(e)
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
		grp = &Group[G, K, V]{c: c, id: g, seed: h}
		c.groups.put(grp)
		c.bytes += c.groupCost
	}
	return grp
}

// release forgets a group that has no entries, pins or writers. c.mu must
// be held.
func (c *Cache[G, K, V]) release(grp *Group[G, K, V]) {
	if grp.head == nil && grp.holds == 0 && c.groups.get(grp.seed, grp.id) == grp {
		c.groups.remove(grp)
		c.bytes -= c.groupCost
	}
}

// linkMember adds e, of the group's current generation, to its members;
// c.mu must be held.
func (grp *Group[G, K, V]) linkMember(e *entry[G, K, V]) {
	e.gprev, e.gnext = nil, grp.head
	if grp.head != nil {
		grp.head.gprev = e
	}
	grp.head = e
}

// unlinkMember takes e, of the group's current generation, out of its
// members; c.mu must be held.
func (grp *Group[G, K, V]) unlinkMember(e *entry[G, K, V]) {
	if e.gprev != nil {
		e.gprev.gnext = e.gnext
	} else {
		grp.head = e.gnext
	}
	if e.gnext != nil {
		e.gnext.gprev = e.gprev
	}
	e.gprev, e.gnext = nil, nil
}
