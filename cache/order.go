package cache

// The order of answers. A Writer's values are kept in the order they were
// asked for, not the order they arrive in (see add). The order is a
// sequence number that Cache.Writer and Cache.Add take under the cache's
// lock, never a reading of the clock, which only says when values expire
// (an injected clock may step back). When a value is written under a key,
// kept or not (a ttl that is not positive), while a writer made before it
// is open, the group remembers the key's number for as long as such a
// writer is open: those writers are the only ones that can still bring an
// older value, and it is refused, whether the newer value is still held,
// was not kept, or has been evicted, has expired or was removed since.
// Entries and groups need no field for it: the cache maps a group with
// open writers to its oldest, which carries the marks. Nothing else is
// fenced: a value under one key never stops an older writer's value under
// another, unless a group has more than maxMarks marks at once, when the
// oldest fall back to fencing every writer older than them (only slow
// calls lose their caching then). A Writer's Drop is remembered the same
// way, as the keys it covers and its number (drop), once for each name
// (the newest number): an older writer's value under a key it covers is
// refused, and past maxDrops names at once the oldest fall back to
// fencing every older writer.

// maxMarks bounds what a group remembers of the keys written while an
// older writer is open (a mark is about 50 bytes, counted nowhere else: it
// lasts only while an older call is under way).
const maxMarks = 1024

// marks remembers, by the key's hash (a collision only refuses more), the
// number of the newest value written under each key while a writer made
// before it is open.
type marks struct {
	newest map[uint64]uint64
	// list holds the same in the order they were made, for pruning, from
	// start on.
	list  []mark
	start int
	// fence is the newest number of the marks pushed out past maxMarks:
	// writers made before it store nothing.
	fence uint64
}

type mark struct{ h, seq uint64 }

// maxDrops bounds the names of drops a group remembers while an older
// writer is open (each keeps its covers function alive), as maxMarks
// bounds the keys written.
const maxDrops = 1024

// drop is a Writer's Drop: the keys it covered, by name, and the number
// of the newest writer that dropped them, before which no writer stores a
// value under them.
type drop[K comparable] struct {
	seq    uint64
	name   string
	covers func(K) bool
}

// open adds w, the newest writer, to grp's ring; c.mu must be held.
func (c *Cache[G, K, V]) open(grp *Group[G, K, V], w *Writer[G, K, V]) {
	first := c.writing[grp]
	if first == nil {
		if c.writing == nil {
			c.writing = make(map[*Group[G, K, V]]*Writer[G, K, V])
		}
		w.prev, w.next, c.writing[grp] = w, w, w
		return
	}
	w.prev, w.next = first.prev, first
	first.prev.next, first.prev = w, w
}

// close takes w out of the ring; the marks move to the next oldest writer,
// without those no open writer is older than. c.mu must be held.
func (c *Cache[G, K, V]) close(grp *Group[G, K, V], w *Writer[G, K, V]) {
	m := w.marks
	switch {
	case w.next == w:
		delete(c.writing, grp)
	case c.writing[grp] == w:
		c.writing[grp] = w.next
		w.next.marks = m
		m.prune(w.next.seq)
		// The drops no writer as old as the next one needs go.
		kept := w.drops[:0]
		for _, d := range w.drops {
			if d.seq > w.next.seq {
				kept = append(kept, d)
			}
		}
		w.next.drops = kept
	}
	w.prev.next, w.next.prev = w.next, w.prev
	w.prev, w.next, w.marks, w.drops = nil, nil, nil, nil
}

// dropped notes that the writer numbered seq dropped the keys covers
// reports true of, named name, when a writer made before it is open: a
// name remembered already takes the newer number (the same keys, fenced
// for more writers); c.mu must be held.
func (c *Cache[G, K, V]) dropped(grp *Group[G, K, V], seq uint64, name string, covers func(K) bool) {
	first := c.writing[grp]
	if first == nil || first.seq >= seq {
		return // no open writer can bring a value older than it
	}
	for i := range first.drops {
		if d := &first.drops[i]; d.name == name {
			d.seq = max(d.seq, seq)
			return
		}
	}
	first.drops = append(first.drops, drop[K]{seq, name, covers})
	if len(first.drops) > maxDrops {
		if first.marks == nil {
			first.marks = &marks{newest: make(map[uint64]uint64)}
		}
		first.marks.fence = max(first.marks.fence, first.drops[0].seq)
		first.drops = append(first.drops[:0], first.drops[1:]...)
	}
}

// wrote notes that the value asked for as the seq-th was written under the
// key of hash h, kept or not, when a writer made before it is open; c.mu
// must be held.
func (c *Cache[G, K, V]) wrote(grp *Group[G, K, V], h, seq uint64) {
	first := c.writing[grp]
	if first == nil || first.seq >= seq {
		return // no open writer can bring a value older than it
	}
	m := first.marks
	if m == nil {
		m = &marks{newest: make(map[uint64]uint64)}
		first.marks = m
	}
	if seq > m.newest[h] {
		m.newest[h] = seq
	}
	m.list = append(m.list, mark{h, seq})
	if len(m.list)-m.start > maxMarks {
		m.fence = max(m.fence, m.pop().seq)
	}
}

// superseded reports whether a value under key k, of hash h, asked for as
// the seq-th is older than one written under that key, or a Drop covering
// it, while its writer was open; c.mu must be held.
func (c *Cache[G, K, V]) superseded(grp *Group[G, K, V], h uint64, k K, seq uint64) bool {
	first := c.writing[grp]
	if first == nil {
		return false
	}
	if m := first.marks; m != nil && (seq < m.fence || seq < m.newest[h]) {
		return true
	}
	for _, d := range first.drops {
		if seq < d.seq && d.covers(k) {
			return true
		}
	}
	return false
}

// prune drops the marks no writer as old as oldest needs; a nil m is
// fine.
func (m *marks) prune(oldest uint64) {
	for m != nil && m.start < len(m.list) && m.list[m.start].seq <= oldest {
		m.pop()
	}
}

// pop drops the oldest mark and returns it.
func (m *marks) pop() mark {
	k := m.list[m.start]
	if m.newest[k.h] == k.seq {
		delete(m.newest, k.h)
	}
	m.start++
	if m.start > len(m.list)/2 { // keep the slice's dead front small
		m.list = append(m.list[:0], m.list[m.start:]...)
		m.start = 0
	}
	return k
}
