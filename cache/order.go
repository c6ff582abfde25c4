package cache

// The order of answers. A Writer's values are kept in the order they were
// asked for, not the order they arrive in (see add). The order is a
// sequence number that Cache.Writer and Cache.Add take under the cache's
// lock, never a reading of the clock, which only says when values expire
// (an injected clock may step back). An entry records its value's number,
// and a value asked for earlier does not replace it. When a key's newest
// value leaves the cache, whether it was not kept (a ttl that is not
// positive) or was kept and then evicted, expired or removed, nothing is
// left to compare with, so the group remembers the key's number for as
// long as a writer made before it is open: those writers are the only
// ones that can still bring an older value. Nothing else is fenced: a
// value under one key never stops an older writer's value under another,
// unless a group has more than maxMarks such keys at once, when the
// oldest fall back to fencing every older writer of the group.

// maxMarks bounds what a group remembers of the keys whose newest value
// left (a mark is about 50 bytes, counted nowhere else: it lasts only
// while an older call is under way).
const maxMarks = 1024

// writerList is a group's open writers, in the order of their making.
type writerList[G, K comparable, V any] struct {
	first, last *Writer[G, K, V]
}

// open appends w, the newest writer; c.mu must be held.
func (l *writerList[G, K, V]) open(w *Writer[G, K, V]) {
	w.prev, w.next = l.last, nil
	if l.last == nil {
		l.first = w
	} else {
		l.last.next = w
	}
	l.last = w
}

// close takes w out of the list; c.mu must be held.
func (l *writerList[G, K, V]) close(w *Writer[G, K, V]) {
	if w.prev == nil {
		l.first = w.next
	} else {
		w.prev.next = w.next
	}
	if w.next == nil {
		l.last = w.prev
	} else {
		w.next.prev = w.prev
	}
	w.prev, w.next = nil, nil
}

// forgets remembers, by the key's hash (a collision only refuses more),
// the number of the newest value of each key that left the group, while
// a writer made before it is open.
type forgets struct {
	newest map[uint64]uint64
	// marks lists the same in the order they were made, for pruning,
	// from start on.
	marks []forgetMark
	start int
	// fence is the newest number of the marks pushed out past maxMarks:
	// writers made before it store nothing.
	fence uint64
}

type forgetMark struct{ h, seq uint64 }

// forgot notes that the value asked for as the seq-th under the key of
// hash h left the group, when a writer made before it is open; c.mu must
// be held.
func (grp *Group[G, K, V]) forgot(h, seq uint64) {
	if grp.writers.first == nil || grp.writers.first.seq >= seq {
		return // no open writer can bring a value older than it
	}
	f := grp.forgets
	if f == nil {
		f = &forgets{newest: make(map[uint64]uint64)}
		grp.forgets = f
	}
	if seq > f.newest[h] {
		f.newest[h] = seq
	}
	f.marks = append(f.marks, forgetMark{h, seq})
	if len(f.marks)-f.start > maxMarks {
		f.fence = max(f.fence, f.pop().seq)
	}
}

// superseded reports whether a value under the key of hash h asked for as
// the seq-th is older than a value of that key which left the group; c.mu
// must be held.
func (grp *Group[G, K, V]) superseded(h, seq uint64) bool {
	f := grp.forgets
	return f != nil && (seq < f.fence || seq < f.newest[h])
}

// prune drops what no open writer is older than; c.mu must be held.
func (grp *Group[G, K, V]) prune() {
	f := grp.forgets
	if f == nil {
		return
	}
	if grp.writers.first == nil {
		grp.forgets = nil
		return
	}
	oldest := grp.writers.first.seq
	for f.start < len(f.marks) && f.marks[f.start].seq <= oldest {
		f.pop()
	}
}

// pop drops the oldest mark and returns it.
func (f *forgets) pop() forgetMark {
	m := f.marks[f.start]
	if f.newest[m.h] == m.seq {
		delete(f.newest, m.h)
	}
	f.start++
	if f.start > len(f.marks)/2 { // keep the slice's dead front small
		f.marks = append(f.marks[:0], f.marks[f.start:]...)
		f.start = 0
	}
	return m
}
