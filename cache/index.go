package cache

import (
	"sync/atomic"
	"unsafe"
)

// index holds one group's entries by key. Readers take no lock: they load
// the current table and probe it with atomic loads, so a hit writes no
// shared word. Writers hold the cache's mu, so there is one at a time; they
// change a slot with atomic stores and, when a table fills up with entries
// or with the marks of removed ones, publish a new table. A table is
// open-addressed with linear probing and at most half of its slots used,
// so a probe ends at an empty slot; writers never empty a used slot of a
// published table (a removed entry leaves a tombstone), so a reader that
// probes an old table finds every entry that was in it when it loaded it,
// or a later one stored under the same key.
//
// Each slot keeps its entry's whole hash beside the pointer, so that a
// probe dereferences only the entry whose hash is the key's: the slots it
// passes on the way cost no memory access beyond their own cache line, and
// an entry far away in memory is read once, for the hit itself. The hash
// only filters: the key is always compared whole, so that two keys with
// one hash are never taken for each other.
type index[G, K comparable, V any] struct {
	tab atomic.Pointer[table[G, K, V]]
	k   *keying[G, K, V]
	// live counts entries and used the slots that are not empty (entries
	// and tombstones) of the current table; writers only.
	live, used int
	// first is the index's first table, with its slots, in the index
	// itself: a group of one entry, the commonest in a cache of many
	// tokens, costs no allocation and no memory access beyond its group.
	// Once replaced it is never written again (see reset).
	first      table[G, K, V]
	firstSlots [minSlots]slot[G, K, V]
}

// keying is what a cache's indexes share: the hasher of keys, and the
// tombstone, which marks a removed entry's slot.
type keying[G, K comparable, V any] struct {
	hash hasher
	tomb *entry[G, K, V]
}

// table is one generation of an index's slots.
type table[G, K comparable, V any] struct {
	mask  uint64
	slots []slot[G, K, V]
}

// slot is one place of a table: empty while e is nil. A writer stores the
// hash before the entry, so that a reader that loads an entry loads its
// hash, or, while the slot changes from a tombstone to a new entry, the
// old one's, which only makes it compare a key it need not have.
type slot[G, K comparable, V any] struct {
	hash atomic.Uint64
	e    atomic.Pointer[entry[G, K, V]]
}

// store puts e, whose key hashes to h, in s.
func (s *slot[G, K, V]) store(h uint64, e *entry[G, K, V]) {
	s.hash.Store(h)
	s.e.Store(e)
}

// minSlots is the size of a group's first table: room for one entry, the
// size of most groups of a cache of many tokens.
const minSlots = 2

// slotBytes is what a slot takes.
const slotBytes = int64(unsafe.Sizeof(slot[int, int, int]{}))

// indexEntryCost estimates what an index costs for each entry beyond the
// first table, which is part of the index: the slots of a table between a
// quarter and a half full (three slots on average).
const (
	slotsPerEntry  = 3
	indexEntryCost = slotsPerEntry * slotBytes
)

// init gives x its keying and its first, empty, table: the one in x.
func (x *index[G, K, V]) init(k *keying[G, K, V]) {
	x.k = k
	x.first = table[G, K, V]{mask: minSlots - 1, slots: x.firstSlots[:]}
	x.tab.Store(&x.first)
	x.live, x.used = 0, 0
}

// reset gives x a new empty table, never the first one again, which
// readers and the caller may still be reading; writers only.
func (x *index[G, K, V]) reset() {
	x.tab.Store(newTable[G, K, V](minSlots))
	x.live, x.used = 0, 0
}

func newTable[G, K comparable, V any](n int) *table[G, K, V] {
	return &table[G, K, V]{mask: uint64(n - 1), slots: make([]slot[G, K, V], n)}
}

// get returns the entry stored under k, or nil. It takes no lock.
func (x *index[G, K, V]) get(k K) *entry[G, K, V] {
	t := x.tab.Load()
	h := hash(&x.k.hash, k)
	for i := h; ; i++ {
		s := &t.slots[i&t.mask]
		e := s.e.Load()
		if e == nil {
			return nil
		}
		if s.hash.Load() == h && e != x.k.tomb && e.key == k {
			return e
		}
	}
}

// len returns the number of entries; writers only.
func (x *index[G, K, V]) len() int { return x.live }

// put stores e under its key and returns the entry it replaces, or nil;
// writers only.
func (x *index[G, K, V]) put(e *entry[G, K, V]) (old *entry[G, K, V]) {
	t := x.tab.Load()
	h := hash(&x.k.hash, e.key)
	free := -1 // the first tombstone on the way, reused for a new key
	for i := h; ; i++ {
		s := &t.slots[i&t.mask]
		switch o := s.e.Load(); {
		case o == nil:
			if free >= 0 {
				t.slots[free].store(h, e)
			} else if x.used+1 > len(t.slots)/2 {
				x.rehash(x.live + 1)
				x.tab.Load().insert(h, e)
				x.used++
			} else {
				x.used++
				s.store(h, e)
			}
			x.live++
			return nil
		case o == x.k.tomb:
			if free < 0 {
				free = int(i & t.mask)
			}
		case s.hash.Load() == h && o.key == e.key:
			s.e.Store(e)
			return o
		}
	}
}

// remove removes e, when it is the entry stored under its key, and
// reports whether it was; writers only.
func (x *index[G, K, V]) remove(e *entry[G, K, V]) bool {
	t := x.tab.Load()
	h := hash(&x.k.hash, e.key)
	for i := h; ; i++ {
		s := &t.slots[i&t.mask]
		switch o := s.e.Load(); {
		case o == nil:
			return false
		case o == e:
			s.e.Store(x.k.tomb)
			x.live--
			// A table that removals left mostly empty is replaced by a
			// smaller one, so that a group that shrank does not keep the
			// memory of its largest size.
			if len(t.slots) > minSlots && x.live < len(t.slots)/8 {
				x.rehash(x.live)
			}
			return true
		case o != x.k.tomb && s.hash.Load() == h && o.key == e.key:
			return false // e was replaced
		}
	}
}

// rehash publishes a new table for n entries that holds the current
// entries and no tombstones, once it holds them all; writers only.
func (x *index[G, K, V]) rehash(n int) {
	old := x.tab.Load()
	size := minSlots
	for size/2 < n {
		size *= 2
	}
	t := newTable[G, K, V](size)
	x.used = 0
	for i := range old.slots {
		s := &old.slots[i]
		if e := s.e.Load(); e != nil && e != x.k.tomb {
			t.insert(s.hash.Load(), e)
			x.used++
		}
	}
	x.tab.Store(t)
}

// insert stores e, whose key hashes to h and which t does not hold, in an
// empty slot of t, which has room.
func (t *table[G, K, V]) insert(h uint64, e *entry[G, K, V]) {
	for i := h; ; i++ {
		if s := &t.slots[i&t.mask]; s.e.Load() == nil {
			s.store(h, e)
			return
		}
	}
}

// all calls f for each entry; writers only.
func (x *index[G, K, V]) all(f func(*entry[G, K, V])) {
	t := x.tab.Load()
	for i := range t.slots {
		if e := t.slots[i].e.Load(); e != nil && e != x.k.tomb {
			f(e)
		}
	}
}
