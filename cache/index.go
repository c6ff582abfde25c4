package cache

import (
	"sync/atomic"
	"unsafe"
)

// index holds one group's entries by key. Readers take no lock: they load
// the current table and probe it with atomic loads, so a hit writes no
// shared word. Writers hold the cache's mu, so there is one at a time; they
// change a slot with an atomic store and, when a table fills up with
// entries or with the marks of removed ones, publish a new table. A table
// is open-addressed with linear probing and at most half of its slots used,
// so a probe ends at an empty slot; writers never empty a used slot of a
// published table (a removed entry leaves a tombstone), so a reader that
// probes an old table finds every entry that was in it when it loaded it,
// or a later one stored under the same key.
type index[G, K comparable, V any] struct {
	tab atomic.Pointer[table[G, K, V]]
	// live counts entries and used the slots that are not empty (entries
	// and tombstones) of the current table; writers only.
	live, used int
}

// table is one generation of an index's slots.
type table[G, K comparable, V any] struct {
	h     *hasher
	mask  uint64
	tomb  *entry[G, K, V] // marks a removed entry's slot
	slots []atomic.Pointer[entry[G, K, V]]
}

// minSlots is the size of a group's first table.
const minSlots = 8

// slotBytes is what a slot takes.
const slotBytes = int64(unsafe.Sizeof(atomic.Pointer[byte]{}))

// tableBytes estimates what an index costs beside its entries: its first
// table, and for each entry, the slots of a table between a quarter and a
// half full (three slots on average).
const (
	tableBytes     = int64(unsafe.Sizeof(table[int, int, int]{})) + minSlots*slotBytes
	slotsPerEntry  = 3
	indexEntryCost = slotsPerEntry * slotBytes
)

// init gives x an empty table.
func (x *index[G, K, V]) init(h *hasher, tomb *entry[G, K, V]) {
	x.tab.Store(newTable(h, tomb, minSlots))
	x.live, x.used = 0, 0
}

func newTable[G, K comparable, V any](h *hasher, tomb *entry[G, K, V], n int) *table[G, K, V] {
	return &table[G, K, V]{h: h, mask: uint64(n - 1), tomb: tomb, slots: make([]atomic.Pointer[entry[G, K, V]], n)}
}

// get returns the entry stored under k, or nil. It takes no lock.
func (x *index[G, K, V]) get(k K) *entry[G, K, V] {
	t := x.tab.Load()
	for i := hash(t.h, k); ; i++ {
		e := t.slots[i&t.mask].Load()
		if e == nil {
			return nil
		}
		if e.key == k && e != t.tomb {
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
	free := -1 // the first tombstone on the way, reused for a new key
	for i := hash(t.h, e.key); ; i++ {
		s := &t.slots[i&t.mask]
		switch o := s.Load(); {
		case o == nil:
			if free >= 0 {
				t.slots[free].Store(e)
			} else if x.used+1 > len(t.slots)/2 {
				x.rehash(x.live + 1)
				x.tab.Load().insert(e)
				x.used++
			} else {
				x.used++
				s.Store(e)
			}
			x.live++
			return nil
		case o == t.tomb:
			if free < 0 {
				free = int(i & t.mask)
			}
		case o.key == e.key:
			s.Store(e)
			return o
		}
	}
}

// remove removes e, when it is the entry stored under its key, and
// reports whether it was; writers only.
func (x *index[G, K, V]) remove(e *entry[G, K, V]) bool {
	t := x.tab.Load()
	for i := hash(t.h, e.key); ; i++ {
		s := &t.slots[i&t.mask]
		switch o := s.Load(); {
		case o == nil:
			return false
		case o == e:
			s.Store(t.tomb)
			x.live--
			// A table that removals left mostly empty is replaced by a
			// smaller one, so that a group that shrank does not keep the
			// memory of its largest size.
			if len(t.slots) > minSlots && x.live < len(t.slots)/8 {
				x.rehash(x.live)
			}
			return true
		case o != t.tomb && o.key == e.key:
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
	t := newTable(old.h, old.tomb, size)
	x.used = 0
	for i := range old.slots {
		if e := old.slots[i].Load(); e != nil && e != old.tomb {
			t.insert(e)
			x.used++
		}
	}
	x.tab.Store(t)
}

// insert stores e, whose key t does not hold, in an empty slot of t, which
// has room.
func (t *table[G, K, V]) insert(e *entry[G, K, V]) {
	for i := hash(t.h, e.key); ; i++ {
		if s := &t.slots[i&t.mask]; s.Load() == nil {
			s.Store(e)
			return
		}
	}
}

// all calls f for each entry; writers only.
func (x *index[G, K, V]) all(f func(*entry[G, K, V])) {
	t := x.tab.Load()
	for i := range t.slots {
		if e := t.slots[i].Load(); e != nil && e != t.tomb {
			f(e)
		}
	}
}
