package cache

import (
	"sync/atomic"
	"unsafe"
)

// index holds the entries of a cache's groups of two or more by their
// (group, key) pair: one table for the whole cache, so that a hit probes
// one table once, whichever group it reads. A group of one entry, the
// commonest in a cache of many tokens, keeps it in the group (Group.one)
// and takes no slot here. Readers take no lock: they load
// the current table and probe it with atomic loads, so a hit writes no
// shared word. Writers hold the cache's mu, so there is one at a time; they
// change a slot with atomic stores and, when a table fills up with entries
// or with the marks of removed ones, publish a new table. A table is
// open-addressed with linear probing and at most seven eighths of its
// slots used (see tableSize), so a probe ends at an empty slot; writers never empty a used slot of a
// published table (a removed entry leaves a tombstone), so a reader that
// probes an old table finds every entry that was in it when it loaded it,
// or a later one stored under the same pair.
//
// Each slot keeps its entry's whole hash (keyHash) beside the pointer, so
// that a probe dereferences only the entry whose hash is the pair's: the
// slots it passes on the way cost no memory access beyond their own cache
// line. The hash only filters: the entry's group (the handle, by pointer:
// a lookup by the group's value finds the handle first, in the cache's
// groupIndex) and key are always compared whole, so that two pairs with
// one hash, of one group or of two, are never taken for each other.
type index[G, K comparable, V any] struct {
	tab atomic.Pointer[table[G, K, V]]
	// tomb marks a removed entry's slot; its grp is nil.
	tomb *entry[G, K, V]
	// live counts entries and used the slots that are not empty (entries
	// and tombstones) of the current table; writers only.
	live, used int
}

// table is one generation of an index's slots.
type table[G, K comparable, V any] struct {
	mask  uint64
	slots []slot[G, K, V]
}

// slot is one place of a table: empty while e is nil. A writer stores the
// hash before the entry, so that a reader that loads an entry loads its
// hash, or, while the slot changes from a tombstone to a new entry, the
// old one's, which only makes it compare a pair it need not have.
type slot[G, K comparable, V any] struct {
	hash atomic.Uint64
	e    atomic.Pointer[entry[G, K, V]]
}

// store puts e, whose pair hashes to h, in s.
func (s *slot[G, K, V]) store(h uint64, e *entry[G, K, V]) {
	s.hash.Store(h)
	s.e.Store(e)
}

// minSlots is the size of an empty index's table.
const minSlots = 16

// slotBytes is what a slot takes.
const slotBytes = int64(unsafe.Sizeof(slot[int, int, int]{}))

// indexEntryCost estimates what the index costs for each entry it holds:
// three slots. A table between seven sixteenths and seven eighths full
// takes from one and a seventh to two and two sevenths slots an entry, and
// one that removals emptied towards its shrink (an eighth full) up to
// eight; like entryShare, this is the average of a cache that keeps its
// size, with room to spare.
const (
	slotsPerEntry  = 3
	indexEntryCost = slotsPerEntry * slotBytes
)

// entryShare is what an entry counts for its places in the cache's
// structures beside its own allocation: a slot of the recency ring (8
// bytes, the ring five quarters of its entries after a copy, and copied
// smaller when removals leave it more than four times; see Cache.compact
// and Cache.unlink), and, for an entry of a group of two or more, the
// index's slots and a slot of the group's members (a set of up to twice
// its members; see Cache.leave). Like the index's share, these are
// averages of a cache that keeps its size. An entry of a
// group of one takes no place in the index or a member set; it counts
// them all the same, so that every entry of a cache counts the same
// bookkeeping, whatever its group becomes: what Bytes counts stays at or
// above what the cache holds.
const entryShare = 10 + indexEntryCost + 2*8

// init gives x its first, empty, table.
func (x *index[G, K, V]) init() {
	x.tomb = new(entry[G, K, V])
	x.reset()
}

// reset gives x a new empty table, which readers may still be reading;
// writers only.
func (x *index[G, K, V]) reset() {
	x.tab.Store(newTable[G, K, V](minSlots))
	x.live, x.used = 0, 0
}

func newTable[G, K comparable, V any](n int) *table[G, K, V] {
	return &table[G, K, V]{mask: uint64(n - 1), slots: make([]slot[G, K, V], n)}
}

// get returns the entry of group grp stored under k, which hashes to h in
// grp (keyHash of grp.seed), or nil: the entry may be of an older
// generation of grp. It takes no lock.
func (x *index[G, K, V]) get(h uint64, grp *Group[G, K, V], k K) *entry[G, K, V] {
	t := x.tab.Load()
	for i := h; ; i++ {
		s := &t.slots[i&t.mask]
		e := s.e.Load()
		if e == nil {
			return nil
		}
		// A tombstone's grp is nil, never grp.
		if s.hash.Load() == h && e.grp == grp && e.key == k {
			return e
		}
	}
}

// len returns the number of entries; writers only.
func (x *index[G, K, V]) len() int { return x.live }

// put stores e, whose pair hashes to h, and returns the entry of the same
// group handle and key it replaces, or nil; writers only.
func (x *index[G, K, V]) put(h uint64, e *entry[G, K, V]) (old *entry[G, K, V]) {
	t := x.tab.Load()
	free := -1 // the first tombstone on the way, reused for a new pair
	for i := h; ; i++ {
		s := &t.slots[i&t.mask]
		switch o := s.e.Load(); {
		case o == nil:
			if free >= 0 {
				t.slots[free].store(h, e)
			} else if full(x.used+1, len(t.slots)) {
				x.rehash(x.live + 1)
				x.tab.Load().insert(h, e)
				x.used++
			} else {
				x.used++
				s.store(h, e)
			}
			x.live++
			return nil
		case o == x.tomb:
			if free < 0 {
				free = int(i & t.mask)
			}
		case s.hash.Load() == h && o.grp == e.grp && o.key == e.key:
			s.e.Store(e)
			return o
		}
	}
}

// remove removes e, whose pair hashes to h, when it is the entry stored
// under its pair, and reports whether it was; writers only.
func (x *index[G, K, V]) remove(h uint64, e *entry[G, K, V]) bool {
	t := x.tab.Load()
	for i := h; ; i++ {
		s := &t.slots[i&t.mask]
		switch o := s.e.Load(); {
		case o == nil:
			return false
		case o == e:
			s.e.Store(x.tomb)
			x.live--
			// A table that removals left mostly empty is replaced by a
			// smaller one, so that a cache that shrank does not keep the
			// memory of its largest size.
			if len(t.slots) > minSlots && x.live < len(t.slots)/8 {
				x.rehash(x.live)
			}
			return true
		}
	}
}

// rehash publishes a new table for n entries that holds the current
// entries and no tombstones, once it holds them all; writers only.
func (x *index[G, K, V]) rehash(n int) {
	old := x.tab.Load()
	t := newTable[G, K, V](tableSize(n))
	x.used = 0
	for i := range old.slots {
		s := &old.slots[i]
		if e := s.e.Load(); e != nil && e != x.tomb {
			t.insert(s.hash.Load(), e)
			x.used++
		}
	}
	x.tab.Store(t)
}

// full reports whether a table of size slots with used of them not empty
// (entries or tombstones) is past the fill a table is rebuilt at: seven
// eighths, for the index and the group index alike.
func full(used, size int) bool { return used > size*7/8 }

// tableSize returns the number of slots of a table rebuilt for n entries
// (or groups): the smallest power of two, at least minSlots, that n fills
// to at most thirteen sixteenths. A table is rebuilt when its used slots
// would pass seven eighths (full), so a rebuilt table takes a sixteenth
// of its slots' worth of new pairs (or a halving of its live ones) before
// the next rebuild: each rebuild, which costs the table's size, is paid
// for by as many operations in proportion, however entries come and go.
// (Sized to the fill it is rebuilt at, a cache holding that many entries
// rebuilt its whole index on every Add: the eviction each Add makes leaves
// a tombstone, and the next Add found the table full again.)
//
// The fill is high, as Go's own maps' is, because what a hit costs at
// 100,000 entries and more is the memory it reaches, not the slots it
// passes: a probe passes about four slots of a table seven eighths full,
// in one or two cache lines, and dereferences only the entry whose hash
// is the pair's (the group index: whose tag is the group's), while a
// table filled to half or less was up to four times as large, and as
// many more of its lines and pages missed the CPU's caches and its
// translation buffer (issue 26: a hit at 100,000 entries of one token
// went from about 330 to 230 ns when its table went from 4 to 2 MiB).
func tableSize(n int) int {
	size := minSlots
	for size*13/16 < n {
		size *= 2
	}
	return size
}

// insert stores e, whose pair hashes to h and which t does not hold, in an
// empty slot of t, which has room.
func (t *table[G, K, V]) insert(h uint64, e *entry[G, K, V]) {
	for i := h; ; i++ {
		if s := &t.slots[i&t.mask]; s.e.Load() == nil {
			s.store(h, e)
			return
		}
	}
}

// groupIndex holds a cache's groups by their value, for Get by value,
// Lookup, Holds and writers (hits through a Group handle do not read it).
// It is built as index is: readers take no lock, writers hold the cache's mu,
// a table is open-addressed with linear probing, and a removed group leaves
// a tombstone, and a table is filled up to seven eighths (see tableSize):
// in a cache of many tokens it has a slot for every entry. A slot is the group's pointer and, in a word of eight, a
// tag byte of the group's hash (seed): a probe reads the tags, and loads
// the pointer and the group only of a slot whose tag is the one it looks
// for (one in 128 of the others), so that the slots it passes on the way
// cost no memory access beyond the tags' cache line. The group keeps its
// whole hash, which a probe compares next, before the group's value, and a
// rehash reads.
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
	// tags holds the tag of slot i (groupTag of its group's seed,
	// emptyTag or tombTag) in byte i%8 of tags[i/8]. A writer stores a
	// slot's group before its tag, so that a reader that loads a group's
	// tag and then the slot's pointer loads that group or a later
	// pointer: the tombstone, or a group put in its place after it was
	// removed meanwhile, which the reader compares whole.
	tags []atomic.Uint64
}

// The tags of an empty slot and of a tombstone; a group's has its high bit
// set.
const (
	emptyTag = 0
	tombTag  = 1
)

// groupTag returns the tag of a group whose hash is h: its top seven bits
// and a high bit that neither an empty slot's tag nor a tombstone's has.
func groupTag(h uint64) uint8 { return uint8(h>>57) | 0x80 }

// tag returns slot i's tag.
func (t *groupTable[G, K, V]) tag(i uint64) uint8 {
	return uint8(t.tags[i/8].Load() >> (i % 8 * 8))
}

// setTag makes slot i's tag b; writers only.
func (t *groupTable[G, K, V]) setTag(i uint64, b uint8) {
	w := &t.tags[i/8]
	sh := i % 8 * 8
	w.Store(w.Load()&^(0xff<<sh) | uint64(b)<<sh)
}

// store puts grp in slot i, then its tag.
func (t *groupTable[G, K, V]) store(i uint64, grp *Group[G, K, V]) {
	t.slots[i].Store(grp)
	t.setTag(i, groupTag(grp.seed))
}

// groupSlotBytes is what a slot of a groupTable takes: a pointer and a tag.
const groupSlotBytes = int64(unsafe.Sizeof(atomic.Pointer[int]{})) + 1

// groupIndexCost estimates what the index of groups costs for each group:
// the slots of a table between seven sixteenths and seven eighths full,
// counted as the index's are, three slots a group.
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
	return &groupTable[G, K, V]{
		mask:  uint64(n - 1),
		slots: make([]atomic.Pointer[Group[G, K, V]], n),
		tags:  make([]atomic.Uint64, n/8), // n is a power of two, at least minSlots
	}
}

// get returns the group whose value is g and whose hash is h, or nil. It
// takes no lock.
func (x *groupIndex[G, K, V]) get(h uint64, g G) *Group[G, K, V] {
	t := x.tab.Load()
	tag := groupTag(h)
	for i := h; ; i++ {
		switch t.tag(i & t.mask) {
		case emptyTag:
			return nil
		case tag:
			// Never nil: the slot's group was stored before its tag.
			if grp := t.slots[i&t.mask].Load(); grp.seed == h && grp != x.tomb && grp.id == g {
				return grp
			}
		}
	}
}

// put stores grp, which x does not hold; writers only.
func (x *groupIndex[G, K, V]) put(grp *Group[G, K, V]) {
	t := x.tab.Load()
	for i := grp.seed; ; i++ {
		switch o := t.slots[i&t.mask].Load(); o {
		case nil:
			if full(x.used+1, len(t.slots)) {
				x.rehash(x.live + 1)
				x.tab.Load().insert(grp)
			} else {
				t.store(i&t.mask, grp)
			}
			x.used++
			x.live++
			return
		case x.tomb:
			t.store(i&t.mask, grp)
			x.live++
			return
		}
	}
}

// remove removes grp, found by its pointer (never by its value, which
// may not equal itself: a NaN), and reports whether x held it; writers
// only.
func (x *groupIndex[G, K, V]) remove(grp *Group[G, K, V]) bool {
	t := x.tab.Load()
	for i := grp.seed; ; i++ {
		s := &t.slots[i&t.mask]
		switch s.Load() {
		case nil:
			return false
		case grp:
			s.Store(x.tomb)
			t.setTag(i&t.mask, tombTag)
			x.live--
			if len(t.slots) > minSlots && x.live < len(t.slots)/8 {
				x.rehash(x.live)
			}
			return true
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
		if t.slots[i&t.mask].Load() == nil {
			t.store(i&t.mask, grp)
			return
		}
	}
}
