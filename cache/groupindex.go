package cache

import (
	"sync/atomic"
	"unsafe"
)

// groupIndex holds a cache's groups by their value, for Lookup, Holds and
// writers (hits do not read it: they find entries in the cache's index). It
// is built as index is: readers take no lock, writers hold the cache's mu,
// a table is open-addressed with linear probing and at most half of its
// slots used, and a removed group leaves a tombstone. A slot is the group's
// pointer alone: the group keeps its hash (seed), which a probe compares
// before the group's value and a rehash reads.
type groupIndex[G, K comparable, V any] struct {
	tab atomic.Pointer[groupTable[G, K, V]]
	// tomb marks a removed group's slot; no group hashes to its seed
	// without its value being compared too.
	tomb *Group[G, K, V]
	// live counts groups and used the slots that are not empty (groups
	// and tombstones) of the current table; writers only.
	live, used int
}

type groupTable[G, K comparable, V any] struct {
	mask  uint64
	slots []atomic.Pointer[Group[G, K, V]]
}

// groupSlotBytes is what a slot of a groupTable takes.
const groupSlotBytes = int64(unsafe.Sizeof(atomic.Pointer[int]{}))

// groupIndexCost estimates what the index of groups costs for each group:
// the slots of a table between a quarter and a half full.
const groupIndexCost = slotsPerEntry * groupSlotBytes

func (x *groupIndex[G, K, V]) init() {
	x.tomb = new(Group[G, K, V])
	x.reset()
}

// reset gives x a new empty table; writers only.
func (x *groupIndex[G, K, V]) reset() {
	x.tab.Store(newGroupTable[G, K, V](minSlots))
	x.live, x.used = 0, 0
}

func newGroupTable[G, K comparable, V any](n int) *groupTable[G, K, V] {
	return &groupTable[G, K, V]{mask: uint64(n - 1), slots: make([]atomic.Pointer[Group[G, K, V]], n)}
}

// get returns the group whose value is g and whose hash is h, or nil. It
// takes no lock.
func (x *groupIndex[G, K, V]) get(h uint64, g G) *Group[G, K, V] {
	t := x.tab.Load()
	for i := h; ; i++ {
		grp := t.slots[i&t.mask].Load()
		if grp == nil {
			return nil
		}
		if grp.seed == h && grp != x.tomb && grp.id == g {
			return grp
		}
	}
}

// put stores grp, which x does not hold; writers only.
func (x *groupIndex[G, K, V]) put(grp *Group[G, K, V]) {
	t := x.tab.Load()
	for i := grp.seed; ; i++ {
		s := &t.slots[i&t.mask]
		switch o := s.Load(); o {
		case nil:
			if x.used+1 > len(t.slots)/2 {
				x.rehash(x.live + 1)
				x.tab.Load().insert(grp)
			} else {
				s.Store(grp)
			}
			x.used++
			x.live++
			return
		case x.tomb:
			s.Store(grp)
			x.live++
			return
		}
	}
}

// remove removes grp, which x holds; writers only.
func (x *groupIndex[G, K, V]) remove(grp *Group[G, K, V]) {
	t := x.tab.Load()
	for i := grp.seed; ; i++ {
		s := &t.slots[i&t.mask]
		switch s.Load() {
		case nil:
			return
		case grp:
			s.Store(x.tomb)
			x.live--
			if len(t.slots) > minSlots && x.live < len(t.slots)/8 {
				x.rehash(x.live)
			}
			return
		}
	}
}

// rehash publishes a new table for n groups that holds the current groups
// and no tombstones, once it holds them all; writers only.
func (x *groupIndex[G, K, V]) rehash(n int) {
	x.retain(n, func(*Group[G, K, V]) bool { return true })
}

// retain publishes a new table for n groups that holds the current groups
// for which keep returns true, once it holds them all, and no tombstones;
// writers only. A reader finds every group kept, in the old table or the
// new one.
func (x *groupIndex[G, K, V]) retain(n int, keep func(*Group[G, K, V]) bool) {
	old := x.tab.Load()
	var kept []*Group[G, K, V]
	for i := range old.slots {
		if grp := old.slots[i].Load(); grp != nil && grp != x.tomb && keep(grp) {
			kept = append(kept, grp)
		}
	}
	t := newGroupTable[G, K, V](tableSize(max(n, len(kept))))
	for _, grp := range kept {
		t.insert(grp)
	}
	x.live, x.used = len(kept), len(kept)
	x.tab.Store(t)
}

// insert stores grp, which t does not hold, in an empty slot of t, which
// has room.
func (t *groupTable[G, K, V]) insert(grp *Group[G, K, V]) {
	for i := grp.seed; ; i++ {
		if s := &t.slots[i&t.mask]; s.Load() == nil {
			s.Store(grp)
			return
		}
	}
}
